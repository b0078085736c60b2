"""Scoring the whole frontier at once, for strategies that need more than one row.

Strategies that read only a row's own columns (bfs, backlinks, url_importance, ...) are
scored per URL-seen bucket. The others see the whole new frontier here, gathered on one
worker:
- `needs_host_counts` strategies get each host's pending count (from the frontier itself);
- `needs_graph` strategies get the downloaded ∪ pending graph (all link deltas so far plus
  this round's edges);
- `uses_opic` strategies get OPIC's cash and history: the previous round's `opic` table,
  updated with this round's fetches and their out-links (strategies.opic.opic_round), is
  written back as this round's `opic` table, and the frontier's cash/history columns are
  filled from it before scoring.
This is the in-memory path (numpy, see strategies.graph); graphs larger than one worker's
memory need the Beam PageRank (transforms/pagerank.py).
"""
import time

import apache_beam as beam
import numpy as np
import pyarrow as pa

from schemas import tables
from strategies.graph import CrawlGraph
from strategies.opic import opic_round

CHUNK_ROWS = 100_000


def _cat(arrays):
    return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)


def _column(parts, name):
    return _cat([t.column(name).to_numpy(zero_copy_only=False) for t in parts if t is not None and t.num_rows])


def update_opic(frontier, prev_opic, fetched_fp, src_fp, dst_fp):
    """(frontier with cash/history filled, new OPIC table) after one round's fetches.

    Pages: every page the previous state knew, plus this round's frontier and fetches.
    A crawl without OPIC state yet (round 0, or a strategy switch) starts with one unit of
    cash spread evenly over the pages it knows.
    """
    prev_fp = prev_opic.column("fp").to_numpy(zero_copy_only=False)
    is_virtual = prev_fp == tables.OPIC_VIRTUAL_FP
    vhist = float(prev_opic.column("history").to_numpy(zero_copy_only=False)[is_virtual].sum())
    known_fp = prev_fp[~is_virtual]
    page_fp = np.unique(_cat([known_fp, frontier.column("fp").to_numpy(zero_copy_only=False),
                              np.asarray(fetched_fp, np.int64)]))
    cash = np.zeros(len(page_fp))
    history = np.zeros(len(page_fp))
    if len(known_fp):
        pos = np.searchsorted(page_fp, known_fp)
        cash[pos] = prev_opic.column("cash").to_numpy(zero_copy_only=False)[~is_virtual]
        history[pos] = prev_opic.column("history").to_numpy(zero_copy_only=False)[~is_virtual]
    elif len(page_fp):
        cash[:] = 1.0 / len(page_fp)
    cash, history, vhist = opic_round(page_fp, cash, history, fetched_fp, src_fp, dst_fp,
                                      virtual_history=vhist)
    pos = np.searchsorted(page_fp, frontier.column("fp").to_numpy(zero_copy_only=False))
    frontier = frontier.set_column(frontier.schema.get_field_index("cash"), "cash", pa.array(cash[pos]))
    frontier = frontier.set_column(frontier.schema.get_field_index("history"), "history",
                                   pa.array(history[pos]))
    state = pa.Table.from_arrays(
        [pa.array(np.r_[tables.OPIC_VIRTUAL_FP, page_fp], pa.int64()), pa.array(np.r_[0.0, cash]),
         pa.array(np.r_[vhist, history])], schema=tables.OPIC)
    return frontier, state


