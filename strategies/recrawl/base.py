"""Revisit policies: the shared shape.

A policy turns what the crawler knows of its visited pages (a `PageSet`) and a revisit
budget (revisits per unit of time, the same unit as the rates) into a revisit frequency
per page (`frequencies`, summing to the budget or less). The simulator scores those
frequencies against the true rates (`freshness.py`); a crawl round turns them into a fetch
list: a page is due once `(now − last visit) × f ≥ 1`, most overdue first (`due_priority`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from strategies.params import WithParams


@dataclass
class PageSet:
    """Visited pages as columns (one entry per page). Only `rates` is required.

    rates     estimated change rate (nan = not yet estimated: `prior` stands in)
    weights   importance (PageRank / OPIC score); uniform when None
    groups    host code per page (sampling's unit)
    features  dict of feature columns for clustering: url_pattern, content_type, host
              (categorical, any hashable), depth, size (numeric)
    visits, changes   intervals observed and changes detected (the sample of a group)
    """
    rates: np.ndarray
    weights: np.ndarray | None = None
    groups: np.ndarray | None = None
    features: dict = field(default_factory=dict)
    visits: np.ndarray | None = None
    changes: np.ndarray | None = None
    prior: float | None = None      # rate assumed for pages not yet estimated (None: the mean)

    def __len__(self):
        return len(self.rates)


def known_rates(pages: PageSet, prior: float | None = None) -> np.ndarray:
    """The rates with unknown (nan) entries replaced by `prior`, else by the mean of the
    known ones (a page seen once is assumed to change like the average page)."""
    r = np.asarray(pages.rates, dtype=np.float64)
    prior = pages.prior if prior is None else prior
    bad = ~np.isfinite(r)
    if bad.any():
        fill = prior if prior is not None else (float(np.mean(r[~bad])) if (~bad).any() else 1.0)
        r = np.where(bad, fill, r)
    return np.maximum(r, 0.0)


def subset(pages: PageSet, keep) -> PageSet:
    """The pages where `keep` (a boolean mask) holds, every column cut alike."""
    keep = np.asarray(keep, dtype=bool)

    def cut(col):
        return None if col is None else np.asarray(col)[keep] if not isinstance(col, list) \
            else [v for v, k in zip(col, keep) if k]
    return PageSet(cut(pages.rates), cut(pages.weights), cut(pages.groups),
                   {k: cut(v) for k, v in pages.features.items()}, cut(pages.visits),
                   cut(pages.changes), pages.prior)


def within_rounds(policy, pages: PageSet, budget: float, cycle: float, cap: float | None = None) -> np.ndarray:
    """The policy's frequencies when a round fetches a page at most once (f ≤ 1/cycle):
    pages the policy gives more are held at one visit per round and the policy spreads the
    rest of the budget over the others again, until none is over (water-filling; for
    `proportional` this is exactly proportional under the cap). Without it a fast page's
    f above one per round is budget no round can spend. `cap`: 1/cycle unless given."""
    cap = 1.0 / cycle if cap is None else cap
    f = np.zeros(len(pages))
    free = np.ones(len(pages), dtype=bool)
    left = float(budget)
    while free.any() and left > 0 and cap > 0:
        g = policy.frequencies(pages if free.all() else subset(pages, free), left, cycle)
        over = g > cap * (1 + 1e-9)
        idx = np.flatnonzero(free)
        if not over.any():
            f[idx] = g
            break
        f[idx[over]] = cap
        free[idx[over]] = False
        left -= cap * int(over.sum())
    return f


def due_priority(freqs, elapsed) -> np.ndarray:
    """How overdue each page is: elapsed × f (≥ 1 = due; 0 for f = 0)."""
    return np.asarray(freqs, dtype=np.float64) * np.asarray(elapsed, dtype=np.float64)


def group_greedy(group_ids, ratios, budget, cycle, sample_size):
    """Cho & Ntoulas's allocation over groups: every group keeps `sample_size` sampled pages
    at one visit per cycle; the rest of the budget (visits per unit time × cycle = pages
    per cycle) goes to whole groups in decreasing order of their change ratio. Returns
    per-page frequencies (the first `sample_size` members of a group, by position, are its
    sample)."""
    ids = np.asarray(group_ids)
    uniq, inv = np.unique(ids, return_inverse=True)
    per_cycle = budget * cycle
    f = np.zeros(len(ids))
    rank_in_group = np.zeros(len(ids), dtype=np.int64)
    order = np.argsort(inv, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(inv[order])) + 1]
    for s, e in zip(starts, np.r_[starts[1:], len(order)]):
        rank_in_group[order[s:e]] = np.arange(e - s)
    sample = rank_in_group < sample_size
    n_sample = min(int(sample.sum()), int(per_cycle))
    if n_sample < sample.sum():          # budget below one sample per group: thin it
        keep = np.flatnonzero(sample)[:n_sample]
        sample[:] = False
        sample[keep] = True
    f[sample] = 1.0 / cycle
    left = per_cycle - n_sample
    for g in np.argsort(-np.asarray(ratios, dtype=np.float64), kind="stable"):
        members = np.flatnonzero((inv == g) & ~sample)
        take = members[: int(max(0, min(left, len(members))))]
        f[take] = 1.0 / cycle
        left -= len(take)
        if left < 1:
            break
    return f


def pooled_ratio(group_ids, visits, changes, rates=None):
    """Per group (sorted unique ids): detected changes per observed interval of its members
    (the sample's change ratio); groups without an observation fall back to the mean rate
    of their members when `rates` is given, else 0."""
    ids = np.asarray(group_ids)
    uniq, inv = np.unique(ids, return_inverse=True)
    n = np.bincount(inv, weights=np.nan_to_num(np.asarray(visits, dtype=np.float64)), minlength=len(uniq))
    x = np.bincount(inv, weights=np.nan_to_num(np.asarray(changes, dtype=np.float64)), minlength=len(uniq))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(n > 0, x / n, np.nan)
    if rates is not None:
        cnt = np.bincount(inv, minlength=len(uniq))
        mean = np.bincount(inv, weights=np.nan_to_num(rates), minlength=len(uniq)) / np.maximum(cnt, 1)
        ratio = np.where(np.isnan(ratio), mean, ratio)
    return np.nan_to_num(ratio)


class Policy(WithParams):
    def frequencies(self, pages: PageSet, budget: float, cycle: float = 1.0) -> np.ndarray:
        """Revisit frequency per page; Σ ≤ budget. `cycle`: the time between two rounds
        (the period of the crawl's decisions), in the rates' unit."""
        raise NotImplementedError
