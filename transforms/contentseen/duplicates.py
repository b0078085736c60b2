"""Exact duplicates, LSH candidate pairs and suspected mirrors over Arrow tables (pure)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from transforms.contentseen.clusters import head_columns
from transforms.contentseen.fingerprints import (
    DUPLICATES,
    MAX_GROUP,
    NUM_PERM,
    band_keys,
    jaccard_estimate,
    signature_column,
    signatures_of,
)
from transforms.urls.fpsets import member


def _bucket(keys: np.ndarray, buckets: int) -> np.ndarray:
    return (keys.view(np.uint64) % np.uint64(buckets)).astype(np.int64)


def _split(table: pa.Table, keys: np.ndarray, buckets: int):
    if table.num_rows == 0:
        return
    b = _bucket(keys, buckets)
    order = np.argsort(b, kind="stable")
    sb = b[order]
    cuts = np.flatnonzero(sb[1:] != sb[:-1]) + 1
    for idx in np.split(order, cuts):
        yield int(b[idx[0]]), table.take(pa.array(idx, type=pa.int64()))


def _col(t: pa.Table, name: str, fill=None) -> np.ndarray:
    c = t.column(name)
    if fill is not None:
        c = c.fill_null(fill)
    return c.to_numpy(zero_copy_only=False)


# --------------------------------------------------------------------------- exact (pure)
def exact_duplicates(new: pa.Table, old: pa.Table | None, round_no: int,
                     key: str = "content_fp") -> pa.Table:
    """DUPLICATES rows of `new` (this round) given `old` rows (fp, url, host, round, key)."""
    parts = []
    for t, is_new in ((new, True), (old, False)):
        if t is None or t.num_rows == 0:
            continue
        n = t.num_rows
        rnd = (np.full(n, round_no, np.int32) if is_new
               else _col(t, "round", round_no).astype(np.int32))
        text = lambda c: (t.column(c).cast(pa.string()) if c in t.column_names
                          else pa.nulls(n, pa.string()))
        parts.append(pa.table({
            "fp": t.column("fp").cast(pa.int64()), "url": text("url"), "host": text("host"),
            "key": t.column(key).cast(pa.int64()), "round": pa.array(rnd, pa.int32()),
            "new": pa.array(np.full(n, is_new))}))
    if not parts:
        return DUPLICATES.empty_table()
    T = pa.concat_tables(parts)
    k = _col(T, "key", 0).astype(np.int64)
    T = T.filter(pa.array(k != 0))
    if T.num_rows == 0:
        return DUPLICATES.empty_table()
    k = _col(T, "key").astype(np.int64)
    rnd = _col(T, "round").astype(np.int64)
    fp = _col(T, "fp").astype(np.int64)
    order = np.lexsort((fp, rnd, k))
    T = T.take(pa.array(order, type=pa.int64()))
    k, fp = k[order], fp[order]
    first = np.r_[True, k[1:] != k[:-1]]
    head = np.maximum.accumulate(np.where(first, np.arange(len(k)), 0))   # row of the first
    is_new = _col(T, "new").astype(bool)
    dup = is_new & (fp != fp[head])
    # one row per (url of this round): a page fetched twice in a round counts once
    rows = np.flatnonzero(dup)
    if len(rows) > 1:
        f = fp[rows]
        o = np.argsort(f, kind="stable")
        keep = np.r_[True, f[o][1:] != f[o][:-1]]
        rows = np.sort(rows[o][keep])
    idx = pa.array(rows, type=pa.int64())
    hidx = pa.array(head[rows], type=pa.int64())
    return pa.Table.from_arrays([
        T.column("fp").take(idx), T.column("url").take(idx), T.column("host").take(idx),
        pa.array(k[rows], pa.int64()), T.column("url").take(hidx), T.column("fp").take(hidx),
        T.column("host").take(hidx), T.column("round").take(hidx)], schema=DUPLICATES)


def new_key_rows(table: pa.Table, key: str, round_no: int) -> pa.Table:
    """This round's rows of `table` with a `key` (not 0/null): fp, url, host, key, round."""
    t = table.select([c for c in ("fp", "url", "host", key) if c in table.column_names])
    t = t.filter(pa.array(_col(t, key, 0) != 0))
    return t.append_column("round", pa.array(np.full(t.num_rows, round_no, np.int32)))


def tagged_duplicates(parts, round_no: int, key: str = "content_fp"):
    """[DUPLICATES table] of one key bucket's ("new" | "old", table) parts ([] if none)."""
    parts = list(parts)
    new_t = [t for tag, t in parts if tag == "new"]
    old_t = [t for tag, t in parts if tag == "old"]
    if not new_t:
        return []
    d = exact_duplicates(pa.concat_tables(new_t, promote_options="default"),
                         pa.concat_tables(old_t, promote_options="default") if old_t else None, round_no, key)
    return [d] if d.num_rows else []


