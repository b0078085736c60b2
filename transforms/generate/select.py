"""Generate: pick the round's fetch list from the frontier.

The fetch list is the `max_pages` due frontier URLs with the highest strategy score, at
most `max_per_host` per host; ties broken by fingerprint so the choice is deterministic.
The frontier arrives as Arrow tables (Parquet row groups) and the selection is a combine
over tables: selecting from the union of per-batch selections gives the same answer as
selecting from the whole frontier (a row cut within its batch has at least `max_pages`
better rows that survive their own host caps there, and so does globally).
"""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables

# A fetch list row: what the fetch reads and a fetched page carries forward, and the score
# (incremental mode records it). Generate drops the other frontier columns at once: the
# anchors and the first parent's URL made its selection ~1.3x as big, and it is copied at
# every stage boundary up to the fetch list's table files.
FETCH_LIST_COLUMNS = tables.FETCH_CARRIED + ("score",)
# ... and what it reads to choose them (`due_mask`, `select`)
SELECT_COLUMNS = ("fp", "host", "score", "not_before", "depth")
READ_COLUMNS = tuple(c for c in tables.FRONTIER.names if c in FETCH_LIST_COLUMNS or c in SELECT_COLUMNS)

SNAP_BITS = 40   # ~1e-12 relative: far above float noise (~1e-16), far below real differences


def rank_within_group(codes: np.ndarray) -> np.ndarray:
    """For rows already in priority order, each row's rank among rows with the same code."""
    n = len(codes)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.r_[0, np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n) - group_start
    return ranks


def fetch_list_rows(table: pa.Table) -> pa.Table:
    """`table` with only the columns of a fetch list (those it has)."""
    return table.select([c for c in table.column_names if c in FETCH_LIST_COLUMNS])


def due_mask(table: pa.Table, now: float, max_depth: int) -> np.ndarray:
    """Rows that may be fetched at `now`: backoff elapsed, within the depth bound."""
    not_before = table.column("not_before").fill_null(0.0).to_numpy(zero_copy_only=False)
    mask = not_before <= now
    if max_depth:
        depth = table.column("depth").fill_null(0).to_numpy(zero_copy_only=False)
        mask &= depth <= max_depth
    return mask


def snap(scores, bits: int = SNAP_BITS) -> np.ndarray:
    """Scores rounded to `bits` bits of mantissa: values equal in exact arithmetic but apart
    by float noise (sums taken in another order, e.g. a round's node numbering and the
    evaluator's) tie exactly, and the fingerprint breaks the tie the same way everywhere."""
    m, e = np.frexp(np.asarray(scores, dtype=np.float64))
    return np.ldexp(np.round(m * float(2 ** bits)) / float(2 ** bits), e)


def select(table: pa.Table, max_pages: int, max_per_host: int) -> pa.Table:
    """Top `max_pages` rows by (score desc, fp asc) with at most `max_per_host` per host;
    scores equal to `SNAP_BITS` bits of mantissa tie (`snap`)."""
    if table.num_rows == 0:
        return table
    key = pa.table({"s": pa.array(snap(table.column("score").fill_null(float("-inf"))
                                       .to_numpy(zero_copy_only=False))),
                    "fp": table.column("fp")})
    order = pc.sort_indices(key, sort_keys=[("s", "descending"), ("fp", "ascending")])
    ordered = table.take(order)
    codes = pc.dictionary_encode(ordered.column("host")).combine_chunks().indices
    codes = codes.fill_null(-1).to_numpy(zero_copy_only=False)
    keep = np.flatnonzero(rank_within_group(codes) < max_per_host)[:max_pages]
    return ordered.take(pa.array(keep, type=pa.int64()))

def split_by_host(table):
    """(host, rows of that host) for each host of the fetch list."""
    if table is None or table.num_rows == 0:
        return
    hosts = table.column("host").to_pylist()
    by_host = {}
    for i, h in enumerate(hosts):
        by_host.setdefault(h, []).append(i)
    for h in sorted(by_host):
        yield h, table.take(pa.array(by_host[h], type=pa.int64()))


def merge_fetch_list(tables, max_per_host: int):
    """One fetch list from the revisits (first table, in priority order) and the new URLs'
    selection: at most `max_per_host` per host, revisits kept first (incremental mode)."""
    tables = [t for t in tables if t is not None and t.num_rows]
    if not tables:
        return None
    merged = pa.concat_tables(tables, promote_options="default")
    codes = pc.dictionary_encode(merged.column("host")).combine_chunks().indices
    codes = codes.fill_null(-1).to_numpy(zero_copy_only=False)
    keep = np.flatnonzero(rank_within_group(codes) < max_per_host)
    return merged.take(pa.array(keep, type=pa.int64()))
