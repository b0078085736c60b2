"""Content-seen: exact duplicates, near-duplicates (MinHash + LSH) and suspected mirrors.

URL-seen stops a URL from being fetched twice; content-seen stops the *same content* under
another URL (mirrors, copies, query-order variants) from being expanded again. Both work
across all rounds: this round's pages are checked against the visited view of every
committed round, and only a map-side semi-join of the visited view reaches the shuffle.

Contract
========

Fingerprints (pure, per page; the round computes them in Process and stores them in VISITED)

- ``body_fingerprint(body, url) -> int64``: blake2b-8 of the *normalised* body: the page's
  own host name (any case, e.g. ``HTTP://MiRrOr1.example``) replaced by a placeholder,
  ``<link rel=canonical>`` tags removed (a mirror points them at the original) and runs
  of ASCII whitespace collapsed, so a mirror that writes absolute links to itself gives
  the same fingerprint as the original. 0 for an empty body. -> ``content_fp``.
- ``text_fingerprint(text) -> int64``: blake2b-8 of the visible text, whitespace
  collapsed (equal to ``process.content_fingerprint(text.encode())`` for collapsed text).
  -> ``text_fp``.
- ``minhash_signatures(texts, num_perm=128, shingle=2, seed=1) -> uint32[n, num_perm]``:
  datasketch MinHash (``MinHash.bulk``) over lower-cased word ``shingle``-grams of the
  visible text; ``signature_column`` makes the Arrow column ``minhash`` (list<uint32>),
  null for a page with fewer than ``MIN_WORDS`` words (never a near-duplicate).
  Column to add to VISITED: ``MINHASH_FIELD = ("minhash", list<uint32>)``.
- ``lsh_key_column(sigs, has) -> list<int64>``: the ``band_keys`` of each signature with
  ``LSH_PARAMS`` (16 keys), ``[]`` where ``has`` is False -> VISITED ``lsh_keys``, so a
  later round probes old pages by this narrow column instead of banding 128 values each;
  ``lsh_keys_of(column)`` flattens it to (row, key) pairs and names the null rows (files
  written before the column: their keys come from ``minhash``, ``band_keys`` again).

ContentSeen(key="content_fp", buckets=16)  -- exact duplicates

  input  dict of PCollections of Arrow tables:
         ``new``: this round's fetched pages with content: columns fp, url, host, content_fp
                  (round is the transform's round_no; rows with content_fp 0/null ignored);
         ``old``: the visited view of committed rounds, columns fp, url, host, round,
                  content_fp (read with ReadAllFromParquetBatched(columns=...)); url and
                  host may be left out to read less (then duplicate_of / duplicate_of_host
                  are null for old firsts, and duplicate_of_fp names them).
  output PCollection of Arrow tables ``DUPLICATES``, one row per duplicate page of this
         round: fp, url, host, content_fp, duplicate_of (url), duplicate_of_fp,
         duplicate_of_host, duplicate_of_round.
  rule   per content fingerprint, the first page is the one with the smallest
         (round, fp) over old and new rows; every *other* URL of this round with that
         fingerprint is its duplicate. A re-fetch of the first URL itself is not a
         duplicate. Deterministic: independent of bundle/worker order.
  caller sets visited.duplicate_of (and outcome=duplicate, if so configured) for these
         fps and drops their links before URL-seen (links of duplicates are not expanded).
  cost   the old side is filtered map-side against a side input holding this round's
         fingerprints (one sorted int64 array), so only matching rows are shuffled; the
         visited view is read once, by column.

NearDuplicates(threshold=0.9, num_perm=128, buckets=16, max_group=200, params=LSH_PARAMS,
               min_jaccard=None)
  -- MinHash LSH. `threshold` picks the bands; pairs are kept when their Jaccard estimate
  is >= min_jaccard (default: threshold; 0 keeps every LSH candidate pair).

  input  dict: ``new`` (this round) and ``old`` (visited view): tables with columns fp,
         url, round, minhash (list<uint32>, nulls skipped). Exact duplicates should be
         left out of ``new`` (they are reported by ContentSeen), and ``old`` may be
         restricted to rows whose duplicate_of is null.
  steps  band keys (b bands of r rows: ``LSH_PARAMS`` = (16, 8) by default, the same bands
         as ``MinHashLSH(threshold, num_perm, params=(16, 8))``; ``params=None`` for
         datasketch's own optimum, (5, 25) at 0.9/128, which misses half the pairs at
         Jaccard 0.92) -> old rows kept
         only if one of their band keys is a band key of this round (side input) ->
         GroupByKey on band-key bucket -> candidate pairs (band slices equal, at least one
         page new) -> Jaccard estimate (share of equal MinHash values) >= threshold ->
         distinct pairs.
  output PCollection of dicts ``NEAR_PAIRS`` fields: fp, url, round (the later page by
         (round, fp)), of_fp, of_url, of_round (the earlier), jaccard. Pairs between two
         old pages are not repeated (they were reported in their round).
  limit  a band bucket holding more than ``max_group`` pages with one key pairs each new
         page with the ``max_group`` earliest others only (bounds the O(g^2) of
         boilerplate pages); 0 = no limit.

SuspectMirrors(min_pages=3): from the DUPLICATES tables, (host, duplicate_of_host, pages)
  for host pairs with at least ``min_pages`` duplicate pages this round.
``round_stats`` / ContentSeenStats: {"exact_duplicates", "near_duplicates",
  "mirror_hosts_suspected"} for the round's report.
"""
from __future__ import annotations

