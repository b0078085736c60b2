"""Depth-first order (the lecture seed's contrast to breadth-first): the deepest known page
first, and at equal depth the one discovered last, as a stack pops what was pushed last.

A page-at-a-time crawl in this order visits pages in the preorder of a depth-first search
that pushes each page once, when it is first found (tests/unit/test_strategies.py checks it
against an explicit stack). In rounds, a round takes the `--max_pages` deepest pages at
once, at most `--max_per_host` of each host.

It is what a user wants who must reach a site's deep section (an archive, a long
pagination chain) within few rounds; it is a poor importance order: the pages most worth
having sit near the seeds (seed 004: 重要的网页往往离种子站点的距离较近), and a depth-first
crawl reaches them last (docs/ordering.md has the evaluator's figures beside BFS). Deep
chains never end on some sites (calendars, session URLs: seed 001's 黑洞), so a depth-first
crawl wants --max_depth.
"""
from __future__ import annotations

import numpy as np

from strategies.ordering.base import Ordering, column


class DepthFirst(Ordering):
    """Higher depth first; at equal depth, later discovery first."""
    name = "dfs"
    columns = ("depth", "discovered_round")

    def score(self, frontier, graph=None):
        depth = column(frontier, "depth")
        disc = column(frontier, "discovered_round")
        # discovered_round < 2**20 keeps both keys exact in one float64 (as bfs).
        return depth * float(2 ** 20) + np.clip(disc, 0, 2 ** 20 - 1)
