"""`uniform`: every page revisited equally often (Cho & Garcia-Molina 2003 show it beats
`proportional` on average freshness)."""
import numpy as np

from strategies.recrawl.base import Policy


class Uniform(Policy):
    name = "uniform"

    def frequencies(self, pages, budget, cycle=1.0):
        return np.full(len(pages), budget / max(len(pages), 1))
