"""Vertical crawling in the page step: a page's topic relevance and its links' scores.

From the text the page step's one parse already gave (any format: `formats.Document.text`):

- `relevance`: TF-IDF cosine with the crawl's topic (strategies.topic), stored in visited;
- the page's term set (hashed), for the round's document-frequency table;
- per link: the anchor text's and the anchor context's (`--anchor_window` words either side
  of the anchor in the text) similarity to the topic, turned into the link's priority by
  the strategy (`link_scores` of strategies.ordering.focused; best_first's for strategies
  that are not focused) and carried with the link as `topic_score`, with the inherited
  score (`topic_inherited`) and the depth bound left (`depth_left`);
- in `--mode vertical`, the links of an irrelevant page whose depth bound is spent are not
  followed: they become filtered URLs with reason `topic_depth`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schemas import tables
from strategies.ordering.focused import BestFirst, child_depth_left
from strategies.topic import Topic, anchor_contexts, term_counts

TOPIC_TERMS = "_topic_terms"    # visited-row key carrying the page's term ids to the DF count
TOPIC_DEPTH = "topic_depth"     # filter reason: an irrelevant page's links beyond the depth bound


@dataclass(frozen=True)
class FocusConfig:
    topic: Topic
    ordering: object = None       # an Ordering with link_scores (else best_first's)
    threshold: float = 0.2        # relevant: relevance >= threshold
    depth_bound: int = 3          # D
    anchor_window: int = 10
    vertical: bool = False        # --mode vertical: enforce the depth bound

    def scorer(self):
        return self.ordering if hasattr(self.ordering, "link_scores") else BestFirst()


def focus_page(page: dict, text: str, bundles: list, visited: dict, config: FocusConfig):
    """Score `page` and its link `bundles` (in place); returns (bundles to follow,
    filtered bundles of the links the depth bound stops)."""
    rel = config.topic.similarity(text)
    visited["relevance"] = rel
    visited[TOPIC_TERMS] = term_counts(text)[0]
    relevant = rel >= config.threshold
    depth_left = child_depth_left(relevant, page.get("depth_left"), config.depth_bound)
    follow, stopped = [], []
    for b in bundles:
        if b.get("source") == tables.SOURCE_SITEMAP_FILE:
            follow.append(b)
            continue
        anchors = b.get("anchor") or [""] * len(b["dst"])
        contexts = anchor_contexts(text, anchors, config.anchor_window)
        scores, inherited = config.scorer().link_scores(
            rel, relevant, page.get("topic_inherited"), config.topic.similarities(anchors),
            config.topic.similarities(contexts))
        b.update(topic_score=[float(s) for s in np.asarray(scores)],
                 topic_inherited=float(inherited), depth_left=depth_left)
        if config.vertical and depth_left < 0:
            stopped.append({"src": b.get("src"), "url": list(b["dst"]),
                            "reason": [TOPIC_DEPTH] * len(b["dst"]), "depth": b["depth"],
                            "source": b.get("source")})
        else:
            follow.append(b)
    return follow, stopped


def carry_redirect(page: dict, bundle: dict) -> dict:
    """A redirect target stands for the page: it keeps the page's score and bounds."""
    bundle.update(topic_score=[page.get("topic_score")] * len(bundle["dst"]),
                  topic_inherited=page.get("topic_inherited"), depth_left=page.get("depth_left"))
    return bundle
