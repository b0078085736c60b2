"""`optimal`: the freshness-maximising allocation of Cho & Garcia-Molina 2003 (TODS 28(4),
section 4): maximise Σ w_i F(λ_i, f_i) subject to Σ f_i = B, F(λ, f) = (1 − e^{−λ/f}) f/λ.

Lagrange: w ∂F/∂f = μ for every page with f > 0, where ∂F/∂f = g(λ/f)/λ and
g(x) = 1 − (1 + x) e^{−x} rises from 0 to 1. So f = λ / g⁻¹(μλ/w) when w/λ > μ, else f = 0:
pages changing too fast for the budget get no visits at all. μ is found by bisection so the
frequencies spend exactly the budget; g⁻¹ by vectorised bisection. With weights
(`importance`) the same solver maximises importance-weighted freshness.
"""
import numpy as np

from strategies.recrawl.base import Policy, known_rates


def _g_inverse(c, iters=80):
    """x with 1 − (1 + x) e^{−x} = c, for c in (0, 1) (vectorised bisection on log x)."""
    lo = np.full(np.shape(c), -30.0)
    hi = np.full(np.shape(c), 6.0)   # g(e^6) = 1 - 1e-173
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        x = np.exp(mid)
        below = -np.expm1(-x) - x * np.exp(-x) < c
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.exp(0.5 * (lo + hi))


def frequencies_for(mu, rates, weights):
    """The Lagrange condition's frequency of each page for multiplier mu."""
    f = np.zeros(len(rates))
    live = (rates > 0) & (weights > 0) & (weights / np.where(rates > 0, rates, 1) > mu)
    c = mu * rates[live] / weights[live]
    f[live] = rates[live] / _g_inverse(c)
    return f


def optimal_frequencies(rates, budget, weights=None, iters=100):
    """Freshness-maximising frequencies (Σ = budget) for known rates."""
    lam = np.asarray(rates, dtype=np.float64)
    w = np.ones(len(lam)) if weights is None else np.asarray(weights, dtype=np.float64)
    if budget <= 0 or not (lam > 0).any():
        return np.zeros(len(lam))
    lo, hi = 0.0, float(np.max(w[lam > 0] / lam[lam > 0]))   # at mu = hi nobody is visited
    for _ in range(iters):   # total frequency falls as mu rises
        mid = 0.5 * (lo + hi)
        if frequencies_for(mid, lam, w).sum() > budget:
            lo = mid
        else:
            hi = mid
    f = frequencies_for(hi, lam, w)
    # Σ f jumps where μ crosses w/λ of a page too fast for the budget: its f rises from 0
    # with ∂F/∂f ≈ w/λ but only as g⁻¹(c → 1) — steeper than doubles resolve. What is left
    # goes to the next such page(s) (the highest w/λ among f = 0), where it is worth w/λ.
    left = budget - f.sum()
    idle = (f == 0) & (lam > 0) & (w > 0)
    if left > 1e-9 * budget and idle.any():
        value = np.where(idle, w / np.where(lam > 0, lam, 1.0), -np.inf)
        best = value >= value.max() * (1 - 1e-9)
        f[best] += left / best.sum()
    return f


class Optimal(Policy):
    name = "optimal"

    def frequencies(self, pages, budget, cycle=1.0):
        return optimal_frequencies(known_rates(pages), budget)
