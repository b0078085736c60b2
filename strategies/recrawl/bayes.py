"""Empirical-Bayes change rates: the estimate the revisit policies act on.

Cho & Garcia-Molina's improved estimator (`estimate.improved_rate`) is nearly unbiased
after tens of visits, but a crawl schedules pages after a few: a page seen unchanged twice
is estimated at 0 (never worth a revisit), a page that changed at every visit saturates at
ln(2n + 1)/Ī (an hourly news page visited daily looks like a page changing twice a day),
and a page visited once has no estimate at all. What the crawl's other pages show fills
that gap: the rates of the crawl's pages have some distribution g (many static pages, a
bulk near the median, a few news pages), and a page's few visits are evidence *within* g.

So the prior g is estimated from all the crawl's pages (Kiefer–Wolfowitz nonparametric
maximum likelihood on a log grid of rates, by EM — Efron's "g-modelling"; no shape is
assumed, so a bimodal web is fitted as such), and each page's posterior under g given its
own (n, X, Ī) is

    L(r) = (1 − e^{−r Ī})^X · e^{−r Ī (n − X)}     (X of n intervals of length Ī changed)
    p(r_k | page) ∝ g_k L(r_k)

The estimate is read on the scale the visits identify: the posterior mean of the chance
that the page stays unchanged over one round gap c, turned back into a rate,

    r̃ = −ln(Σ_k p(r_k | page) e^{−r_k c}) / c.

Not the posterior mean of r: rounds c apart cannot tell 20 changes per round from 200
(the likelihood is flat there), so the mean of r is set by how far the grid reaches; the
mean of e^{−r c} is not (both are ≈ 0). A page that changed on its one revisit, with a
posterior half on the bulk's rates and half on the news pages', is a page worth
revisiting (r̃ ≈ ln 2 / c… 2/c), not one of 20 changes per round. r̃ ≤ the posterior mean
(Jensen). A page never revisited (n = 0) gets the prior's r̃; a page seen unchanged n
times falls toward the static pages' rates without reaching 0; a page that always
changed rises with n toward the fast pages the crawl has seen, not to ln(2n + 1)/Ī.
Irregular intervals: the same O(1) state as the improved estimator (n, X, Σ intervals),
so Ī is the mean interval.

The grid spans 10⁻³ … 10² changes per `scale` (the crawl passes the round gap): a crawl
that visits a page at most once per round cannot tell 100 changes per round from 1 000,
and a page changing once in a thousand rounds is static for any budget.
"""
from __future__ import annotations

import numpy as np

GRID = np.geomspace(1e-3, 1e2, 121)     # rates × scale
MAX_FIT_PAGES = 5000                    # the prior is fitted on at most this many pages


def _log_likelihood(n, x, interval, grid):
    rt = interval[:, None] * grid[None, :]
    with np.errstate(divide="ignore"):
        return x[:, None] * np.log(-np.expm1(-rt)) - (n - x)[:, None] * rt


def _columns(n, changes, mean_interval):
    n = np.nan_to_num(np.asarray(n, dtype=np.float64))
    x = np.clip(np.nan_to_num(np.asarray(changes, dtype=np.float64)), 0, n)
    interval = np.nan_to_num(np.asarray(mean_interval, dtype=np.float64))
    n, x, interval = (np.atleast_1d(a).copy() for a in np.broadcast_arrays(n, x, interval))
    seen = (n > 0) & (interval > 0)
    return n, x, interval, seen


def fit_prior(n, changes, mean_interval, scale=1.0, iters=300, seed=0):
    """(grid of rates, prior weights): the NPMLE of the rate distribution of the pages with
    at least one observed interval (EM from uniform weights on the log grid); uniform
    weights when no page has been revisited."""
    grid = GRID / scale
    n, x, interval, seen = _columns(n, changes, mean_interval)
    idx = np.flatnonzero(seen)
    if len(idx) > MAX_FIT_PAGES:
        idx = np.sort(np.random.default_rng(seed).choice(idx, MAX_FIT_PAGES, replace=False))
    w = np.full(len(grid), 1.0 / len(grid))
    if len(idx) == 0:
        return grid, w
    ll = _log_likelihood(n[idx], x[idx], interval[idx], grid)
    lik = np.exp(ll - ll.max(axis=1, keepdims=True))
    for _ in range(iters):
        post = lik * w
        post /= post.sum(axis=1, keepdims=True)
        w = post.mean(axis=0)
    return grid, w


def posterior_rate(n, changes, mean_interval, scale=1.0, prior=None, chunk=20_000):
    """r̃ per page (arrays broadcast to pages; rate per unit of `mean_interval`):
    −ln(posterior mean of e^{−r·scale}) / scale under `prior` = (grid, weights), fitted over
    these pages when None. Pages without an observed interval get the prior's."""
    grid, w = prior if prior is not None else fit_prior(n, changes, mean_interval, scale)
    stay = np.exp(-grid * scale)           # P(no change in one round gap) at each grid rate
    n, x, interval, seen = _columns(n, changes, mean_interval)
    out = np.full(n.shape, -np.log((stay * w).sum() / w.sum()) / scale)
    idx = np.flatnonzero(seen)
    for s in range(0, len(idx), chunk):
        part = idx[s:s + chunk]
        ll = _log_likelihood(n[part], x[part], interval[part], grid)
        post = np.exp(ll - ll.max(axis=1, keepdims=True)) * w
        out[part] = -np.log((post * stay).sum(axis=1) / post.sum(axis=1)) / scale
    return out
