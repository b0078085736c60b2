"""Content-seen's fingerprints: what a page's content is reduced to (plain functions).

URL-seen stops a URL from being fetched twice; content-seen stops the *same content* under
another URL (mirrors, copies, query-order variants) from being expanded again. Both work
across all rounds: this round's pages are checked against the visited view of every
committed round, and only a map-side semi-join of the visited view reaches the shuffle.

Contract
========

Fingerprints (per page; the page step computes them and VISITED stores them)

- ``body_fingerprint(body, url) -> int64``: blake2b-8 of the *normalised* body: the page's
  own host name (any case, e.g. ``HTTP://MiRrOr1.example``) replaced by a placeholder,
  ``<link rel=canonical>`` tags removed (a mirror points them at the original) and runs
  of ASCII whitespace collapsed, so a mirror that writes absolute links to itself gives
  the same fingerprint as the original. 0 for an empty body. -> ``content_fp``.
- ``text_fingerprint(text) -> int64``: blake2b-8 of the visible text, whitespace
  collapsed (a blake2b-8 of the collapsed text's UTF-8 bytes).
  -> ``text_fp``.
- ``minhash_signatures(texts, num_perm=128, shingle=2, seed=1) -> uint32[n, num_perm]``:
  datasketch's MinHash (``scheme="affine32"``, its default since 2.0), computed for a batch
  with numpy, over lower-cased word ``shingle``-grams of the visible text; ``signature_column`` makes the Arrow column ``minhash`` (list<uint32>),
  null for a page with fewer than ``MIN_WORDS`` words (never a near-duplicate).
  Column to add to VISITED: ``MINHASH_FIELD = ("minhash", list<uint32>)``.
- ``lsh_key_column(sigs, has) -> list<int64>``: the ``band_keys`` of each signature with
  ``LSH_PARAMS`` (16 keys), ``[]`` where ``has`` is False -> VISITED ``lsh_keys``, so a
  later round probes old pages by this narrow column instead of banding 128 values each;
  ``lsh_keys_of(column)`` flattens it to (row, key) pairs and names the null rows (files
  written before the column: their keys come from ``minhash``, ``band_keys`` again).
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from transforms.contentseen.shingling import batch_gram_hashes, spaced_words

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

_CANONICAL = re.compile(rb"<link\b[^>]*\brel\s*=\s*[\"']?canonical\b[^>]*>", re.IGNORECASE)


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
            body = _replace_ascii_ci(body, host, b"\x00HOST\x00")
    # bytes.split() splits on ASCII whitespace [ \t\r\n\f\v]: runs -> one space, ends stripped
    return b" ".join(body.split())


def _replace_ascii_ci(data: bytes, needle: bytes, rep: bytes) -> bytes:
    """`data` with every non-overlapping ASCII-case-insensitive occurrence of `needle` (left
    to right) replaced by `rep` (what re.sub(re.escape(needle), rep, data, flags=re.I) does
    on bytes; bytes.lower() keeps positions, it only maps A-Z)."""
    low, n = data.lower(), needle.lower()
    i = low.find(n)
    if i < 0:
        return data
    out, start = [], 0
    while i >= 0:
        out.append(data[start:i])
        out.append(rep)
        start = i + len(n)
        i = low.find(n, start)
    out.append(data[start:])
    return b"".join(out)


def body_fingerprint(body: bytes, url: str | None = None) -> int:
    """64-bit fingerprint of the normalised body (0 for an empty body): `content_fp`."""
    return _fp64(normalise_body(body, url))


def text_fingerprint(text: str) -> int:
    """64-bit fingerprint of the visible text, whitespace collapsed (0 if empty): `text_fp`."""
    return _fp64(" ".join((text or "").split()).encode("utf-8"))


# --------------------------------------------------------------------------- MinHash
_CHUNK = 8192          # shingles per permutation block: 128 x 8192 uint32 = 4 MiB


def shingles(text: str, k: int = SHINGLE) -> list:
    """Distinct lower-cased word k-grams of text, as UTF-8 bytes (the MinHash input; one
    text at a time, words as `shingling.spaced_words` cuts them: `minhash_signatures` cuts
    a batch with `shingling`). [] below MIN_WORDS words; the whole text below k."""
    ws = spaced_words(text or "").split()
    if len(ws) < MIN_WORDS:
        return []
    if len(ws) < k:
        return [b" ".join(ws)]
    return list({b" ".join(ws[i:i + k]) for i in range(len(ws) - k + 1)})


def permutations(num_perm: int = NUM_PERM, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) uint32[num_perm]: the affine permutations h -> a*h + b mod 2^32 of datasketch's
    `MinHash(num_perm, seed, scheme="affine32")` (drawn the same way from the same seed)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


def minhash_signatures(texts, num_perm: int = NUM_PERM, shingle: int = SHINGLE,
                       seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """(uint32[n, num_perm] signatures, bool[n] has_signature) of texts.

    Bit for bit datasketch's `MinHash(num_perm, seed, scheme="affine32")` updated with
    `shingles(text)` (sha1_hash32 of each shingle, fmix32, a*h + b mod 2^32, minimum), but
    for a group of texts at once: the group cut into k-gram hashes by `shingling` (one sha1
    per distinct shingle of the group), the permutations applied to blocks of the group's
    hashes as one numpy product and the minimum per page taken with `np.minimum.reduceat`.
    Texts are taken in groups of ~SIGN_CHARS characters: the cutting holds ~100 bytes a word
    of its group (word numbers, k-gram rows, their sort), +200 MB for a 16 MB batch of
    documentation pages when the whole batch was one group. Rows without a signature are
    all 0xFFFFFFFF.
    """
    n = len(texts)
    sigs = np.full((n, num_perm), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    has = np.zeros(n, bool)
    a, b = permutations(num_perm, seed)
    for lo, hi in _groups([len(t or "") for t in texts], SIGN_CHARS):
        _sign_group(texts[lo:hi], shingle, a[:, None], b[:, None], sigs[lo:hi], has[lo:hi])
    return sigs, has


SIGN_CHARS = 1 << 21   # characters of text cut into k-grams together (a longer text alone)


def _groups(lengths, limit):
    """(lo, hi) ranges of consecutive items whose lengths add up to at most `limit` (an item
    longer than `limit` alone)."""
    lo, total = 0, 0
    for i, length in enumerate(lengths):
        if total and total + length > limit:
            yield lo, i
            lo, total = i, 0
        total += length
    if lo < len(lengths):
        yield lo, len(lengths)


def _sign_group(texts, shingle, a, b, sigs, has):
    """Signatures of a group of texts into `sigs` and `has` (views of the batch's)."""
    rows, counts, hv = batch_gram_hashes(texts, shingle, MIN_WORDS)
    if not len(rows):
        return
    has[rows] = True
    ends = np.cumsum(counts)
    starts = ends - counts
    total = int(ends[-1])
    for c0 in range(0, total, _CHUNK):
        c1 = min(total, c0 + _CHUNK)
        lo = int(np.searchsorted(ends, c0, "right"))    # pages overlapping [c0, c1)
        hi = int(np.searchsorted(starts, c1, "left"))
        block = a * hv[c0:c1]
        block += b
        part = np.minimum.reduceat(block, np.maximum(starts[lo:hi], c0) - c0, axis=1).T
        r = rows[lo:hi]
        sigs[r] = np.minimum(sigs[r], part)


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


_KEY_ROWS = 4096     # pages whose band keys are hashed at once (band_keys)
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)


def band_keys(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """int64[n, bands]: a 64-bit hash of each band's `rows` MinHash values (and its index).

    Equal band slices give equal keys; different slices collide with probability ~2^-64,
    and candidate pairs are checked on the slices themselves, so results are exact.
    Pages go `_KEY_ROWS` at a time: the signatures as uint64 are a copy twice their size
    (46 MB for a 45 000-page round's near pass, all at once before).
    """
    out = np.empty((len(sigs), bands), np.uint64)
    with np.errstate(over="ignore"):
        for lo in range(0, len(sigs), _KEY_ROWS):
            s = sigs[lo:lo + _KEY_ROWS].astype(np.uint64)
            for b in range(bands):
                h = np.full(len(s), np.uint64(b + 1) * _M1, dtype=np.uint64)
                for j in range(b * rows, (b + 1) * rows):
                    h = (h ^ s[:, j]) * _M2
                    h ^= h >> np.uint64(31)
                out[lo:lo + len(s), b] = h
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
