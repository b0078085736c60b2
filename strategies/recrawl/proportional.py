"""`proportional`: revisit frequency proportional to the (estimated) change rate — the
intuitive policy Cho & Garcia-Molina 2003 show to be worse than uniform: every page ends
with the same λ/f, fast changers soak up the budget and still go stale."""
import numpy as np

from strategies.recrawl.base import Policy, known_rates


class Proportional(Policy):
    name = "proportional"

    def frequencies(self, pages, budget, cycle=1.0):
        r = known_rates(pages)
        total = r.sum()
        if total <= 0:
            return np.full(len(pages), budget / max(len(pages), 1))
        return budget * r / total
