"""URL-seen: merge this round's results and new links into the frontier.

The join is a CoGroupByKey, as the design asks, but its elements are Arrow tables, not
rows: every input is split by fingerprint bucket (`fp mod B`), and one bucket's frontier
rows, fetch results, link candidates and filtered candidates meet in one `merge_bucket`
call that works on whole columns with numpy. Per-element Beam overhead is paid per
(batch, bucket), not per URL, and memory is bounded by the bucket size (on a distributed
runner; the in-process FnApiRunner holds its whole shuffle in memory).
The seen views (visited + filtered, the tables that grow with the crawl) enter the
shuffle only as hits: they are semi-joined map-side against the fps this round's links
and filtered URLs ask about (a side input the size of the round, not the crawl). Table
parts cross the shuffle as zstd Arrow IPC bytes (`pack`/`unpack`).
benchmarks/bench_urlseen.py measures it against DuckDB's anti-join.

merge_bucket keeps the invariant: a URL's latest record is exactly one of visited or
frontier, or filtered. Fetched URLs with a final outcome leave the frontier (the caller
writes their visited rows); transient ones stay with their retry state; links to seen URLs
only update the frontier's in-link counts, anchors and depth; unseen ones join it.

Refusals (docs/scope.md "Refused URLs"): seen hits come in three kinds (SEEN_KINDS). A visited
row that is not a refusal (HARD) blocks every candidate; a visited refusal by the current
guard settings (REFUSED) blocks links but not seeds (re-injecting retries it); a filtered
row (FILTERED) blocks no kept candidate (it passed the current filter at its depth, so
the refusal no longer applies) and only keeps the URL from being recorded twice. A
refusal by settings that changed since is not a hit at all: the URL is unseen again.
"""


import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables
from schemas.tables import CANDIDATES, FILTERED_CANDIDATES, RESULTS
from transforms.urls.fpsets import member, sorted_unique
from transforms.urlseen.buckets import _concat, _isin, _np

HARD, REFUSED, FILTERED = "hard", "refused", "filtered"
SEEN_KINDS = (HARD, REFUSED, FILTERED)


def seen_by_kind(seen_parts) -> dict:
    """{kind: sorted unique fps} of seen parts: (kind, fps) pairs, or bare fps (HARD)."""
    out = {k: [] for k in SEEN_KINDS}
    for part in seen_parts:
        kind, fps = part if isinstance(part, tuple) else (HARD, part)
        if fps is not None and len(fps):
            out[kind].append(np.asarray(fps, dtype=np.int64))
    return {k: sorted_unique(np.concatenate(v)) if v else np.zeros(0, np.int64)
            for k, v in out.items()}


def _aggregate_candidates(cand: pa.Table) -> pa.Table:
    """One row per dst_fp: shortest depth (then smallest src fp) wins; in-link count; anchors.

    All in numpy on whole columns: rows sorted by (dst_fp, depth, src_fp); `inlinks` counts
    distinct linking pages (self-links and seeds do not count); `anchors` are the distinct
    non-empty anchor texts in that order, at most MAX_ANCHORS.
    """
    n = cand.num_rows
    dst = _np(cand.column("dst_fp")).astype(np.int64)
    depth = _np(cand.column("depth"), 0).astype(np.int64)
    src = _np(cand.column("src_fp"), 0).astype(np.int64)
    order = np.lexsort((src, depth, dst))
    dst_s, src_s = dst[order], src[order]
    first = np.r_[True, dst_s[1:] != dst_s[:-1]] if n else np.zeros(0, bool)
    group = np.cumsum(first) - 1                     # group id of each sorted row
    n_groups = int(first.sum())
    firsts = cand.take(pa.array(order[first], type=pa.int64()))
    # distinct linking pages per target
    ok = (src_s != 0) & (src_s != dst_s)
    g_ok, s_ok = group[ok], src_s[ok]
    if len(g_ok):
        o2 = np.lexsort((s_ok, g_ok))
        g2, s2 = g_ok[o2], s_ok[o2]
        new_pair = np.r_[True, (g2[1:] != g2[:-1]) | (s2[1:] != s2[:-1])]
        inl = np.bincount(g2[new_pair], minlength=n_groups).astype(np.int64)
    else:
        inl = np.zeros(n_groups, np.int64)
    # distinct anchors per target, first seen (in sorted order) first
    # encode first, then put the integer codes in sorted order (not the strings)
    enc = pc.dictionary_encode(cand.column("anchor")).combine_chunks()
    codes = _np(enc.indices, -1).astype(np.int64)[order]
    valid = codes >= 0
    dictionary = enc.dictionary
    empties = np.flatnonzero(_np(pc.equal(dictionary, ""), False))
    if len(empties):
        valid &= ~np.isin(codes, empties)
    rows = np.flatnonzero(valid)
    offsets = np.zeros(n_groups + 1, np.int32)
    values = pa.array([], pa.string())
    if len(rows):
        key = group[rows] * np.int64(max(1, len(dictionary))) + codes[rows]
        o3 = np.argsort(key, kind="stable")
        k3 = key[o3]
        firstpos = np.sort(o3[np.r_[True, k3[1:] != k3[:-1]]])  # positions in `rows`, in order
        keep_rows = rows[firstpos]
        g = group[keep_rows]
        start = np.r_[True, g[1:] != g[:-1]]
        rank = np.arange(len(g)) - np.maximum.accumulate(np.where(start, np.arange(len(g)), 0))
        sel = rank < tables.MAX_ANCHORS
        keep_rows, g = keep_rows[sel], g[sel]
        counts = np.bincount(g, minlength=n_groups)
        offsets[1:] = np.cumsum(counts)
        values = dictionary.take(pa.array(codes[keep_rows], type=pa.int64()))
    anc = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values.cast(pa.string()))
    out = firsts.append_column("inlinks", pa.array(inl)).append_column("anchors", anc)
    for name in FOCUS_COLUMNS:   # a URL linked from several pages keeps its best (focused.py)
        col = cand.column(name)
        if col.null_count < n:
            out = out.set_column(out.schema.get_field_index(name), name,
                                 _group_max(col, order, group, n_groups))
    return out


