"""Scoring the frontier as Beam steps; see the package docstring."""

import time

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.pvalue import AsSingleton

from schemas import tables
from strategies.graph import CrawlGraph
from transforms.score import buffer
from transforms.score.opicstate import cat, column, update_opic
from transforms.score.pagerankblocks import (
    DAMPING,
    apply_ranks,
    build_block,
    ranks_by_bucket,
    split_edges,
    split_nodes,
    update,
)
from transforms.tableio.files import read_view
from transforms.tableio.gather import GatherAll
from transforms.tableio.sideinput import combined_side_input

CHUNK_ROWS = 100_000

class Scatter(beam.DoFn):
    DANGLING = "dangling"

    def process(self, item):
        b, (block, ranks) = item
        yield beam.pvalue.TaggedOutput(self.DANGLING, float(ranks[block.dangling].sum()))
        if len(block.src_local) == 0:
            return
        contrib = (ranks * block.inv_outdeg)[block.src_local]
        sums = np.bincount(block.inverse, weights=contrib,
                           minlength=block.targets[-1][3] if block.targets else 0)
        for d, tfps, s, e in block.targets:
            yield d, (tfps, sums[s:e])

class PageRank(beam.PTransform):
    """PageRank of the graph given as edge chunks; see the module docstring."""

    def __init__(self, iterations: int = 50, num_buckets: int = 16,
                 damping: float = DAMPING, nodes=None, label: str | None = None):
        super().__init__(label)
        self.iterations = int(iterations)
        self.num_buckets = int(num_buckets)
        self.damping = float(damping)
        self.nodes = nodes

    def expand(self, edges):
        B, alpha = self.num_buckets, self.damping
        parts = edges | "SplitEdges" >> beam.FlatMap(split_edges, B)
        if self.nodes is not None:
            extra = self.nodes | "SplitNodes" >> beam.FlatMap(split_nodes, B)
            parts = (parts, extra) | "AllParts" >> beam.Flatten()
        blocks = (parts
                  | "GroupByBucket" >> beam.GroupByKey()
                  | "BuildBlocks" >> beam.Map(build_block, B))
        n = combined_side_input(blocks | "NodesPerBucket" >> beam.Map(lambda kv: len(kv[1].nodes)),
                                "CountNodes", sum)
        state = blocks | "InitRanks" >> beam.Map(
            lambda kv, n: (kv[0], (kv[1], np.full(len(kv[1].nodes), 1.0 / n))), n=n)
        for i in range(self.iterations):
            out = state | f"Scatter{i}" >> beam.ParDo(Scatter()).with_outputs(
                Scatter.DANGLING, main="contrib")
            dangling = combined_side_input(out[Scatter.DANGLING], f"Dangling{i}", sum)
            state = ({"s": state, "c": out["contrib"]}
                     | f"Gather{i}" >> beam.CoGroupByKey()
                     | f"Update{i}" >> beam.Map(update, num_nodes=n, dangling=dangling,
                                                damping=alpha))
        return state | "Ranks" >> beam.Map(lambda kv: (kv[1][0].nodes, kv[1][1]))


class RanksToTables(beam.PTransform):
    """(fps, ranks) per bucket -> pyarrow Table(fp int64, rank float64) per bucket."""

    def expand(self, ranks):
        import pyarrow as pa
        return ranks | "ToArrow" >> beam.Map(
            lambda fr: pa.table({"fp": pa.array(fr[0], pa.int64()),
                                 "rank": pa.array(fr[1], pa.float64())}))


