"""Crawl orderings: the registry.

A strategy is one module with an `Ordering` subclass and one line in ORDERINGS. The round
pipeline writes `score()` into frontier.score; generate sorts by it, descending.

    from strategies.ordering import get_ordering
    order = get_ordering("preference", x=1.0, y=0.5)
    frontier_scores = order.score(frontier_table, graph)   # float64, one per row
"""
from __future__ import annotations

from strategies.graph import CrawlGraph
from strategies.ordering.base import Ordering
from strategies.ordering.depth_first import DepthFirst
from strategies.ordering.focused import BestFirst, FishSearch, SharkSearch
from strategies.ordering.partial_pagerank import PartialPageRank
from strategies.ordering.simple import (Backlinks, BreadthFirst, LargerSitesFirst,
                                        Omniscient, Opic, Preference, RandomOrder,
                                        UrlImportance, url_importance)

ORDERINGS: dict[str, type] = {
    "bfs": BreadthFirst,
    "dfs": DepthFirst,               # a deep section first; a poor importance order
    "backlinks": Backlinks,
    "url_importance": UrlImportance,
    "preference": Preference,
    "partial_pagerank": PartialPageRank,
    "opic": Opic,
    "larger_sites_first": LargerSitesFirst,
    "random": RandomOrder,
    "best_first": BestFirst,         # focused: need --topic / --topic_pages
    "shark_search": SharkSearch,
    "fish_search": FishSearch,
    "omniscient": Omniscient,   # evaluation only: needs the true PageRank
}

# Orderings a real crawl can use (omniscient needs a ground truth).
CRAWL_ORDERINGS = tuple(k for k in ORDERINGS if k != "omniscient")


def get_ordering(name: str, **params) -> Ordering:
    """An ordering by registry name. Unknown parameters raise TypeError; parameters that
    only some orderings take can be filtered first with `ordering_params(name, options)`."""
    try:
        cls = ORDERINGS[name]
    except KeyError:
        raise ValueError(f"unknown ordering {name!r}; known: {sorted(ORDERINGS)}") from None
    return cls(**params)


def ordering_params(name: str, options: dict) -> dict:
    """The subset of `options` that ordering `name` accepts."""
    accepted = ORDERINGS[name].params()
    return {k: v for k, v in options.items() if k in accepted and v is not None}


__all__ = ["ORDERINGS", "CRAWL_ORDERINGS", "Ordering", "CrawlGraph", "get_ordering",
           "ordering_params", "url_importance"]