def suspect_mirrors(duplicates: pa.Table, min_pages: int = 3) -> list[tuple[str, str, int]]:
    """(host, duplicate_of_host, pages) for host pairs with >= min_pages duplicate pages."""
    if duplicates is None or duplicates.num_rows == 0:
        return []
    d = duplicates.filter(pc.not_equal(duplicates.column("host"), duplicates.column("duplicate_of_host")))
    if d.num_rows == 0:
        return []
    g = d.group_by(["host", "duplicate_of_host"]).aggregate([("fp", "count")])
    out = [(r["host"], r["duplicate_of_host"], int(r["fp_count"])) for r in g.to_pylist()
           if r["fp_count"] >= min_pages]
    return sorted(out)


# --------------------------------------------------------------------------- near (pure)
def _band_rows(table: pa.Table, bands: int, rows: int, num_perm: int, is_new: bool,
               keep_keys: np.ndarray | None = None) -> tuple[pa.Table, np.ndarray]:
    """(table of one row per (page, band), band key per row) for pages with a signature."""
    sigs, valid = signatures_of(table.column("minhash"), num_perm)
    idx = np.flatnonzero(valid)
    if len(idx) == 0:
        return None, None
    keys = band_keys(sigs[idx], bands, rows)               # [m, bands]
    page = np.repeat(idx, bands)
    band = np.tile(np.arange(bands, dtype=np.int32), len(idx))
    flat = keys.reshape(-1)
    if keep_keys is not None:
        m = member(flat, keep_keys)
        page, band, flat = page[m], band[m], flat[m]
        if len(page) == 0:
            return None, None
    take = pa.array(page, type=pa.int64())
    fps = table.column("fp").to_numpy(zero_copy_only=False).astype(np.int64)
    rnds = table.column("round").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    head_fp, head_round = head_columns(table, fps, rnds)
    out = pa.table({
        "key": pa.array(flat, pa.int64()), "band": pa.array(band, pa.int32()),
        "fp": table.column("fp").take(take).cast(pa.int64()),
        "url": table.column("url").take(take).cast(pa.string()),
        "round": table.column("round").take(take).cast(pa.int32()),
        "new": pa.array(np.full(len(page), is_new)),
        "minhash": signature_column(sigs[page]),
        "head_fp": pa.array(head_fp[page], pa.int64()),
        "head_round": pa.array(head_round[page], pa.int32()),
    })
    return out, flat


def candidate_pairs(band_tables, bands: int, rows: int, num_perm: int = NUM_PERM,
                    threshold: float = 0.0, max_group: int = MAX_GROUP) -> list[tuple]:
    """NEAR_PAIRS tuples from band rows of one bucket: same band slice, >= 1 page new."""
    parts = [t for t in band_tables if t is not None and t.num_rows]
    if not parts:
        return []
    T = pa.concat_tables(parts)
    key = _col(T, "key").astype(np.int64)
    band = _col(T, "band").astype(np.int64)
    fp = _col(T, "fp").astype(np.int64)
    rnd = _col(T, "round").astype(np.int64)
    new = _col(T, "new").astype(bool)
    order = np.lexsort((fp, rnd, band, key))
    key, band, fp, rnd, new = key[order], band[order], fp[order], rnd[order], new[order]
    T = T.take(pa.array(order, type=pa.int64()))
    sigs, _ = signatures_of(T.column("minhash"), num_perm)
    urls = T.column("url").to_pylist()
    grp_start = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]) | (band[1:] != band[:-1])])
    grp_end = np.r_[grp_start[1:], len(key)]
    out = []
    for s, e in zip(grp_start, grp_end):
        if e - s < 2 or not new[s:e].any():
            continue
        b = int(band[s])
        sl = slice(b * rows, (b + 1) * rows)
        members = np.arange(s, e)
        for i in np.flatnonzero(new[s:e]) + s:
            others = members[members != i]
            # earlier (round, fp) first; a new-new pair is produced once, from its later page
            others = others[(rnd[others] < rnd[i]) | ((rnd[others] == rnd[i]) & (fp[others] < fp[i]))]
            if max_group and len(others) > max_group:
                others = others[:max_group]
            if not len(others):
                continue
            same = (sigs[others, sl] == sigs[i, sl]).all(axis=1)
            others = others[same]
            if not len(others):
                continue
            j = jaccard_estimate(sigs[others], sigs[i][None, :])
            for o, jv in zip(others[j >= threshold], j[j >= threshold]):
                if fp[o] == fp[i]:
                    continue
                out.append((int(fp[i]), urls[i], int(rnd[i]), int(fp[o]), urls[o], int(rnd[o]),
                            float(jv)))
    return out


# --------------------------------------------------------------------------- Beam

def round_stats(duplicates: pa.Table | None, near_pairs: list | None, mirrors: list | None) -> dict:
    """The round report's content-seen counters."""
    return {"exact_duplicates": 0 if duplicates is None else duplicates.num_rows,
            "near_duplicates": len({p["fp"] if isinstance(p, dict) else p[0] for p in near_pairs or []}),
            "mirror_hosts_suspected": len({m[0] for m in mirrors or []})}