FOCUS_COLUMNS = ("topic_score", "topic_inherited", "depth_left")


def _or_ninf(col):
    """A numeric column as float64 with nulls as -inf."""
    return np.where(_np(pc.is_null(col), True).astype(bool), -np.inf, _np(col, 0).astype(np.float64))


def _group_max(col, order, group, n_groups):
    """Per group (rows in `order`, group ids `group`) the maximum of `col`; null if all null."""
    valid = ~_np(pc.is_null(col), True).astype(bool)[order]
    vals = _np(col, 0).astype(np.float64)[order]
    best = np.full(n_groups, -np.inf)
    np.maximum.at(best, group[valid], vals[valid])
    has = np.isfinite(best)
    return pa.array(np.where(has, best, 0), col.type, mask=~has) if pa.types.is_floating(col.type) \
        else pa.array(np.where(has, best, 0).astype(np.int64), pa.int64(), mask=~has).cast(col.type)


def merge_bucket(frontier_parts, seen_parts, result_parts, candidate_parts, filtered_parts,
                 round_no: int, signatures=None):
    """The URL-seen step for one bucket. Returns (frontier table, filtered table, stats).

    `seen_parts`: (kind, fps) hits of the seen views (see SEEN_KINDS; bare fps are HARD);
    `signatures`: {filter reason: signature} stored as the filtered rows' `refused_by`.
    """
    F = _concat(frontier_parts, tables.FRONTIER)
    R = _concat(result_parts, RESULTS)
    C = _concat(candidate_parts, CANDIDATES)
    X = _concat(filtered_parts, FILTERED_CANDIDATES)
    seen = seen_by_kind(seen_parts)
    stats = {}

    # 1. fetch results: final ones leave the frontier, transient ones get their retry state.
    r_fp = _np(R.column("fp"))
    r_final = _np(R.column("final"), False).astype(bool)
    final_fps = r_fp[r_final]
    f_fp = _np(F.column("fp"))
    F = F.filter(pa.array(~_isin(f_fp, final_fps)))
    if (~r_final).any():
        f_fp = _np(F.column("fp"))
        tr = R.filter(pa.array(~r_final))
        tr_fp = _np(tr.column("fp"))
        pos = {fp: i for i, fp in enumerate(tr_fp)}
        idx = np.array([pos.get(fp, -1) for fp in f_fp], dtype=np.int64)
        hit = idx >= 0
        if hit.any():
            F = _replace_where(F, hit, idx, tr, ["retries", "not_before", "last_error"])
    dropped = _np(R.column("dropped"), False).astype(bool) & r_final
    visited_now = r_fp[r_final & ~dropped]   # these get a visited row this round
    dropped_fps = r_fp[dropped]               # these get a filtered row this round
    blocks_seeds = sorted_unique(np.concatenate([seen[HARD], final_fps]))
    blocks_links = sorted_unique(np.concatenate([blocks_seeds, seen[REFUSED]]))

    # 2. candidates: drop seen ones; update known frontier rows; add the rest.
    new_rows = tables.FRONTIER.empty_table()
    if C.num_rows:
        stats["links_in"] = C.num_rows
        c_fp = _np(C.column("dst_fp"))
        is_seed = _np(pc.equal(C.column("source"), tables.SOURCE_SEED), False).astype(bool)
        blocked = np.where(is_seed, member(c_fp, blocks_seeds), member(c_fp, blocks_links))
        C = C.filter(pa.array(~blocked))
        stats["links_to_seen"] = int(len(c_fp) - C.num_rows)
    if C.num_rows:
        A = _aggregate_candidates(C)
        a_fp = _np(A.column("dst_fp"))
        f_fp = _np(F.column("fp"))
        known = _isin(a_fp, f_fp)
        if known.any():
            F = _update_known(F, A.filter(pa.array(known)))
        fresh = A.filter(pa.array(~known))
        n = fresh.num_rows
        if n:
            new_rows = pa.Table.from_arrays([
                fresh.column("dst_fp"), fresh.column("dst"), fresh.column("host"),
                fresh.column("depth"), pa.array(np.zeros(n), pa.float64()),
                pa.array(np.full(n, round_no, dtype=np.int32)), fresh.column("source"),
                fresh.column("src"), fresh.column("inlinks"), fresh.column("anchors"),
                pa.array(np.zeros(n, dtype=np.int32)), pa.array(np.zeros(n)),
                pa.nulls(n, pa.string()), pa.array(np.zeros(n)), pa.array(np.zeros(n)),
                fresh.column("lastmod"), fresh.column("redirects").fill_null(0),
                *(fresh.column(name) for name in FOCUS_COLUMNS),
                fresh.column("method"), fresh.column("request_body"),   # deep web POSTs
            ], schema=tables.FRONTIER)
        stats["new_urls"] = n
        stats["links_to_pending"] = int(known.sum())
    frontier = pa.concat_tables([F, new_rows]) if new_rows.num_rows else F

    # 3. filtered candidates: record each URL once, never one whose latest record is another
    # (known, or already filtered by the current settings); a URL dropped from the fetch list
    # (out of scope now) left the frontier, so it is always recorded.
    filtered = tables.FILTERED.empty_table()
    if X.num_rows:
        known_fps = np.concatenate([seen[HARD], seen[REFUSED], seen[FILTERED], visited_now,
                                    _np(frontier.column("fp"))])
        x_fp = _np(X.column("fp"))
        X = X.filter(pa.array(~_isin(x_fp, known_fps) | _isin(x_fp, dropped_fps)))
        if X.num_rows:
            X = X.take(pc.sort_indices(X, sort_keys=[("fp", "ascending"), ("url", "ascending")]))
            xf = _np(X.column("fp"))
            X = X.filter(pa.array(np.r_[True, xf[1:] != xf[:-1]]))
            sigs = signatures or {}
            refused_by = pa.array([sigs.get(r) for r in X.column("reason").to_pylist()], pa.string())
            filtered = pa.Table.from_arrays(
                [X.column("fp"), X.column("url"), X.column("reason"),
                 pa.array(np.full(X.num_rows, round_no, dtype=np.int32)), X.column("first_parent"),
                 X.column("depth"), X.column("source"), refused_by],
                schema=tables.FILTERED)
            for reason, count in zip(*np.unique(_np(filtered.column("reason")).astype(str),
                                                return_counts=True)):
                stats[f"filtered_{reason}"] = int(count)
    stats["frontier_rows"] = frontier.num_rows
    return frontier, filtered, stats


