"""Base class of crawl orderings and column helpers.

An ordering turns the frontier (a pyarrow Table with schemas.tables.FRONTIER columns, or
any subset the ordering reads) into one float64 score per row; the generate step only
sorts by it (descending). Scores are deterministic functions of their inputs.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strategies.params import WithParams


class Ordering(WithParams):
    name: str = ""
    needs_graph: bool = False        # score() needs the downloaded ∪ pending CrawlGraph
    needs_host_counts: bool = False  # reads 'host_pending' (pending URLs of the row's host)
    uses_opic: bool = False          # reads frontier.cash; the round must run opic_distribute
    columns: tuple = ()              # frontier columns score() reads

    def score(self, frontier: pa.Table, graph=None) -> np.ndarray:
        raise NotImplementedError


def column(frontier: pa.Table, name: str, fill=0.0) -> np.ndarray:
    """A numeric frontier column as float64 numpy, nulls -> fill; missing -> fill."""
    if name not in frontier.column_names:
        return np.full(frontier.num_rows, float(fill))
    col = frontier.column(name)
    if col.null_count:
        col = pc.fill_null(col, fill)
    return np.asarray(col.to_numpy(), dtype=np.float64)


def host_codes(frontier: pa.Table) -> np.ndarray:
    """Dense int code per row for the host column (equal hosts -> equal code)."""
    col = frontier.column("host")
    if col.null_count:
        col = pc.fill_null(col, "")
    enc = col.combine_chunks()
    if not pa.types.is_dictionary(enc.type):
        enc = enc.dictionary_encode()
    return np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def host_pending(frontier: pa.Table) -> np.ndarray:
    """Pending URLs of each row's host: the 'host_pending' column if the caller provides
    one (a sharded frontier), else counted over the rows given."""
    if "host_pending" in frontier.column_names:
        return column(frontier, "host_pending")
    codes = host_codes(frontier)
    return np.bincount(codes).astype(np.float64)[codes] if len(codes) else np.zeros(0)