class _ScoreWhole(beam.DoFn):
    def __init__(self, ordering, crawl_path, prev):
        self.ordering, self.crawl_path, self.prev = ordering, crawl_path, prev

    def _read(self, table, columns):
        from pipelines.crawldir import CrawlDir
        if self.prev is None:
            return tables.TABLES[table].empty_table().select(columns)
        return CrawlDir(self.crawl_path).read_table(table, self.prev, columns=columns)

    def process(self, frontier_parts, round_edges, round_visited):
        started = time.perf_counter()
        parts = [t for t in frontier_parts if t.num_rows]
        frontier = pa.concat_tables(parts) if parts else tables.FRONTIER.empty_table()
        fetched_fp = _column(round_visited, "fp")
        graph = None
        if self.ordering.uses_opic:
            frontier, state = update_opic(frontier, self._read("opic", ["fp", "cash", "history"]),
                                          fetched_fp, _column(round_edges, "src_fp"),
                                          _column(round_edges, "dst_fp"))
            yield beam.pvalue.TaggedOutput("opic", state)
        if self.ordering.needs_graph:
            old_edges = self._read("links", ["src_fp", "dst_fp"])
            old_visited = self._read("visited", ["fp"])
            graph = CrawlGraph.from_edges(
                _column(list(round_edges) + [old_edges], "src_fp"),
                _column(list(round_edges) + [old_edges], "dst_fp"),
                _cat([fetched_fp, old_visited.column("fp").to_numpy(zero_copy_only=False)]),
                frontier.column("fp").to_numpy(zero_copy_only=False))
        if frontier.num_rows == 0:
            return
        scores = np.asarray(self.ordering.score(frontier, graph), dtype=np.float64)
        frontier = frontier.set_column(frontier.schema.get_field_index("score"), "score", pa.array(scores))
        yield beam.pvalue.TaggedOutput("stats", {"seconds_score": time.perf_counter() - started})
        for i in range(0, frontier.num_rows, CHUNK_ROWS):
            yield frontier.slice(i, CHUNK_ROWS)


class ScoreWholeFrontier(beam.PTransform):
    """Frontier tables -> the same rows scored over the whole frontier; `opic` tables too."""

    def __init__(self, ordering, crawl, prev):
        super().__init__()
        self.fn = _ScoreWhole(ordering, crawl.path, prev)

    def expand(self, inputs):
        out = (inputs["frontier"]
               | "GatherFrontier" >> beam.combiners.ToList()
               | "ScoreWhole" >> beam.ParDo(self.fn, beam.pvalue.AsList(inputs["edges"]),
                                            beam.pvalue.AsList(inputs["visited"]))
               .with_outputs("opic", "stats", main="frontier"))
        return {"frontier": out.frontier, "opic": out.opic, "stats": out.stats}


def _ranks_by_bucket(table, buckets):
    from transforms.seen import split_by_bucket
    yield from split_by_bucket(table, buckets)


def _apply_ranks(element):
    _, g = element
    ranks = [t for t in g["ranks"] if t.num_rows]
    fp = np.concatenate([t.column("fp").to_numpy() for t in ranks]) if ranks else np.zeros(0, np.int64)
    rank = np.concatenate([t.column("rank").to_numpy() for t in ranks]) if ranks else np.zeros(0)
    order = np.argsort(fp)
    fp, rank = fp[order], rank[order]
    for f in g["frontier"]:
        if not f.num_rows:
            continue
        want = f.column("fp").to_numpy(zero_copy_only=False)
        pos = np.clip(np.searchsorted(fp, want), 0, max(len(fp) - 1, 0))
        score = np.where((len(fp) > 0) & (fp[pos] == want), rank[pos], 0.0) if len(fp) else np.zeros(len(want))
        yield f.set_column(f.schema.get_field_index("score"), "score", pa.array(score))


class ScoreByBeamPageRank(beam.PTransform):
    """Frontier tables scored with the PageRank of the downloaded ∪ pending graph, computed
    as a Beam job (transforms.pagerank) over all known links, so no worker holds the graph.

    Inputs: dict with `frontier` (tables), `edges` (LINKS-like tables: src_fp, dst_fp, all
    known links) and `nodes` (tables with an fp column: visited and pending pages).
    """

    def __init__(self, iterations, damping, buckets):
        super().__init__()
        self.iterations, self.damping, self.buckets = iterations, damping, buckets

    def expand(self, inputs):
        from transforms.pagerank import PageRank, RanksToTables
        nodes = inputs["nodes"] | "NodeFps" >> beam.Map(
            lambda t: t.column("fp").to_numpy(zero_copy_only=False))
        ranks = (inputs["edges"]
                 | "BeamPageRank" >> PageRank(self.iterations, self.buckets, self.damping, nodes=nodes)
                 | "RankTables" >> RanksToTables())
        b = self.buckets
        return ({"frontier": inputs["frontier"] | "BucketFrontierForRanks" >> beam.FlatMap(_ranks_by_bucket, b),
                 "ranks": ranks | "BucketRanks" >> beam.FlatMap(_ranks_by_bucket, b)}
                | "JoinRanks" >> beam.CoGroupByKey()
                | "ApplyRanks" >> beam.FlatMap(_apply_ranks))