import hashlib
import re

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from transforms.fpsets import member, sorted_unique

NUM_PERM = 128
SHINGLE = 2            # word bigrams: a one-word edit in a 100-word page keeps J ~ 0.92
SEED = 1
THRESHOLD = 0.9
MIN_WORDS = 5          # pages with fewer words get no signature
MAX_GROUP = 200
# (bands, rows): recall-favouring banding. datasketch's default for 0.9/128, (5, 25), makes
# a pair with Jaccard 0.92 a candidate only half the time; (16, 8) almost always, and the
# Jaccard estimate >= threshold keeps precision. MinHashLSH(params=(16, 8)) is the same.
LSH_PARAMS = (16, 8)

MINHASH_TYPE = pa.list_(pa.uint32())
MINHASH_FIELD = pa.field("minhash", MINHASH_TYPE)

DUPLICATES = pa.schema([
    ("fp", pa.int64()),
    ("url", pa.string()),
    ("host", pa.string()),
    ("content_fp", pa.int64()),
    ("duplicate_of", pa.string()),
    ("duplicate_of_fp", pa.int64()),
    ("duplicate_of_host", pa.string()),
    ("duplicate_of_round", pa.int32()),
])

NEAR_PAIRS = ("fp", "url", "round", "of_fp", "of_url", "of_round", "jaccard")

_WS = re.compile(rb"[ \t\r\n\f\v]+")
_CANONICAL = re.compile(rb"<link\b[^>]*\brel\s*=\s*[\"']?canonical\b[^>]*>", re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)


# --------------------------------------------------------------------------- fingerprints
def _fp64(data: bytes) -> int:
    if not data:
        return 0
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def _host_of(url: str) -> str:
    rest = url.split("://", 1)[-1]
    host = re.split(r"[/?#]", rest, maxsplit=1)[0]
    host = host.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host.split("]")[0] + "]"
    return host.split(":", 1)[0]


def normalise_body(body: bytes, url: str | None) -> bytes:
    """The body without rel=canonical links, its own host name (case-insensitive) replaced
    and whitespace collapsed."""
    if not body:
        return b""
    body = _CANONICAL.sub(b"", body)
    if url:
        host = _host_of(url).encode("ascii", "ignore")
        if host:
            body = re.sub(re.escape(host), b"\x00HOST\x00", body, flags=re.IGNORECASE)
    return _WS.sub(b" ", body).strip()


def body_fingerprint(body: bytes, url: str | None = None) -> int:
    """64-bit fingerprint of the normalised body (0 for an empty body): `content_fp`."""
    return _fp64(normalise_body(body, url))


def text_fingerprint(text: str) -> int:
    """64-bit fingerprint of the visible text, whitespace collapsed (0 if empty): `text_fp`."""
    return _fp64(" ".join((text or "").split()).encode("utf-8"))


