"""Near-duplicate clusters: capped LSH band groups -> one row per page (pure).

A round's near-duplicate output is one row per page that joins a cluster, never one per
pair: pairs grow with the square of a cluster (a 10 000-page template cluster is 50 M
pairs), rows with its size.

1. `candidate_edges`, per bucket of band rows (this round's pages and the old side's
   hits): rows with one band key form a band group, sorted by (round, fp). Each page of this
   round is compared with the group's ``cap`` earliest members that are earlier than it
   (band slice equal, then the Jaccard estimate over the whole signature >= threshold);
   the group is never compared all-with-all, so work is O(group x cap) and a
   20 000-page group compares 20 000 x cap, not 2 x 10^8. Of one page's matches in a
   group only the best is kept (earliest cluster head, then highest Jaccard): at most one
   edge per (page, band), whatever the group's size. `NearClusters` finds the same edges
   with `nearpass.near_edges`, from page tables (a signature once per page, not once per
   band row); `candidate_edges` stays as the band-row reference the tests compare it with.
2. `resolve_clusters`, once per round over all edges (at most bands x pages of the
   round): union-find over this round's pages, where an old page stands for its
   cluster (VISITED ``near_cluster_fp``/``near_cluster_round``, itself when null). A set's
   head is its earliest member by (round, fp); every page of this round in a set that
   is not its head gets one row: the cluster (head), the page it matched (``of``, the
   head itself when it matched it) and the Jaccard estimate to that page.
   Rows written in earlier rounds are never rewritten: if this round's pages join two old
   clusters, they join the earlier one, and the later cluster's old rows keep their head.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables
from transforms.contentseen.fingerprints import NUM_PERM, signatures_of

NEAR_CAP = 64        # earliest members of a band group a page is compared with
_CHUNK = 1 << 22     # bool cells per comparison block (pages x cap x num_perm)

EDGES = pa.schema([
    ("fp", pa.int64()), ("round", pa.int32()),
    ("of_fp", pa.int64()), ("of_url", pa.string()), ("of_round", pa.int32()),
    ("head_fp", pa.int64()), ("head_round", pa.int32()), ("jaccard", pa.float64()),
])
ASSIGNMENTS = pa.schema([
    ("fp", pa.int64()), ("cluster_fp", pa.int64()), ("cluster_round", pa.int32()),
    ("of_fp", pa.int64()), ("of_url", pa.string()), ("of_round", pa.int32()),
    ("jaccard", pa.float64()),
])


def _np(t, name):
    return t.column(name).to_numpy(zero_copy_only=False)


def head_columns(table, fp, rnd):
    """(head fp, head round) of rows: their near_cluster columns, themselves where null."""
    if "near_cluster_fp" not in table.column_names:
        return fp, rnd
    hf = table.column("near_cluster_fp")
    hr = table.column("near_cluster_round")
    has = ~np.asarray(hf.is_null().to_numpy(zero_copy_only=False), bool)
    head_fp = np.where(has, hf.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64), fp)
    head_rnd = np.where(has, hr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64), rnd)
    return head_fp, head_rnd


def candidate_edges(band_tables, bands: int, rows: int, num_perm: int = NUM_PERM,
                    threshold: float = 0.9, cap: int = NEAR_CAP) -> tuple[pa.Table, int]:
    """(EDGES table, largest number of members one page was compared with) of a bucket."""
    parts = [t for t in band_tables if t is not None and t.num_rows]
    if not parts:
        return EDGES.empty_table(), 0
    T = pa.concat_tables(parts, promote_options="default")
    key, band = _np(T, "key").astype(np.int64), _np(T, "band").astype(np.int64)
    fp, rnd = _np(T, "fp").astype(np.int64), _np(T, "round").astype(np.int64)
    order = np.lexsort((fp, rnd, band, key))
    key, band, fp, rnd = key[order], band[order], fp[order], rnd[order]
    new = _np(T, "new").astype(bool)[order]
    hfp, hrnd = _np(T, "head_fp").astype(np.int64)[order], _np(T, "head_round").astype(np.int64)[order]
    start = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]) | (band[1:] != band[:-1])])
    end = np.r_[start[1:], len(key)]
    size = end - start
    newcount = np.add.reduceat(new.astype(np.int64), start)
    live = np.flatnonzero((size >= 2) & (newcount > 0))
    if not len(live):
        return EDGES.empty_table(), 0
    T = T.take(pa.array(order, type=pa.int64()))
    sigs, _ = signatures_of(T.column("minhash"), num_perm)
    out_i, out_o, out_j, widest = [], [], [], 0
    for g in live:
        s, e = int(start[g]), int(end[g])
        reps = np.arange(s, min(e, s + cap)) if cap else np.arange(s, e)
        news = np.flatnonzero(new[s:e]) + s
        news = news[news > s]                      # the group's first member has none earlier
        if not len(news):
            continue
        widest = max(widest, len(reps))
        b = int(band[s])
        sl = slice(b * rows, (b + 1) * rows)
        step = max(1, _CHUNK // max(1, len(reps) * num_perm))
        for c in range(0, len(news), step):
            nc = news[c:c + step]
            ok = reps[None, :] < nc[:, None]                                  # earlier only
            ok &= (sigs[nc][:, None, sl] == sigs[reps][None, :, sl]).all(axis=2)
            ok &= fp[reps][None, :] != fp[nc][:, None]
            if not ok.any():
                continue
            jac = (sigs[nc][:, None, :] == sigs[reps][None, :, :]).mean(axis=2)
            ok &= jac >= threshold
            # best match per page: earliest head (round, fp), then highest Jaccard
            rank = np.lexsort((-jac, hfp[reps][None, :].repeat(len(nc), 0),
                               hrnd[reps][None, :].repeat(len(nc), 0), ~ok), axis=1)[:, 0]
            hit = ok[np.arange(len(nc)), rank]
            out_i.append(nc[hit])
            out_o.append(reps[rank[hit]])
            out_j.append(jac[np.arange(len(nc)), rank][hit])
    if not out_i:
        return EDGES.empty_table(), widest
    i, o, j = np.concatenate(out_i), np.concatenate(out_o), np.concatenate(out_j)
    take = pa.array(o, type=pa.int64())
    return pa.Table.from_arrays([
        pa.array(fp[i], pa.int64()), pa.array(rnd[i], pa.int32()),
        pa.array(fp[o], pa.int64()), T.column("url").take(take).cast(pa.string()),
        pa.array(rnd[o], pa.int32()), pa.array(hfp[o], pa.int64()), pa.array(hrnd[o], pa.int32()),
        pa.array(j, pa.float64())], schema=EDGES), widest


def resolve_clusters(edges: pa.Table) -> pa.Table:
    """ASSIGNMENTS (one row per page of the round that joins a cluster) from all EDGES."""
    if edges is None or edges.num_rows == 0:
        return ASSIGNMENTS.empty_table()
    e = edges.to_pydict()
    parent: dict = {}

    def find(x):
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:          # path compression
            parent[x], x = root, parent[x]
        return root

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:                             # the earlier (round, fp) is the head
            if rb < ra:
                ra, rb = rb, ra
            parent[rb] = ra
    new_pages = set(zip(e["round"], e["fp"]))
    for p, o, h in zip(zip(e["round"], e["fp"]), zip(e["of_round"], e["of_fp"]),
                       zip(e["head_round"], e["head_fp"])):
        # a page of this round stands for itself; an old page for its cluster's head
        union(p, o if o in new_pages else h)
    best: dict = {}
    for k in range(len(e["fp"])):
        p = (e["round"][k], e["fp"][k])
        head = find(p)
        if head == p:
            continue
        cand = (e["of_fp"][k] != head[1], -e["jaccard"][k], e["of_fp"][k], k)
        if p not in best or cand < best[p][0]:
            best[p] = (cand, head)
    rows = sorted((p[1], head, cand[3]) for p, (cand, head) in best.items())
    ks = [k for _, _, k in rows]
    return pa.Table.from_arrays([
        pa.array([r[0] for r in rows], pa.int64()),
        pa.array([r[1][1] for r in rows], pa.int64()), pa.array([r[1][0] for r in rows], pa.int32()),
        pa.array([e["of_fp"][k] for k in ks], pa.int64()),
        pa.array([e["of_url"][k] for k in ks], pa.string()),
        pa.array([e["of_round"][k] for k in ks], pa.int32()),
        pa.array([e["jaccard"][k] for k in ks], pa.float64())], schema=ASSIGNMENTS)


SIZE_BINS = ((2, 2), (3, 9), (10, 99), (100, 999), (1000, 0))


def cluster_stats(assignments: pa.Table) -> dict:
    """The round's near-duplicate counters: pages that joined a cluster, the clusters they
    joined, the largest (its pages of this round + its head) and how many clusters have
    a size in each of SIZE_BINS (``near_cluster_size_3_9``, ``near_cluster_size_1000+``)."""
    n = 0 if assignments is None else assignments.num_rows
    out = {"near_duplicates": n, "near_clusters": 0, "near_cluster_largest": 0}
    if n:
        _, counts = np.unique(_np(assignments, "cluster_fp"), return_counts=True)
        sizes = counts + 1
        out["near_clusters"] = len(counts)
        out["near_cluster_largest"] = int(sizes.max())
        for lo, hi in SIZE_BINS:
            m = int(((sizes >= lo) & ((sizes <= hi) if hi else True)).sum())
            if m:
                out["near_cluster_size_" + (f"{lo}+" if not hi else str(lo) if hi == lo
                                            else f"{lo}_{hi}")] = m
    return out


def host_counts(visited: pa.Table, assigned) -> list:
    """[(HOST, (pages of HOST in this table that joined a cluster, its pages in this table))]
    for every host of the table; `assigned`: sorted int64 array of the fps that joined a
    cluster this round. Summed per host over the round's tables (`host_stats`)."""
    if visited.num_rows == 0:
        return []
    fp = _np(visited, "fp").astype(np.int64)
    if len(assigned):
        pos = np.minimum(np.searchsorted(assigned, fp), len(assigned) - 1)
        hit = assigned[pos] == fp
    else:
        hit = np.zeros(len(fp), dtype=bool)
    codes = pc.dictionary_encode(visited.column("host")).combine_chunks()
    index = codes.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    names = codes.dictionary.to_pylist()
    pages = np.bincount(index[index >= 0], minlength=len(names))
    hits = np.bincount(index[(index >= 0) & hit], minlength=len(names))
    return [(h, (int(a), int(b))) for h, a, b in zip(names, hits, pages)]


