"""Which rows of a table belong to this shard, and the rest by owning shard. Plain Python.

The owner of a row is the partitioner's shard of its `host` column (the politeness key), so
every URL of a host is fetched, deduplicated and scheduled by exactly one fleet.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from schemas import tables


def owners(table: pa.Table, partitioner) -> np.ndarray:
    """The shard (int32) of each row of `table` (by its `host` column)."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int32)
    return partitioner.owners(table.column("host").to_pylist())


def split(table: pa.Table, partitioner, me: int):
    """(rows shard `me` owns, {other shard: its rows}) of `table`; empty parts are left out."""
    shard = owners(table, partitioner)
    mine = table.filter(pa.array(shard == me)) if (shard != me).any() else table
    others = {}
    for s in np.unique(shard[shard != me]):
        others[int(s)] = table.filter(pa.array(shard == s))
    return mine, others


def frontier_as_candidates(frontier: pa.Table) -> pa.Table:
    """Frontier rows another shard now owns (the ring changed) as URL-seen candidates, for
    that shard's inbox: URL, host, depth, source, first parent and first anchor, redirect
    hops, lastmod and a focused crawl's link scores travel; the owner's URL-seen recounts
    in-links and scores it."""
    n = frontier.num_rows
    anchors = frontier.column("anchors").to_pylist()

    def col(name):   # columns a frontier file written before them lacks travel as nulls
        typ = tables.CANDIDATES.field(name).type
        return (frontier.column(name).cast(typ) if name in frontier.column_names
                else pa.nulls(n, typ))

    return pa.Table.from_arrays([
        frontier.column("fp"), frontier.column("url"), frontier.column("host"),
        frontier.column("depth"), pa.array(np.zeros(n, dtype=np.int64), pa.int64()),
        frontier.column("first_parent"), pa.array([a[0] if a else None for a in anchors], pa.string()),
        frontier.column("source"), frontier.column("redirects"), frontier.column("lastmod"),
        col("topic_score"), col("topic_inherited"), col("depth_left"),
        col("method"), col("request_body"),   # a POST stays a POST with its fp (deep web)
    ], schema=tables.CANDIDATES)