# --------------------------------------------------------------------------- MinHash
def shingles(text: str, k: int = SHINGLE) -> list:
    """Distinct lower-cased word k-grams of text, as UTF-8 bytes (the MinHash input)."""
    ws = _WORD.findall((text or "").lower())
    if len(ws) < MIN_WORDS:
        return []
    if len(ws) < k:
        return [" ".join(ws).encode("utf-8")]
    return list({" ".join(ws[i:i + k]).encode("utf-8") for i in range(len(ws) - k + 1)})


def minhash_signatures(texts, num_perm: int = NUM_PERM, shingle: int = SHINGLE,
                       seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """(uint32[n, num_perm] signatures, bool[n] has_signature) of texts (datasketch MinHash)."""
    from datasketch import MinHash
    sh = [shingles(t, shingle) for t in texts]
    has = np.array([bool(s) for s in sh], dtype=bool)
    sigs = np.full((len(sh), num_perm), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    idx = np.flatnonzero(has)
    if len(idx):
        mhs = MinHash.bulk([sh[i] for i in idx], num_perm=num_perm, seed=seed)
        sigs[idx] = np.stack([m.hashvalues for m in mhs]).astype(np.uint32)
    return sigs, has


def signature_column(sigs: np.ndarray, has: np.ndarray | None = None) -> pa.Array:
    """The `minhash` column (list<uint32>; null where `has` is False) of signatures."""
    n, k = sigs.shape
    offsets = pa.array(np.arange(0, (n + 1) * k, k, dtype=np.int32))
    mask = None if has is None else pa.array(~np.asarray(has, dtype=bool))
    return pa.ListArray.from_arrays(offsets, pa.array(sigs.reshape(-1), pa.uint32()), mask=mask)


def signatures_of(column, num_perm: int = NUM_PERM) -> tuple[np.ndarray, np.ndarray]:
    """(uint32[n, num_perm], valid[n]) from a `minhash` column (null rows are zero)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    valid = ~np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    out = np.zeros((n, num_perm), np.uint32)
    if valid.any():
        good = column.filter(pa.array(valid))
        flat = good.flatten().to_numpy(zero_copy_only=False).astype(np.uint32)
        out[valid] = flat.reshape(-1, num_perm)
    return out, valid


def jaccard_estimate(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Share of equal MinHash values, row by row (datasketch MinHash.jaccard)."""
    return (np.asarray(a) == np.asarray(b)).mean(axis=-1)


def lsh_params(threshold: float = THRESHOLD, num_perm: int = NUM_PERM) -> tuple[int, int]:
    """(bands, rows) that datasketch's MinHashLSH picks for threshold and num_perm."""
    from datasketch.lsh import _optimal_param
    return _optimal_param(threshold, num_perm, 0.5, 0.5)


_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)


def band_keys(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """int64[n, bands]: a 64-bit hash of each band's `rows` MinHash values (and its index).

    Equal band slices give equal keys; different slices collide with probability ~2^-64,
    and candidate pairs are checked on the slices themselves, so results are exact.
    """
    s = sigs.astype(np.uint64)
    out = np.empty((len(sigs), bands), np.uint64)
    with np.errstate(over="ignore"):
        for b in range(bands):
            h = np.full(len(sigs), np.uint64(b + 1) * _M1, dtype=np.uint64)
            for j in range(b * rows, (b + 1) * rows):
                h = (h ^ s[:, j]) * _M2
                h ^= h >> np.uint64(31)
            out[:, b] = h
    return out.view(np.int64)


LSH_KEYS_TYPE = pa.list_(pa.int64())


def lsh_key_column(sigs: np.ndarray, has: np.ndarray | None = None,
                   params: tuple[int, int] = LSH_PARAMS) -> pa.Array:
    """The `lsh_keys` column (list<int64>) of signatures: each row's `bands` band keys (as
    NearDuplicates computes them with `params`), [] where `has` is False."""
    bands, rows = params
    n = len(sigs)
    has = np.ones(n, bool) if has is None else np.asarray(has, dtype=bool)
    idx = np.flatnonzero(has)
    keys = band_keys(sigs[idx], bands, rows) if len(idx) else np.zeros((0, bands), np.int64)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.where(has, bands, 0), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(keys.reshape(-1), pa.int64()))


def lsh_keys_of(column) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row int64[m], key int64[m], missing bool[n]) of an `lsh_keys` column: every stored
    key with its row, and the rows whose keys are null (not computed when written)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    missing = np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    keys = pc.list_flatten(column).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    rows = pc.list_parent_indices(column).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return rows, keys, missing


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


