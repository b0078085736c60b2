"""Freshness and age of a local copy under periodic revisits, analytic and Monte Carlo
(Cho & Garcia-Molina, "Synchronizing a database to improve freshness", SIGMOD 2000, and
"Effective page refresh policies for web crawlers", ACM TODS 28(4), 2003).

A page changing as a Poisson process of rate λ and revisited every I = 1/f:
    freshness  F(λ, f) = (1 − e^{−λI}) / (λI)                time-average P(copy is current)
    age        A(λ, f) = I/2 − 1/λ + (1 − e^{−λI}) / (λ² I)  time-average time since the
                                                              copy went stale (0 when fresh)
A page never visited (f = 0) has freshness 0 (λ > 0) and unbounded age; a page that never
changes (λ = 0) has freshness 1 and age 0.
"""
from __future__ import annotations

import numpy as np


def freshness(rates, freqs):
    """Time-average freshness of each page (arrays broadcast)."""
    lam = np.asarray(rates, dtype=np.float64)
    f = np.asarray(freqs, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = lam / f
        out = -np.expm1(-x) / x
    out = np.where(f > 0, out, 0.0)
    return np.where(lam > 0, out, 1.0)


def age(rates, freqs):
    """Time-average age of each page (inf when never visited and changing)."""
    lam = np.asarray(rates, dtype=np.float64)
    f = np.asarray(freqs, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        interval = 1.0 / f
        out = interval / 2 - 1 / lam + (-np.expm1(-lam * interval)) / (lam * lam * interval)
    out = np.where(f > 0, out, np.inf)
    return np.where(lam > 0, out, 0.0)


def average(rates, freqs, weights=None):
    """(mean freshness, mean age) over pages, optionally weighted (importance)."""
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    return (float(np.average(freshness(rates, freqs), weights=w)),
            float(np.average(age(rates, freqs), weights=w)))


def simulate(rates, freqs, horizon, rng, samples_per_page=20):
    """Monte Carlo freshness: each page is visited every 1/f from a random phase; at
    `samples_per_page` random instants in [0, horizon) the copy is fresh when no change
    fell since the last visit (changes drawn as a Poisson process). Returns the mean."""
    lam = np.asarray(rates, dtype=np.float64)
    f = np.asarray(freqs, dtype=np.float64)
    n = lam.size
    fresh = np.zeros(n)
    for _ in range(samples_per_page):
        t = rng.uniform(0, horizon, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            interval = np.where(f > 0, 1.0 / f, np.inf)
            phase = rng.uniform(0, 1, n) * np.where(np.isfinite(interval), interval, 0)
            since = np.where(np.isfinite(interval), np.mod(t - phase, interval), t + 1e18)
        # P(no change in `since`) realised as a draw: the next change after the visit
        next_change = rng.exponential(1.0, n) / np.where(lam > 0, lam, 1.0)
        fresh += np.where(lam > 0, next_change > since, True)
    return float(fresh.mean() / samples_per_page)
