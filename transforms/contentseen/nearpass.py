"""Near-duplicate edges in one vectorised pass over page tables, a signature once per page (pure).

`NearClusters` (step.py) gathers this round's signed pages and the old side's hits as
`PAGES` tables (`page_table`: one row per page, its MinHash signature once) and
`near_edges` finds, from them, the EDGES that `clusters.candidate_edges` finds from band
rows (one row per (page, band), each carrying the whole signature), by the same rules:

  * band rows (band key, band, page) are made here, in memory, as int arrays: a band group
    is the rows of one (key, band), sorted by the page's (round, fp);
  * each band row of a page of this round is compared with the group's ``cap`` earliest
    members (0 = all) that are earlier than it: band slice equal, another fp, Jaccard
    estimate (share of equal MinHash values) >= threshold; of its matches the one with the
    earliest cluster head (round, fp), then the highest estimate, then the earliest member
    is its edge;
  * the largest number of members one page was compared with (``min(group, cap)`` over
    the groups with a page of this round that has an earlier member) is returned with it.

Memory is the pages' signatures once plus a few ints per band row (never bands x signature
bytes); the comparisons run in blocks of `_PAIRS` (page, member) pairs, all groups at once,
a page's band rows side by side so that a pair several of its bands share (a template
cluster: all of them) has its estimate computed once, and the best match of a band row is
the smallest of its pairs' ranks packed in one int64 (a lexsort when they do not fit).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from transforms.contentseen.clusters import EDGES, NEAR_CAP, head_columns
from transforms.contentseen.fingerprints import (
    LSH_PARAMS,
    MINHASH_TYPE,
    NUM_PERM,
    band_keys,
    signatures_of,
)
from transforms.urls.fpsets import member, sorted_unique

_PAIRS = 1 << 13     # (page, member) pairs per comparison block: 2 x 8192 x num_perm uint32
_PACK_LIMIT = 1 << 62  # a pair's rank packed in one int64 below this, else a lexsort

PAGES = pa.schema([
    ("fp", pa.int64()), ("url", pa.string()), ("round", pa.int32()),
    ("head_fp", pa.int64()), ("head_round", pa.int32()), ("minhash", MINHASH_TYPE),
])


def _np(t, name):
    return t.column(name).to_numpy(zero_copy_only=False)


def page_table(table: pa.Table, num_perm: int = NUM_PERM, params: tuple[int, int] = LSH_PARAMS,
               keep_keys: np.ndarray | None = None) -> pa.Table | None:
    """PAGES rows of `table`'s pages with a signature (columns fp, url, round, minhash and,
    optionally, near_cluster_fp / near_cluster_round); with `keep_keys` (sorted int64)
    only the pages with a band key in it. None when no page is left."""
    if table.num_rows == 0:
        return None
    minhash = table.column("minhash")
    idx = np.flatnonzero(~np.asarray(minhash.is_null().to_numpy(zero_copy_only=False), bool))
    if keep_keys is not None and len(idx):
        sigs, _ = signatures_of(minhash.take(pa.array(idx, type=pa.int64())), num_perm)
        keys = band_keys(sigs, *params)
        del sigs
        idx = idx[member(keys.reshape(-1), keep_keys).reshape(keys.shape).any(axis=1)]
    if not len(idx):
        return None
    fp = _np(table, "fp").astype(np.int64)
    rnd = table.column("round").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    head_fp, head_round = head_columns(table, fp, rnd)
    take = pa.array(idx, type=pa.int64())
    return pa.Table.from_arrays([
        pa.array(fp[idx], pa.int64()), table.column("url").take(take).cast(pa.string()),
        pa.array(rnd[idx], pa.int32()), pa.array(head_fp[idx], pa.int64()),
        pa.array(head_round[idx], pa.int32()), minhash.take(take).cast(MINHASH_TYPE)], schema=PAGES)


def page_band_keys(pages: pa.Table, num_perm: int = NUM_PERM,
                   params: tuple[int, int] = LSH_PARAMS) -> np.ndarray:
    """Every band key of a PAGES table's pages (int64, unsorted)."""
    sigs, _ = signatures_of(pages.column("minhash"), num_perm)
    return band_keys(sigs, *params).reshape(-1)


