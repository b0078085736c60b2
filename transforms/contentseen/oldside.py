"""Content-seen's old side: what this round's pages are checked against in the visited view
of every committed round (plain functions; `step.OldHits` runs them as Beam steps).

The old side in two phases (OldHits), so a round's work on the visited view is a scan of
narrow columns plus wide reads of the few pages that matter:
  1. narrow, every visited row group: fp, round, content_fp, lsh_keys are probed map-side
     against this round's content fingerprints and band keys (side inputs sized by the
     round). Matches are reduced to what the decisions can use, first in the row group,
     then across the view: per content fingerprint the first old page by (round, fp) (the
     only old row `exact_duplicates` can name), per band key the `max_group` earliest old
     pages (the only ones `candidate_pairs` compares). A row group whose rows have no
     `lsh_keys` (a file written before the column) gets them from its `minhash` here.
  2. wide, hit row groups only (ReadHits): `read_rows` reads EXACT_COLUMNS of the hit
     rows of each row group with exact hits and hands them to ContentSeen; once the
     round's exact duplicates are known, near hits under band keys that only duplicates
     have are dropped, and NEAR_COLUMNS (minhash) of the remaining near hits are read
     for NearDuplicates. Both give what they give with the whole view.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables
from transforms.contentseen import fingerprints as contentseen
from transforms.urls.fpsets import FpIndex, member

OLD_COLUMNS = ["fp", "round", "content_fp", "lsh_keys"]            # phase 1: every row
EXACT_COLUMNS = ["fp", "url", "host", "round", "content_fp"]        # phase 2: exact hits
NEAR_COLUMNS = ["fp", "url", "round", "minhash", "duplicate_of",    # phase 2: near hits
                "near_cluster_fp", "near_cluster_round"]
COMPAT_COLUMNS = ["fp", "minhash", "duplicate_of"]  # phase 1 of a row group without lsh_keys
EXACT, NEAR = "exact", "near"


def _pairs(dup_table):
    return zip(dup_table.column("fp").to_pylist(), dup_table.column("duplicate_of").to_pylist())


def mark_duplicates(table, dups):
    """`dups`: {fp: url of the first page with that content}."""
    if not dups or table.num_rows == 0:
        return table
    fps = table.column("fp").to_pylist()
    hit = pa.array([fp in dups for fp in fps])
    of = pa.array([dups.get(fp) for fp in fps], pa.string())
    table = table.set_column(table.schema.get_field_index("duplicate_of"), "duplicate_of",
                             pc.if_else(hit, of, table.column("duplicate_of")))
    if "lsh_keys" in table.column_names:    # a duplicate is never an earlier near-duplicate
        i = table.schema.get_field_index("lsh_keys")
        table = table.set_column(i, "lsh_keys", pc.if_else(
            hit, pa.scalar([], table.schema.field(i).type), table.column(i)))
    return table.set_column(table.schema.get_field_index("outcome"), "outcome",
                            pc.if_else(hit, pa.scalar(tables.DUPLICATE), table.column("outcome")))


def _drop_rows(table, dups):
    if not dups:
        return table
    return table.filter(pa.array([fp not in dups for fp in table.column("fp").to_pylist()]))


def not_duplicate(table):
    """Rows for near-duplicate search: with a signature and not an exact duplicate."""
    mask = pc.and_(pc.is_valid(table.column("minhash")), pc.is_null(table.column("duplicate_of")))
    return table.filter(mask).select(
        [c for c in ("fp", "url", "round", "minhash", "near_cluster_fp", "near_cluster_round")
         if c in table.column_names])


# --------------------------------------------------------------------------- old side, phase 1
def _earliest_per_key(keys, rnd, fp, limit):
    """Positions of the `limit` smallest (round, fp) of each key (all when limit is 0)."""
    order = np.lexsort((fp, rnd, keys))
    if limit and len(order):
        k = keys[order]
        pos = np.arange(len(k))
        start = np.maximum.accumulate(np.where(np.r_[True, k[1:] != k[:-1]], pos, 0))
        order = order[pos - start < limit]
    return order


def band_keys_by_row(table, compat=None, params=contentseen.LSH_PARAMS):
    """(row, key) int64 arrays of every band key of `table`'s rows: its `lsh_keys`, and for
    rows where they are null, keys computed from the `minhash` of `compat` (a table aligned
    with `table`, default `table` itself) if the row has one and no duplicate_of."""
    n = table.num_rows
    if "lsh_keys" in table.column_names:
        rows, keys, missing = contentseen.lsh_keys_of(table.column("lsh_keys"))
    else:
        rows, keys, missing = np.zeros(0, np.int64), np.zeros(0, np.int64), np.ones(n, bool)
    compat = table if compat is None else compat
    if missing.any() and "minhash" in compat.column_names:
        sigs, ok = contentseen.signatures_of(compat.column("minhash"))
        ok &= missing
        if "duplicate_of" in compat.column_names:
            ok &= np.asarray(compat.column("duplicate_of").is_null().to_numpy(zero_copy_only=False),
                             dtype=bool)
        idx = np.flatnonzero(ok)
        if len(idx):
            bands, r = params
            rows = np.concatenate([rows, np.repeat(idx, bands)])
            keys = np.concatenate([keys, contentseen.band_keys(sigs[idx], bands, r).reshape(-1)])
    return rows, keys


def new_content_keys(table):
    """This round's content fingerprints (0 and null left out)."""
    k = table.column("content_fp").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return k[k != 0]