def host_stats(host: str, counts) -> dict:
    """{"near_host_pages:HOST": pages of HOST that joined a cluster this round,
    "near_host_visited:HOST": its pages this round} from `host_counts` summed over the
    round, for a host with any (else {})."""
    pages, visited = counts
    if not pages:
        return {}
    return {f"near_host_pages:{host}": pages, f"near_host_visited:{host}": visited}


def _lookup(table, asg):
    """(rows of `table` in `asg`, their rows in `asg`); `asg` is sorted by fp."""
    if asg is None or asg.num_rows == 0 or table.num_rows == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys = _np(asg, "fp").astype(np.int64)
    fp = _np(table, "fp").astype(np.int64)
    pos = np.minimum(np.searchsorted(keys, fp), len(keys) - 1)
    rows = np.flatnonzero(keys[pos] == fp)
    return rows, pos[rows]


def mark_near(table: pa.Table, asg: pa.Table) -> pa.Table:
    """A VISITED table with near_cluster_fp / near_cluster_round set from ASSIGNMENTS."""
    rows, at = _lookup(table, asg)
    if not len(rows):
        return table
    for col, src, typ in (("near_cluster_fp", "cluster_fp", pa.int64()),
                          ("near_cluster_round", "cluster_round", pa.int32())):
        vals = np.zeros(table.num_rows, np.int64)
        vals[rows] = _np(asg, src).astype(np.int64)[at]
        mask = np.ones(table.num_rows, bool)
        mask[rows] = False
        arr = pa.array(vals, typ, mask=mask)
        i = table.schema.get_field_index(col)
        table = (table.set_column(i, col, arr) if i >= 0 else table.append_column(col, arr))
    return table


