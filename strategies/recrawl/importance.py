"""`importance`: the seeds' user-experience strategy (用户体验策略: the more influential a
page, the sooner it is refreshed), made precise as Cho & Garcia-Molina's weighted
freshness: maximise Σ w_i F(λ_i, f_i) with w = the page's PageRank or OPIC score (the
crawl passes its strategy score), by the same Lagrange solver as `optimal`. An important
page that changes fast is kept fresh where `optimal` would give up on it."""
import numpy as np

from strategies.recrawl.base import Policy, known_rates
from strategies.recrawl.optimal import optimal_frequencies


class Importance(Policy):
    name = "importance"

    def frequencies(self, pages, budget, cycle=1.0):
        w = np.ones(len(pages)) if pages.weights is None else np.asarray(pages.weights, dtype=np.float64)
        w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
        if not (w > 0).any():
            w = np.ones(len(pages))
        return optimal_frequencies(known_rates(pages), budget, w / w.mean())