class _ScoreWhole(beam.DoFn):
    def __init__(self, ordering, files):
        self.ordering, self.files = ordering, files

    def _read(self, table, columns):
        """The committed view of `table` (its files as the round planned them)."""
        return read_view(self.files.get(table, ()), tables.TABLES[table], columns)

    def process(self, frontier_parts, round_edges, round_visited):
        started = time.perf_counter()
        parts = [t for t in frontier_parts if t.num_rows]
        frontier = pa.concat_tables(parts) if parts else tables.FRONTIER.empty_table()
        fetched_fp = column(round_visited, "fp")
        graph = None
        if self.ordering.uses_opic:
            frontier, state = update_opic(frontier, self._read("opic", ["fp", "cash", "history"]),
                                          fetched_fp, column(round_edges, "src_fp"),
                                          column(round_edges, "dst_fp"))
            yield beam.pvalue.TaggedOutput("opic", state)
        if self.ordering.needs_graph:
            old_edges = self._read("links", ["src_fp", "dst_fp"])
            old_visited = self._read("visited", ["fp"])
            graph = CrawlGraph.from_edges(
                column(list(round_edges) + [old_edges], "src_fp"),
                column(list(round_edges) + [old_edges], "dst_fp"),
                cat([fetched_fp, old_visited.column("fp").to_numpy(zero_copy_only=False)]),
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

    def __init__(self, ordering, files):
        """`files`: {"opic"|"links"|"visited": the committed view's Parquet files}."""
        super().__init__()
        self.fn = _ScoreWhole(ordering, files)

    def expand(self, inputs):
        out = (inputs["frontier"]
               | "GatherFrontier" >> GatherAll()
               | "ScoreWhole" >> beam.ParDo(self.fn, beam.pvalue.AsList(inputs["edges"]),
                                            beam.pvalue.AsList(inputs["visited"]))
               .with_outputs("opic", "stats", main="frontier"))
        return {"frontier": out.frontier, "opic": out.opic, "stats": out.stats}


class ScoreByBeamPageRank(beam.PTransform):
    """Frontier tables scored with the PageRank of the downloaded ∪ pending graph, computed
    as a Beam job (`PageRank` above) over all known links, so no worker holds the graph.

    Inputs: dict with `frontier` (tables), `edges` (LINKS-like tables: src_fp, dst_fp, all
    known links) and `nodes` (tables with an fp column: visited and pending pages).
    """

    def __init__(self, iterations, damping, buckets):
        super().__init__()
        self.iterations, self.damping, self.buckets = iterations, damping, buckets

    def expand(self, inputs):
        nodes = inputs["nodes"] | "NodeFps" >> beam.Map(
            lambda t: t.column("fp").to_numpy(zero_copy_only=False))
        ranks = (inputs["edges"]
                 | "BeamPageRank" >> PageRank(self.iterations, self.buckets, self.damping, nodes=nodes)
                 | "RankTables" >> RanksToTables())
        b = self.buckets
        return ({"frontier": inputs["frontier"] | "BucketFrontierForRanks" >> beam.FlatMap(ranks_by_bucket, b),
                 "ranks": ranks | "BucketRanks" >> beam.FlatMap(ranks_by_bucket, b)}
                | "JoinRanks" >> beam.CoGroupByKey()
                | "ApplyRanks" >> beam.FlatMap(apply_ranks))


class _TopKeys(beam.CombineFn):
    """(score, fp) arrays -> the best k + 1 of them (transforms/score/buffer.top)."""

    def __init__(self, k):
        self.k = k

    def create_accumulator(self):
        return None

    def add_input(self, acc, keys):
        return buffer.top([acc, keys], self.k)

    def merge_accumulators(self, accs):
        return buffer.top(list(accs), self.k)

    def extract_output(self, acc):
        return buffer.top([acc], self.k)


class BoundFrontier(beam.PTransform):
    """MAX_BUFFER (transforms/score/buffer.py): frontier tables -> {frontier, filtered, stats}
    with at most `max_buffer` URLs kept, the lowest-scored dropped as `buffer_full`."""

    def __init__(self, max_buffer, round_no):
        super().__init__()
        self.max_buffer, self.round_no = int(max_buffer), int(round_no)

    def expand(self, frontier):
        cut = (frontier
               | "SortKeys" >> beam.Map(buffer.sort_keys)
               | "TopKeys" >> beam.CombineGlobally(_TopKeys(self.max_buffer))
               | "Cutoff" >> beam.Map(buffer.cutoff, self.max_buffer))
        split = frontier | "Split" >> beam.Map(
            lambda t, c, r=self.round_no: buffer.split(t, c, r), AsSingleton(cut))
        dropped = split | "Dropped" >> beam.Map(lambda kf: kf[1])
        return {"frontier": split | "Kept" >> beam.Map(lambda kf: kf[0]),
                "filtered": dropped,
                "stats": dropped | "BufferStats" >> beam.Map(buffer.buffer_stats)}
