"""Scoring the whole frontier at once, for strategies that need more than one row.

Strategies that read only a row's own columns (bfs, backlinks, url_importance, ...) are
scored per URL-seen bucket. The others see the whole new frontier here, gathered on one
worker: `needs_host_counts` strategies get each host's pending count, `needs_graph`
strategies the downloaded ∪ pending graph (all link deltas so far plus this round's).
This is the in-memory path (numpy, see strategies.graph); graphs larger than one worker's
memory need the Beam PageRank (transforms.pagerank).
"""
import apache_beam as beam
import numpy as np
import pyarrow as pa

from strategies.graph import CrawlGraph

CHUNK_ROWS = 100_000


def _score_all(frontier_parts, ordering, crawl_path, prev, round_edges, round_visited):
    from pipelines.crawldir import CrawlDir
    parts = [t for t in frontier_parts if t.num_rows]
    if not parts:
        return []
    frontier = pa.concat_tables(parts)
    graph = None
    if getattr(ordering, "needs_graph", False):
        crawl = CrawlDir(crawl_path)
        old_edges = crawl.read_table("links", prev, columns=["src_fp", "dst_fp"]) if prev is not None \
            else None
        old_visited = crawl.read_table("visited", prev, columns=["fp"]) if prev is not None else None
        src = [t.column("src_fp").to_numpy() for t in list(round_edges) + [old_edges] if t is not None]
        dst = [t.column("dst_fp").to_numpy() for t in list(round_edges) + [old_edges] if t is not None]
        down = [t.column("fp").to_numpy() for t in list(round_visited) + [old_visited] if t is not None]
        cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64)  # noqa: E731
        graph = CrawlGraph.from_edges(cat(src), cat(dst), cat(down),
                                      frontier.column("fp").to_numpy())
    scores = np.asarray(ordering.score(frontier, graph), dtype=np.float64)
    frontier = frontier.set_column(frontier.schema.get_field_index("score"), "score", pa.array(scores))
    return [frontier.slice(i, CHUNK_ROWS) for i in range(0, frontier.num_rows, CHUNK_ROWS)]


def score_globally(frontier, ordering, crawl, prev, edges, visited):
    """frontier tables -> the same rows, scored by `ordering` over the whole frontier."""
    return (frontier
            | "GatherFrontier" >> beam.combiners.ToList()
            | "ScoreWhole" >> beam.FlatMap(_score_all, ordering, crawl.path, prev,
                                           beam.pvalue.AsList(edges), beam.pvalue.AsList(visited)))
