"""Sharding as Beam steps (issue #15; the fleet layout is in pipelines/fleet.py).

`OwnFrontier`: the frontier rows of this shard's hosts; rows of hosts the ring now gives
another shard become candidates for it. `RouteCandidates`: URL-seen candidates (links,
redirect targets, sitemap entries, seeds, the inbox) of this shard's hosts go on to
URL-seen; the rest are written to rounds/N/outbox/to-SS-*.parquet, one file set per
owning shard SS, committed with the round and read by that shard's next round.
"""
import apache_beam as beam
import pyarrow as pa

from schemas import tables
from transforms.shard.split import frontier_as_candidates, split
from transforms.tableio.step import WriteTable


def _tag(shard):
    return f"to{shard:02d}"


class _SplitFrontier(beam.DoFn):
    def __init__(self, shard):
        self.shard = shard

    def process(self, table):
        mine, others = split(table, self.shard.partitioner, self.shard.index)
        yield mine
        for rows in others.values():
            yield beam.pvalue.TaggedOutput("away", frontier_as_candidates(rows))
        if others:
            yield beam.pvalue.TaggedOutput("stats", {"forwarded_frontier": sum(
                t.num_rows for t in others.values())})


class _Route(beam.DoFn):
    def __init__(self, shard):
        self.shard = shard

    def process(self, table):
        mine, others = split(table, self.shard.partitioner, self.shard.index)
        yield mine
        for s, rows in others.items():
            yield beam.pvalue.TaggedOutput(_tag(s), rows)
        if others:
            yield beam.pvalue.TaggedOutput("stats", {"forwarded_urls": sum(
                t.num_rows for t in others.values())})


class OwnFrontier(beam.PTransform):
    """FRONTIER tables -> {"frontier": this shard's rows, "away": CANDIDATES for other
    shards, "stats": counter dicts}."""

    def __init__(self, shard):
        super().__init__()
        self.shard = shard

    def expand(self, frontier):
        split_fn = beam.ParDo(_SplitFrontier(self.shard)).with_output_types(pa.Table)
        out = frontier | "Split" >> split_fn.with_outputs("away", "stats", main="frontier")
        return {"frontier": out.frontier, "away": out.away, "stats": out.stats}


class RouteCandidates(beam.PTransform):
    """CANDIDATES tables -> {"candidates": this shard's, "stats": counter dicts}; the other
    shards' rows are written under `outbox_dir` as to-SS-*.parquet (one WriteTable per
    live shard but this one; "written" and "schemas" go to the round's CommitTables)."""

    def __init__(self, shard, outbox_dir):
        super().__init__()
        self.shard, self.outbox_dir = shard, outbox_dir

    def expand(self, candidates):
        others = [s for s in self.shard.partitioner.live if s != self.shard.index]
        route_fn = beam.ParDo(_Route(self.shard)).with_output_types(pa.Table)
        out = candidates | "Split" >> route_fn.with_outputs("stats", *[_tag(s) for s in others],
                                                              main="candidates")
        prefixes = {s: f"{self.outbox_dir}/to-{s:02d}" for s in others}
        written = [out[_tag(s)] | f"Write{_tag(s)}" >> WriteTable(prefixes[s], tables.OUTBOX) for s in others]
        return {"candidates": out.candidates, "stats": out.stats, "written": written,
                "schemas": {prefix: tables.OUTBOX for prefix in prefixes.values()}}
