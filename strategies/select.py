"""The generate step's selection, as a pure function shared by rounds and the evaluator.

Sort by score (descending; ties keep input order), keep at most `per_host_cap` rows per
host (the host's fetch slots this round: politeness), then the first `batch_size`.
"""
from __future__ import annotations

import numpy as np


def select_batch(scores, host_ids, batch_size: int, per_host_cap: int | None = None):
    """Row indices to fetch, best first."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) == 0 or batch_size <= 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(-scores, kind="stable")
    if per_host_cap is not None and per_host_cap > 0:
        h = np.asarray(host_ids, dtype=np.int64)[order]
        by_host = np.argsort(h, kind="stable")          # positions grouped by host, in rank order
        hs = h[by_host]
        first = np.concatenate([[True], hs[1:] != hs[:-1]])
        start = np.maximum.accumulate(np.where(first, np.arange(len(hs)), 0))
        rank = np.empty(len(hs), dtype=np.int64)
        rank[by_host] = np.arange(len(hs)) - start      # rank of each row inside its host
        order = order[rank < per_host_cap]
    return order[:batch_size]