def near_rows(table: pa.Table, asg: pa.Table):
    """The NEAR_DUPLICATES rows (schemas.tables) of a VISITED table's pages in ASSIGNMENTS."""
    rows, at = _lookup(table, asg)
    if not len(rows):
        return
    r, a = pa.array(rows, type=pa.int64()), pa.array(at, type=pa.int64())
    cols = {"fp": table.column("fp").take(r), "url": table.column("url").take(r),
            "host": table.column("host").take(r), "round": table.column("round").take(r)}
    cols.update({c: asg.column(c).take(a) for c in
                 ("cluster_fp", "cluster_round", "of_fp", "of_url", "of_round", "jaccard")})
    yield pa.Table.from_arrays([cols[f.name].cast(f.type) for f in tables.NEAR_DUPLICATES],
                               schema=tables.NEAR_DUPLICATES)


def near_report(stats: dict, top: int = 20) -> dict:
    """The round report's near-duplicate part from the round's flat counters (cluster_stats
    and host_stats summed): clusters joined, the largest, sizes, and the `top` hosts by pages
    in clusters with the share of the host's pages of the round they are."""
    hosts = [{"host": k.split(":", 1)[1], "pages": int(v),
              "visited": int(stats.get("near_host_visited:" + k.split(":", 1)[1], 0))}
             for k, v in stats.items() if k.startswith("near_host_pages:")]
    for h in hosts:
        h["share"] = round(h["pages"] / h["visited"], 4) if h["visited"] else None
    hosts.sort(key=lambda h: (-h["pages"], h["host"]))
    return {"clusters": int(stats.get("near_clusters", 0)),
            "largest": int(stats.get("near_cluster_largest", 0)),
            "sizes": {k[len("near_cluster_size_"):]: int(v) for k, v in sorted(stats.items())
                      if k.startswith("near_cluster_size_")},
            "hosts": hosts[:top]}


def sum_pairs(pairs):
    """(pages in clusters, pages) of a host summed over the round's tables."""
    return tuple(map(sum, zip(*pairs))) or (0, 0)
