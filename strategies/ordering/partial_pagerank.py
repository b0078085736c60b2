"""Partial PageRank (Cho, Garcia-Molina, Page 1998): PageRank over the graph of
downloaded ∪ pending pages, recomputed every round (or every K fetched pages in the
evaluator); pages found since the last computation get the temporary score
Σ PR(q)/outdeg(q) over their known in-linkers (strategies.graph.temporary_scores)."""
from __future__ import annotations

import numpy as np

from strategies.graph import DAMPING, pagerank
from strategies.ordering.base import Ordering


class PartialPageRank(Ordering):
    name = "partial_pagerank"
    needs_graph = True
    columns = ("fp",)

    @classmethod
    def params(cls):
        return {"damping": DAMPING, "tol": 1e-8, "max_iter": 200}

    # Warm starts (from the previous call's ranks) change ranks only within `tol`, which
    # is enough to reorder near-ties; a round has no previous call, so cold by default and
    # the evaluator's replay orders exactly as the rounds do (issue #11).
    warm_start = False

    def __init__(self, **params):
        super().__init__(**params)
        self._warm = None  # (urls_fp, ranks) of the last computation, for a warm start
        self.last_info = {}

    def node_ranks(self, graph) -> np.ndarray:
        """PageRank of every graph node (warm-started from the previous call's ranks)."""
        x0 = None
        if self.warm_start and self._warm is not None:
            fps, ranks = self._warm
            ids = graph.node_ids(fps)
            ok = ids >= 0
            if ok.any():
                x0 = np.full(graph.num_nodes, 1.0 / max(graph.num_nodes, 1))
                x0[ids[ok]] = ranks[ok]
        pr, self.last_info = pagerank(graph.src, graph.dst, graph.num_nodes,
                                      damping=self.damping, tol=self.tol,
                                      max_iter=self.max_iter, x0=x0, return_info=True)
        self._warm = (graph.urls_fp, pr)
        return pr

    def score(self, frontier, graph=None):
        if graph is None:
            raise ValueError("partial_pagerank needs the crawl graph")
        pr = self.node_ranks(graph)
        ids = graph.node_ids(frontier.column("fp").to_numpy(zero_copy_only=False))
        return np.where(ids >= 0, pr[np.maximum(ids, 0)], 0.0)