def new_band_keys(table):
    """This round's band keys (its pages' `lsh_keys`, or computed from `minhash`)."""
    return band_keys_by_row(table)[1]


def _hits(kind, keys, rows, rnd, fp, path, index, limit):
    keep = _earliest_per_key(keys, rnd[rows], fp[rows], limit)
    return [((kind, int(keys[j])), (int(rnd[rows[j]]), int(fp[rows[j]]), path, index, int(rows[j]), kind))
            for j in keep]


def _contains(values, keys):
    return keys.contains(values) if isinstance(keys, FpIndex) else member(values, keys)


def probe_row_group(path, index, table, content_keys, band_keys=None,
                    max_group=contentseen.MAX_GROUP, round_no=0, read_row_group=None):
    """Phase 1 on one row group of the visited view (columns OLD_COLUMNS).

    `content_keys`, `band_keys`: this round's keys, sorted int64 arrays or FpIndex.
    Returns (hits, compat): hits are ((kind, key), (round, fp, path, index, row, kind)) for
    kind EXACT (key: a content fingerprint of this round; the row group's first page by
    (round, fp) with it) and NEAR (key: a band key of this round; its `max_group` earliest
    pages, all when 0); `read_row_group(path, index, schema, columns)` reads more columns of
    this row group when its `lsh_keys` are missing (the caller's file reader); compat says the row group's `lsh_keys` were missing and its
    `minhash` was read to compute them (only when there are band keys to probe).
    """
    fp = table.column("fp").to_numpy(zero_copy_only=False).astype(np.int64)
    rnd = table.column("round").fill_null(round_no).to_numpy(zero_copy_only=False).astype(np.int64)
    out = []
    if content_keys is not None and len(content_keys):
        cfp = table.column("content_fp").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        rows = np.flatnonzero((cfp != 0) & _contains(cfp, content_keys))
        out += _hits(EXACT, cfp[rows], rows, rnd, fp, path, index, 1)
    compat = False
    if band_keys is not None and len(band_keys):
        missing = (table.column("lsh_keys").null_count if "lsh_keys" in table.column_names
                   else table.num_rows)
        wide = None
        if missing:
            compat = True
            wide = read_row_group(path, index, tables.VISITED, COMPAT_COLUMNS)
            check_fps(path, index, wide, fp)
        rows, keys = band_keys_by_row(table, wide)
        hit = _contains(keys, band_keys)
        out += _hits(NEAR, keys[hit], rows[hit], rnd, fp, path, index, max_group)
    return out, compat


def check_fps(path, index, table, fps):
    """The rows of `table`, read again from row group `index`, are still the pages `fps`."""
    got = table.column("fp").to_numpy(zero_copy_only=False)
    if len(got) != len(fps) or not np.array_equal(got.astype(np.int64), np.asarray(fps, np.int64)):
        raise tables.ParquetReadError(
            f"{path}: row group {index} changed between two reads of this round "
            f"(committed files must not be rewritten while a round runs)")


def read_hits(path, index, kind, hits, read_rows):
    """Phase 2 on one row group: (table of its hit rows read wide, rows decoded for it).

    `hits`: (row, fp) pairs (a row may repeat); kind EXACT gives EXACT_COLUMNS, NEAR gives
    fp, url, round, minhash of the rows with a signature and no duplicate_of (NEAR_COLUMNS
    are read). `read_rows(path, index, rows, schema, columns)` is the caller's file reader
    (`tableio.files.read_rows`: only those rows are kept, never the whole row group).
    """
    sel = dict(hits)
    idx = np.array(sorted(sel), np.int64)
    part, decoded = read_rows(path, index, idx, tables.VISITED, EXACT_COLUMNS if kind == EXACT
                              else NEAR_COLUMNS)
    check_fps(path, index, part, [sel[i] for i in idx])
    return (part if kind == EXACT else not_duplicate(part)), decoded


def earliest_hits(hits, max_group):
    """The hits of one (kind, key) the decisions can use: the earliest by (round, fp), one
    for EXACT, `max_group` for NEAR (all when 0). A hit is (round, fp, path, index, row, kind)."""
    hits = sorted(hits)
    limit = 1 if hits and hits[0][5] == EXACT else max_group
    return hits[:limit] if limit else hits