def _signatures(column, num_perm: int) -> np.ndarray:
    """uint32[n, num_perm] of a PAGES minhash column (no nulls): a view of its values."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    flat = column.flatten().to_numpy(zero_copy_only=False)
    return flat.astype(np.uint32, copy=False).reshape(len(column), num_perm)


def _take_over(tables, num_perm: int) -> tuple[pa.Table, np.ndarray]:
    """(the PAGES tables without minhash, joined; uint32[n, num_perm] signatures). Each table's
    signatures are copied into the one array and its minhash column let go before the next
    table's: with the caller's only references handed over, the signatures are held once
    (joined, then copied out, they were held twice: 45 000 pages x 512 B = 23 MB, computed)."""
    parts = [t for t in tables if t is not None and t.num_rows]
    tables.clear()
    sigs = np.empty((sum(t.num_rows for t in parts), num_perm), np.uint32)
    rest, at = [], 0
    parts.reverse()
    while parts:
        t = parts.pop()
        sigs[at:at + t.num_rows] = _signatures(t.column("minhash"), num_perm)
        at += t.num_rows
        rest.append(t.drop_columns(["minhash"]))
        del t
    return pa.concat_tables(rest, promote_options="default"), sigs


def near_edges(new_tables, old_tables, bands: int, rows: int, num_perm: int = NUM_PERM,
               threshold: float = 0.9, cap: int = NEAR_CAP) -> tuple[pa.Table, int]:
    """(EDGES, widest) of this round's PAGES tables against the old side's (module rules).

    The two lists are emptied first, and each table's minhash column is let go once its
    signatures are copied into the pass's one array (`_take_over`): the caller that hands
    its only references over frees them for the comparisons (~23 MB in a 45 000-page round)."""
    n_new = sum(t.num_rows for t in new_tables if t is not None)
    has_old = any(t is not None and t.num_rows for t in old_tables)
    if not n_new:
        new_tables.clear()
        old_tables.clear()
        return EDGES.empty_table(), 0
    tables = new_tables + old_tables   # this round's pages first
    new_tables.clear()
    old_tables.clear()
    T, sigs = _take_over(tables, num_perm)
    fp, rnd = _np(T, "fp").astype(np.int64), _np(T, "round").astype(np.int64)
    hfp, hrnd = _np(T, "head_fp").astype(np.int64), _np(T, "head_round").astype(np.int64)
    urls = T.column("url")
    del T
    keys = band_keys(sigs, bands, rows)
    key = keys.reshape(-1)
    # pages by (round, fp), ties in input order (this round's first): a band row's page
    # rank orders a band group as (round, fp) does
    by = np.lexsort((fp, rnd))
    rank = np.empty(len(fp), np.int32)
    rank[by] = np.arange(len(fp), dtype=np.int32)
    page = np.repeat(rank, bands)
    band = np.tile(np.arange(bands, dtype=np.int16), len(fp))
    if has_old:                  # an old band row forms a group with a new one only by its key
        keep = np.ones(len(key), bool)
        keep[n_new * bands:] = member(key[n_new * bands:], sorted_unique(keys[:n_new].reshape(-1)))
        key, page, band = key[keep], page[keep], band[keep]
    del keys
    order = np.lexsort((page, band, key))
    key, band = key[order], band[order]
    page = by.astype(np.int32)[page[order]]     # rank -> row of the pages' arrays
    del order, rank, by
    # band groups, their rows' places as int32 (16 band rows a page, so these arrays were the
    # pass's largest after the signatures)
    start = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]) | (band[1:] != band[:-1])]).astype(np.int32)
    del key
    size = np.diff(np.r_[start, np.int32(len(band))])
    gid = np.repeat(np.arange(len(start), dtype=np.int32), size)
    pos = np.arange(len(band), dtype=np.int32)
    pos -= start[gid]
    q = np.flatnonzero((page < n_new) & (pos > 0))    # this round's rows with earlier members
    if not len(q):
        return EDGES.empty_table(), 0
    width = size[sorted_unique(gid[q])]
    widest = int((np.minimum(width, cap) if cap else width).max())
    counts = (np.minimum(pos[q], cap) if cap else pos[q]).astype(np.int64)
    first = start[gid[q]].astype(np.int64)
    del gid, pos
    # a page's band rows side by side: the pairs its bands share are compared once
    by_page = np.argsort(page[q], kind="stable")
    q, counts, first = q[by_page], counts[by_page], first[by_page]
    del by_page
    n = np.int64(len(fp))
    slices = sigs[:, :bands * rows].reshape(len(fp), bands, rows)    # [page, band] -> its slice
    # a pair's rank as one int64 where it fits: head (round, fp), then -Jaccard, then member
    ho = np.lexsort((hfp, hrnd))
    head_rank = np.empty(len(fp), np.int64)
    head_rank[ho] = np.cumsum(np.r_[True, (hfp[ho][1:] != hfp[ho][:-1]) | (hrnd[ho][1:] != hrnd[ho][:-1])]) - 1
    del ho
    span = int(counts.max())
    packed = int(n) * (num_perm + 1) * span < _PACK_LIMIT
    cum = np.cumsum(counts)
    out_q, out_i, out_o, out_j = [], [], [], []
    lo = 0
    while lo < len(q):
        base = cum[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, base + _PAIRS, side="right")))
        c = counts[lo:hi]
        qi = np.repeat(q[lo:hi], c)
        off = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)     # member's place in group
        qo = np.repeat(first[lo:hi], c) + off
        lo = hi
        pi, po = page[qi], page[qo]
        b = band[qi]
        ok = (slices[pi, b] == slices[po, b]).all(axis=1) & (fp[pi] != fp[po])
        qi, qo, pi, po, off = qi[ok], qo[ok], pi[ok], po[ok], off[ok]
        if not len(qi):
            continue
        pair, inv = np.unique(pi * n + po, return_inverse=True)
        same = np.count_nonzero(sigs[pair // n] == sigs[pair % n], axis=1)[inv.reshape(-1)]
        jac = same / num_perm
        ok = jac >= threshold
        qi, qo, pi, po, off, same, jac = qi[ok], qo[ok], pi[ok], po[ok], off[ok], same[ok], jac[ok]
        if not len(qi):
            continue
        # best match per band row: earliest head (round, fp), highest Jaccard, earliest member
        # (a band row's pairs are side by side)
        if packed:
            rank = (head_rank[po] * (num_perm + 1) + (num_perm - same)) * span + off
            seg = np.flatnonzero(np.r_[True, qi[1:] != qi[:-1]])
            low = np.repeat(np.minimum.reduceat(rank, seg), np.diff(np.r_[seg, len(qi)]))
            best = np.flatnonzero(rank == low)
        else:
            best = np.lexsort((qo, -jac, hfp[po], hrnd[po], qi))
            best = best[np.r_[True, qi[best][1:] != qi[best][:-1]]]
        out_q.append(qi[best])
        out_i.append(pi[best])
        out_o.append(po[best])
        out_j.append(jac[best])
    if not out_i:
        return EDGES.empty_table(), widest
    back = np.argsort(np.concatenate(out_q))          # edges in band-row order
    i, o, j = (np.concatenate(a)[back] for a in (out_i, out_o, out_j))
    return pa.Table.from_arrays([
        pa.array(fp[i], pa.int64()), pa.array(rnd[i], pa.int32()),
        pa.array(fp[o], pa.int64()), urls.take(pa.array(o, type=pa.int64())).cast(pa.string()),
        pa.array(rnd[o], pa.int32()), pa.array(hfp[o], pa.int64()), pa.array(hrnd[o], pa.int32()),
        pa.array(j, pa.float64())], schema=EDGES), widest
