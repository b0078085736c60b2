"""Focused (vertical) orderings: Best-First, Shark-Search and Fish-Search.

They score a link when its page is parsed (`link_scores`, called by the page step with
the page's topic relevance, the anchor texts' and anchor contexts' similarities to the
topic, and what the page inherited); a URL linked from several pages keeps its best
score (URL-seen takes the maximum). `score()` then only reads frontier.topic_score.

- best_first (Pant & Menczer's Best-First, Cho et al.'s "similarity" ordering): a link's
  priority is the cosine similarity sim(q, p) of the page p it was found on.
- shark_search (Hersovici et al. 1998, "The shark-search algorithm"):
      inherited(c) = δ·sim(q, p)        if p is relevant (sim ≥ the relevance threshold)
                   = δ·inherited(p)     otherwise
      anchor_context(c) = 1 if sim(q, anchor) > 0 else sim(q, anchor context)
      neighbourhood(c) = β·sim(q, anchor) + (1 − β)·anchor_context(c)
      potential(c) = γ·inherited(c) + (1 − γ)·neighbourhood(c)
  with δ = 0.5, β = 0.8, γ = 0.5 (the paper's values).
- fish_search (De Bra & Post 1994, Fish-Search, as Hersovici et al. describe it): binary
  relevance; a link's priority is 1 when its page is relevant, else 0.

The depth bound D (Fish- and Shark-Search; `--depth_bound`) is the page step's: a link's
`depth_left` is D below a relevant page and one less than its page's below an irrelevant
one; in `--mode vertical`, links whose depth_left would drop below 0 are not followed.
"""
from __future__ import annotations

import numpy as np

from strategies.ordering.base import Ordering, column


class _Focused(Ordering):
    focused = True
    columns = ("topic_score",)

    def score(self, frontier, graph=None):
        return column(frontier, "topic_score")

    def link_scores(self, relevance: float, relevant: bool, inherited: float,
                    anchor_sims: np.ndarray, context_sims: np.ndarray):
        """(priority of each link of a page, the inherited score its links carry)."""
        raise NotImplementedError


class BestFirst(_Focused):
    name = "best_first"

    def link_scores(self, relevance, relevant, inherited, anchor_sims, context_sims):
        return np.full(len(anchor_sims), float(relevance)), float(relevance)


class FishSearch(_Focused):
    name = "fish_search"

    def link_scores(self, relevance, relevant, inherited, anchor_sims, context_sims):
        value = 1.0 if relevant else 0.0
        return np.full(len(anchor_sims), value), value


class SharkSearch(_Focused):
    name = "shark_search"

    @classmethod
    def params(cls):
        return {"topic_decay": 0.5, "anchor_beta": 0.8, "shark_gamma": 0.5}

    def link_scores(self, relevance, relevant, inherited, anchor_sims, context_sims):
        delta, beta, gamma = float(self.topic_decay), float(self.anchor_beta), float(self.shark_gamma)
        inh = delta * (float(relevance) if relevant else float(inherited or 0.0))
        a = np.asarray(anchor_sims, np.float64)
        ctx = np.where(a > 0, 1.0, np.asarray(context_sims, np.float64))
        neighbourhood = beta * a + (1.0 - beta) * ctx
        return gamma * inh + (1.0 - gamma) * neighbourhood, inh


def child_depth_left(relevant: bool, depth_left, depth_bound: int) -> int:
    """depth_left of a page's links: D below a relevant page, else the page's minus one (a
    seed, with none recorded, counts as D)."""
    if relevant:
        return int(depth_bound)
    return (int(depth_bound) if depth_left is None else int(depth_left)) - 1
