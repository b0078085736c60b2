"""Order-quality metrics of a fetch order over a known graph (plain numpy): the share of
true PageRank captured against pages crawled, its AUC, and the AUC relative to the perfect
order (pages sorted by true PageRank)."""
from __future__ import annotations

import numpy as np

PERCENTS = np.arange(0, 101)


def curves(g, order: np.ndarray, hot_fraction=0.1):
    """(pr_share, hot_share) at 0..100 % of the graph's pages crawled (1 % steps)."""
    n = g.n
    cum_pr = np.concatenate([[0.0], np.cumsum(g.truth[order])]) / g.truth.sum()
    k_hot = max(1, int(round(hot_fraction * n)))
    hot = np.zeros(n, bool)
    hot[np.argsort(-g.truth, kind="stable")[:k_hot]] = True
    cum_hot = np.concatenate([[0.0], np.cumsum(hot[order])]) / k_hot
    k = np.minimum(np.round(PERCENTS / 100.0 * n).astype(np.int64), len(order))
    return cum_pr[k], cum_hot[k], cum_pr, cum_hot


def auc_to(cum: np.ndarray, n: int, frac=0.5) -> float:
    """∫_0^frac share(x) dx / frac with share(x) the per-page cumulative curve."""
    m = int(round(frac * n))
    vals = cum[1:m + 1] if len(cum) > m else np.concatenate(
        [cum[1:], np.full(m - (len(cum) - 1), cum[-1])])
    return float(vals.sum() / n / frac)


def relative_auc(g, order, frac=0.5) -> float:
    """AUC@frac of a fetch order (node ids) divided by the perfect order's (pages sorted by
    true PageRank): 1.0 is the best any crawler can do."""
    _, _, cum, _ = curves(g, np.asarray(order, np.int64))
    _, _, best, _ = curves(g, np.argsort(-g.truth, kind="stable"))
    return auc_to(cum, g.n, frac) / auc_to(best, g.n, frac)