def _concat_arrays(arrays) -> np.ndarray:
    arrays = [np.asarray(a, np.int64) for a in arrays if a is not None and len(a)]
    return sorted_unique(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)


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
    out = pa.table({
        "key": pa.array(flat, pa.int64()), "band": pa.array(band, pa.int32()),
        "fp": table.column("fp").take(take).cast(pa.int64()),
        "url": table.column("url").take(take).cast(pa.string()),
        "round": table.column("round").take(take).cast(pa.int32()),
        "new": pa.array(np.full(len(page), is_new)),
        "minhash": signature_column(sigs[page]),
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
class _SortedKeys(beam.CombineFn):
    """Combines int64 arrays into one sorted array of distinct values (a side input)."""

    def create_accumulator(self):
        return []

    def add_input(self, acc, arr):
        acc.append(np.asarray(arr, np.int64))
        return acc

    def merge_accumulators(self, accs):
        return [_concat_arrays([a for acc in accs for a in acc])]

    def extract_output(self, acc):
        return _concat_arrays(acc)


class ContentSeen(beam.PTransform):
    """Exact duplicates of this round's pages against all rounds (see the module contract)."""

    def __init__(self, round_no: int, key: str = "content_fp", buckets: int = 16):
        super().__init__()
        self.round_no, self.key, self.buckets = round_no, key, buckets

    def expand(self, inputs):
        key, B, rnd = self.key, self.buckets, self.round_no

        def new_rows(t):
            t = t.select([c for c in ("fp", "url", "host", key) if c in t.column_names])
            k = _col(t, key, 0)
            t = t.filter(pa.array(k != 0))
            return t.append_column("round", pa.array(np.full(t.num_rows, rnd, np.int32)))

        new = inputs["new"] | "NewRows" >> beam.Map(new_rows)
        keys = (new | "NewKeys" >> beam.Map(lambda t: _col(t, key))
                | "KeySet" >> beam.CombineGlobally(_SortedKeys()))

        def old_rows(t, keyset):
            k = _col(t, key, 0).astype(np.int64)
            m = member(k, keyset) & (k != 0)
            if m.any():
                yield t.filter(pa.array(m)).select(
                    [c for c in ("fp", "url", "host", "round", key) if c in t.column_names])

        old = inputs["old"] | "OldMatching" >> beam.FlatMap(old_rows, beam.pvalue.AsSingleton(keys))

        def split(t, tag):
            for b, part in _split(t, _col(t, key).astype(np.int64), B):
                yield b, (tag, part)

        grouped = ((new | "SplitNew" >> beam.FlatMap(split, "new"),
                    old | "SplitOld" >> beam.FlatMap(split, "old"))
                   | "FlattenParts" >> beam.Flatten()
                   | "GroupByContent" >> beam.GroupByKey())

        def decide(element):
            _, parts = element
            parts = list(parts)
            new_t = [p for tag, p in parts if tag == "new"]
            old_t = [p for tag, p in parts if tag == "old"]
            nt = pa.concat_tables(new_t, promote_options="default") if new_t else None
            ot = pa.concat_tables(old_t, promote_options="default") if old_t else None
            if nt is None:
                return
            d = exact_duplicates(nt, ot, rnd, key)
            if d.num_rows:
                yield d

        return grouped | "DecideDuplicates" >> beam.FlatMap(decide)


class NearDuplicates(beam.PTransform):
    """MinHash LSH banding in Beam across all rounds (see the module contract)."""

    def __init__(self, threshold: float = THRESHOLD, num_perm: int = NUM_PERM, buckets: int = 16,
                 max_group: int = MAX_GROUP, params: tuple[int, int] | None = LSH_PARAMS,
                 min_jaccard: float | None = None):
        super().__init__()
        self.threshold = threshold if min_jaccard is None else min_jaccard
        self.num_perm, self.buckets = num_perm, buckets
        self.max_group = max_group
        self.bands, self.rows = params or lsh_params(threshold, num_perm)

    def expand(self, inputs):
        bands, rows, P, B = self.bands, self.rows, self.num_perm, self.buckets
        thr, mg = self.threshold, self.max_group

        def new_bands(t):
            out, keys = _band_rows(t, bands, rows, P, True)
            if out is not None:
                yield out

        nb = inputs["new"] | "NewBandRows" >> beam.FlatMap(new_bands)
        keyset = (nb | "NewBandKeys" >> beam.Map(lambda t: _col(t, "key"))
                  | "BandKeySet" >> beam.CombineGlobally(_SortedKeys()))

        def old_bands(t, ks):
            if len(ks) == 0:
                return
            out, _ = _band_rows(t, bands, rows, P, False, keep_keys=ks)
            if out is not None:
                yield out

        ob = inputs["old"] | "OldBandRows" >> beam.FlatMap(old_bands, beam.pvalue.AsSingleton(keyset))

        def split(t):
            yield from _split(t, _col(t, "key").astype(np.int64), B)

        pairs = ((nb, ob) | "AllBandRows" >> beam.Flatten()
                 | "SplitBands" >> beam.FlatMap(split)
                 | "GroupBands" >> beam.GroupByKey()
                 | "CandidatePairs" >> beam.FlatMap(
                     lambda kv: candidate_pairs(kv[1], bands, rows, P, thr, mg))
                 | "DistinctPairs" >> beam.Distinct())
        return pairs | "PairDicts" >> beam.Map(lambda t: dict(zip(NEAR_PAIRS, t)))


class SuspectMirrors(beam.PTransform):
    """(host, duplicate_of_host, pages) from DUPLICATES tables, pairs >= min_pages."""

    def __init__(self, min_pages: int = 3):
        super().__init__()
        self.min_pages = min_pages

    def expand(self, duplicates):
        mp = self.min_pages
        return (duplicates
                | "HostPairs" >> beam.FlatMap(lambda t: [
                    ((h, o), 1) for h, o in zip(t.column("host").to_pylist(),
                                                t.column("duplicate_of_host").to_pylist())
                    if h != o])
                | "CountHostPairs" >> beam.CombinePerKey(sum)
                | "AtLeast" >> beam.FlatMap(lambda kv: [(kv[0][0], kv[0][1], kv[1])]
                                            if kv[1] >= mp else []))


def round_stats(duplicates: pa.Table | None, near_pairs: list | None, mirrors: list | None) -> dict:
    """The round report's content-seen counters."""
    return {"exact_duplicates": 0 if duplicates is None else duplicates.num_rows,
            "near_duplicates": len({p["fp"] if isinstance(p, dict) else p[0] for p in near_pairs or []}),
            "mirror_hosts_suspected": len({m[0] for m in mirrors or []})}


class ContentSeenStats(beam.PTransform):
    """Per-round counters as one dict: exact_duplicates, near_duplicates (pages), mirror_hosts_suspected."""

    def expand(self, inputs):
        exact = (inputs["duplicates"] | "CountExact" >> beam.Map(lambda t: t.num_rows)
                 | "SumExact" >> beam.CombineGlobally(sum))
        near = (inputs["near"] | "NearFps" >> beam.Map(lambda d: d["fp"]) | "DistinctNear" >> beam.Distinct()
                | "CountNear" >> beam.combiners.Count.Globally())
        mirrors = (inputs["mirrors"] | "MirrorHosts" >> beam.Map(lambda m: m[0])
                   | "DistinctMirrors" >> beam.Distinct()
                   | "CountMirrors" >> beam.combiners.Count.Globally())
        return (exact | "Stats" >> beam.Map(
            lambda e, n, m: {"exact_duplicates": e, "near_duplicates": n, "mirror_hosts_suspected": m},
            beam.pvalue.AsSingleton(near), beam.pvalue.AsSingleton(mirrors)))