def _replace_where(F, hit, idx, src, columns):
    """F with `columns` taken from src[idx] on the rows where `hit`."""
    take = pa.array(np.where(hit, idx, 0), type=pa.int64())
    mask = pa.array(hit)
    for name in columns:
        new = src.column(name).take(take)
        col = pc.if_else(mask, new, F.column(name))
        F = F.set_column(F.schema.get_field_index(name), name, col.cast(F.schema.field(name).type))
    return F


def _update_known(F, A):
    """Merge aggregated candidates A (all present in F) into F's inlinks, depth and anchors."""
    f_fp = _np(F.column("fp"))
    pos = {fp: i for i, fp in enumerate(_np(A.column("dst_fp")))}
    idx = np.array([pos.get(fp, -1) for fp in f_fp], dtype=np.int64)
    hit = idx >= 0
    take = np.where(hit, idx, 0)
    inl = _np(F.column("inlinks"), 0) + np.where(hit, _np(A.column("inlinks"))[take], 0)
    depth = _np(F.column("depth"), 0)
    a_depth = _np(A.column("depth"), 0)[take]
    depth = np.where(hit, np.minimum(depth, a_depth), depth).astype(np.int32)
    old_anchors = F.column("anchors").to_pylist()
    new_anchors = A.column("anchors").to_pylist()
    for i in np.flatnonzero(hit):
        old = old_anchors[i] or []
        if len(old) < tables.MAX_ANCHORS:
            extra = [a for a in new_anchors[idx[i]] if a not in old]
            old_anchors[i] = (old + extra)[:tables.MAX_ANCHORS]
    for name in FOCUS_COLUMNS:   # the best score (depth bound) any link gave it
        old, new = F.column(name), A.column(name).take(pa.array(take))
        if new.null_count < len(new):
            o, nv = _or_ninf(old), _or_ninf(new)
            best = np.where(hit, np.maximum(o, nv), o)
            has = np.isfinite(best)
            F = F.set_column(F.schema.get_field_index(name), name, pa.array(
                np.where(has, best, 0), mask=~has).cast(F.schema.field(name).type))
    F = F.set_column(F.schema.get_field_index("inlinks"), "inlinks", pa.array(inl, pa.int64()))
    F = F.set_column(F.schema.get_field_index("depth"), "depth", pa.array(depth, pa.int32()))
    return F.set_column(F.schema.get_field_index("anchors"), "anchors",
                        pa.array(old_anchors, pa.list_(pa.string())))
