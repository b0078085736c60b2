"""PageRank as a Beam pipeline, for graphs larger than one worker's memory.

The same maths as strategies.graph.pagerank (damping, dangling mass spread uniformly,
duplicate edges counted once), on 64-bit URL fingerprints, so no dense numbering pass is
needed. Nodes are split into `num_buckets` buckets by `fp mod num_buckets`; one element
per bucket carries numpy arrays, never one element per edge or node:

    state[b]   = (Block b, ranks of b's nodes)
    Block b    = b's sorted node fps, the out-edges of b's nodes, out-degrees, and the
                 edges' targets pre-grouped by target bucket

Each iteration is one unrolled, distinctly labelled step:

    Scatter{i}:  state[b] -> contributions (target bucket d, (target fps, summed rank/outdeg))
                 + dangling mass of b                      (one element per bucket pair)
    Dangling{i}: CombineGlobally(sum) -> side input (tableio.sideinput.combined_side_input)
    Gather{i}:   CoGroupByKey(state, contributions) by bucket
    Update{i}:   ranks' = damping * (received + dangling / n) + (1 - damping) / n

Input: a PCollection of edge chunks — pyarrow Tables/RecordBatches with int64 columns
(`src_fp`, `dst_fp`) or (`src`, `dst`) (e.g. from ReadFromParquetBatched over the
crawl's links), or (src array, dst array) tuples. Optional `nodes`: chunks of node fps
that may have no edges (e.g. pending pages). Output: one (fps array, ranks array) per
bucket; `RanksToTables` turns them into Arrow tables (fp, rank) for writing.

Iterations are fixed (a Beam graph is static): the L1 change after k steps is at most
2·damping^k, and in practice far less (see tests/unit/test_pagerank_beam.py).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from strategies.graph import unique
from transforms.urlseen.buckets import split_by_bucket

DAMPING = 0.85


def _bucket(fps, num_buckets):
    return np.mod(np.asarray(fps, dtype=np.int64), num_buckets)


def _as_arrays(chunk):
    """(src, dst) int64 arrays from a table/record batch or a pair of arrays."""
    if hasattr(chunk, "column_names"):
        names = chunk.column_names
        s, d = ("src_fp", "dst_fp") if "src_fp" in names else ("src", "dst")
        col = lambda c: np.asarray(chunk.column(c).to_numpy(zero_copy_only=False), np.int64)
        return col(s), col(d)
    s, d = chunk
    return np.asarray(s, dtype=np.int64), np.asarray(d, dtype=np.int64)


def split_edges(chunk, num_buckets):
    """Edge chunk -> (bucket, ('e', src, dst)) by source bucket, and (bucket, ('n', fps))
    so that every endpoint is a node of its own bucket."""
    src, dst = _as_arrays(chunk)
    if len(src) == 0:
        return
    sb = _bucket(src, num_buckets)
    order = np.argsort(sb, kind="stable")
    src, dst, sb = src[order], dst[order], sb[order]
    bounds = np.flatnonzero(np.diff(sb)) + 1
    for s, d in zip(np.split(src, bounds), np.split(dst, bounds)):
        yield int(_bucket(s[:1], num_buckets)[0]), ("e", s, d)
    yield from split_nodes(np.concatenate([src, dst]), num_buckets)


def split_nodes(fps, num_buckets):
    fps = unique(np.asarray(fps, dtype=np.int64))
    if len(fps) == 0:
        return
    b = _bucket(fps, num_buckets)
    order = np.argsort(b, kind="stable")
    fps, b = fps[order], b[order]
    bounds = np.flatnonzero(np.diff(b)) + 1
    for part in np.split(fps, bounds):
        yield int(_bucket(part[:1], num_buckets)[0]), ("n", part)


class Block:
    """Static structure of one bucket (built once, carried through the iterations)."""
    __slots__ = ("bucket", "nodes", "src_local", "inv_outdeg", "dangling", "inverse",
                 "targets")

    def __init__(self, bucket, nodes, src_local, inv_outdeg, dangling, inverse, targets):
        self.bucket = bucket
        self.nodes = nodes              # sorted int64 fps of this bucket
        self.src_local = src_local      # per distinct edge: local index of its source
        self.inv_outdeg = inv_outdeg    # per node: 1/outdeg (0 for dangling)
        self.dangling = dangling        # per node: bool
        self.inverse = inverse          # per edge: index into the distinct targets
        self.targets = targets          # [(target bucket, target fps, start, end)]

    def __getstate__(self):
        return tuple(getattr(self, k) for k in self.__slots__)

    def __setstate__(self, st):
        for k, v in zip(self.__slots__, st):
            setattr(self, k, v)


def build_block(item, num_buckets):
    b, parts = item
    nodes = [p[1] for p in parts if p[0] == "n"]
    srcs = [p[1] for p in parts if p[0] == "e"]
    dsts = [p[2] for p in parts if p[0] == "e"]
    nodes = unique(np.concatenate(nodes)) if nodes else np.zeros(0, np.int64)
    n_local = len(nodes)
    if srcs:
        src_local = np.searchsorted(nodes, np.concatenate(srcs))
        dst = np.concatenate(dsts)
        # distinct (src, dst) pairs: sort by (dst bucket, dst fp, src)
        db = _bucket(dst, num_buckets)
        order = np.lexsort((src_local, dst, db))
        src_local, dst, db = src_local[order], dst[order], db[order]
        keep = np.ones(len(dst), bool)
        keep[1:] = (dst[1:] != dst[:-1]) | (src_local[1:] != src_local[:-1])
        src_local, dst, db = src_local[keep], dst[keep], db[keep]
        new_target = np.ones(len(dst), bool)
        new_target[1:] = dst[1:] != dst[:-1]
        inverse = np.cumsum(new_target) - 1
        tfps, tb = dst[new_target], db[new_target]
        cuts = np.flatnonzero(np.diff(tb)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(tfps)]])
        targets = [(int(tb[s]), tfps[s:e], int(s), int(e)) for s, e in zip(starts, ends)]
    else:
        src_local = np.zeros(0, np.int64)
        inverse = np.zeros(0, np.int64)
        targets = []
    outdeg = np.bincount(src_local, minlength=n_local).astype(np.float64)
    dangling = outdeg == 0
    inv = np.zeros(n_local)
    np.divide(1.0, outdeg, out=inv, where=~dangling)
    # int32 local indices halve what every iteration's shuffle carries
    itype = np.int32 if max(n_local, len(inverse)) < 2**31 else np.int64
    return b, Block(b, nodes, src_local.astype(itype), inv, dangling,
                    inverse.astype(itype), targets)

def update(item, num_nodes, dangling, damping):
    b, grouped = item
    (state,) = grouped["s"]
    block, _ = state
    acc = np.zeros(len(block.nodes))
    for tfps, sums in grouped["c"]:
        acc[np.searchsorted(block.nodes, tfps)] += sums
    new = damping * (acc + dangling / num_nodes) + (1.0 - damping) / num_nodes
    return b, (block, new)

def chunk_edges(src, dst, chunk_size: int = 100_000):
    """Edge arrays -> list of (src, dst) chunks, e.g. for beam.Create in tests."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    return [(src[i:i + chunk_size], dst[i:i + chunk_size])
            for i in range(0, len(src), chunk_size)]


def ranks_by_bucket(table, buckets):
    yield from split_by_bucket(table, buckets)


def apply_ranks(element):
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
