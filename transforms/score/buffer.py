"""MAX_BUFFER: the bounded frontier of Best-First (Pant & Menczer) for a round-based crawl.

After scoring, a frontier of more than `max_buffer` URLs keeps its `max_buffer` best by
(score desc, fp asc) — generate's order, scores snapped the same way — and the rest leave
it as filtered rows with reason `buffer_full` (never silently; a later link re-admits one).
"""
import numpy as np
import pyarrow as pa

from schemas import tables
from transforms.generate.select import snap

BUFFER_FULL = "buffer_full"


def sort_keys(table: pa.Table):
    """(snapped score, fp) of a frontier table, as numpy arrays."""
    score = snap(table.column("score").fill_null(float("-inf")).to_numpy(zero_copy_only=False))
    return score, table.column("fp").to_numpy(zero_copy_only=False).astype(np.int64)


def top(parts, k: int):
    """The best `k` (score, fp) pairs of (scores, fps) parts, best first (a combine's
    accumulator: the top k of a union is within the union of the parts' top k)."""
    parts = [p for p in parts if p is not None and len(p[0])]
    if not parts:
        return np.zeros(0), np.zeros(0, np.int64)
    score = np.concatenate([p[0] for p in parts])
    fp = np.concatenate([p[1] for p in parts])
    order = np.lexsort((fp, -score))[:k + 1]   # one past k tells "more than k"
    return score[order], fp[order]


def cutoff(best, max_buffer: int):
    """The (score, fp) of the last URL kept, from `top`'s output; None when all fit."""
    score, fp = best
    if len(score) <= max_buffer:
        return None
    return float(score[max_buffer - 1]), int(fp[max_buffer - 1])


def split(table: pa.Table, cut, round_no: int):
    """(kept frontier rows, FILTERED rows of the dropped ones) of a frontier table."""
    if cut is None or table.num_rows == 0:
        return table, tables.FILTERED.empty_table()
    score, fp = sort_keys(table)
    cs, cf = cut
    keep = (score > cs) | ((score == cs) & (fp <= cf))
    drop = table.filter(pa.array(~keep))
    n = drop.num_rows
    filtered = pa.Table.from_arrays([
        drop.column("fp"), drop.column("url"), pa.array([BUFFER_FULL] * n, pa.string()),
        pa.array(np.full(n, round_no, np.int32)), drop.column("first_parent"),
        drop.column("depth"), drop.column("source"), pa.nulls(n, pa.string()),
    ], schema=tables.FILTERED)
    return table.filter(pa.array(keep)), filtered


def buffer_stats(filtered: pa.Table):
    """Counters: the URLs dropped, taken off URL-seen's frontier_rows."""
    n = filtered.num_rows
    return {f"filtered_{BUFFER_FULL}": n, "frontier_rows": -n} if n else {}
