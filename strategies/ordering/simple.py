"""Orderings computable from frontier columns alone."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strategies.hashing import splitmix64
from strategies.ordering.base import Ordering, column, host_pending


class BreadthFirst(Ordering):
    """Lower depth first; at equal depth, earlier discovery first."""
    name = "bfs"
    columns = ("depth", "discovered_round")

    def score(self, frontier, graph=None):
        depth = column(frontier, "depth")
        disc = column(frontier, "discovered_round")
        # discovered_round < 2**20 keeps both keys exact in one float64.
        return -(depth * float(2 ** 20) + np.clip(disc, 0, 2 ** 20 - 1))


class Backlinks(Ordering):
    """Most known in-links first (IB(P) of Cho et al.)."""
    name = "backlinks"
    columns = ("inlinks",)

    def score(self, frontier, graph=None):
        return column(frontier, "inlinks")


def url_importance(urls) -> np.ndarray:
    """IL(P) in [0, 1]: mean of three cues from the URL string (Cho et al. 1998):
    host ends in .com; 'home' in the URL; 1/(path slashes) (fewer slashes score higher,
    'http://h/' has one)."""
    urls = pa.array(urls) if not isinstance(urls, (pa.Array, pa.ChunkedArray)) else urls
    urls = pc.utf8_lower(pc.fill_null(urls, ""))
    rest = pc.replace_substring_regex(urls, r"^[a-z][a-z0-9+.-]*://", "")
    host = pc.replace_substring_regex(rest, r"[/?#].*$", "")
    host = pc.replace_substring_regex(host, r":\d+$", "")
    path = pc.replace_substring_regex(rest, r"^[^/?#]*", "")
    path = pc.replace_substring_regex(path, r"[?#].*$", "")
    com = np.asarray(pc.ends_with(host, ".com").to_numpy(zero_copy_only=False), dtype=float)
    home = np.asarray(pc.match_substring(urls, "home").to_numpy(zero_copy_only=False), dtype=float)
    slashes = np.asarray(pc.count_substring(path, "/").to_numpy(zero_copy_only=False), dtype=float)
    return (com + home + 1.0 / np.maximum(slashes, 1.0)) / 3.0


class UrlImportance(Ordering):
    name = "url_importance"
    columns = ("url",)

    def score(self, frontier, graph=None):
        return url_importance(frontier.column("url"))


class Preference(Ordering):
    """I(P) = X·IB(P) + Y·IL(P) (Cho et al.'s importance metric).

    IB is the known in-link count squashed to [0, 1) as inlinks / (inlinks + ib_scale), so
    a row's score depends on its own columns only (the round scores per bucket) while the
    order by IB alone stays the backlink order. IL is url_importance, in [0, 1].
    """
    name = "preference"
    columns = ("inlinks", "url")

    @classmethod
    def params(cls):
        return {"x": 1.0, "y": 1.0, "ib_scale": 5.0}

    def score(self, frontier, graph=None):
        inl = column(frontier, "inlinks")
        ib = inl / (inl + float(self.ib_scale))
        return float(self.x) * ib + float(self.y) * url_importance(frontier.column("url"))


class LargerSitesFirst(Ordering):
    """Host with most pending URLs first (Baeza-Yates et al. 2005); within a host,
    lower depth first. Score = host_pending + 0.5/(1 + depth)."""
    name = "larger_sites_first"
    needs_host_counts = True
    columns = ("host", "depth")

    def score(self, frontier, graph=None):
        return host_pending(frontier) + 0.5 / (1.0 + column(frontier, "depth"))


class RandomOrder(Ordering):
    """Baseline: a fixed pseudo-random score per URL fingerprint (and seed)."""
    name = "random"
    columns = ("fp",)

    @classmethod
    def params(cls):
        return {"seed": 0}

    def score(self, frontier, graph=None):
        fp = frontier.column("fp").to_numpy(zero_copy_only=False).astype(np.int64)
        h = splitmix64(fp.view(np.uint64) ^ splitmix64(np.uint64(int(self.seed) & (2**64 - 1))))
        return (h >> np.uint64(11)).astype(np.float64) / float(2 ** 53)


class Opic(Ordering):
    """Richest page first: score = OPIC cash (frontier.cash, kept up to date by the round
    with strategies.opic.opic_distribute)."""
    name = "opic"
    uses_opic = True
    columns = ("cash",)

    def score(self, frontier, graph=None):
        return column(frontier, "cash")


class Omniscient(Ordering):
    """Evaluation only: the true PageRank of each URL from a ground truth.
    truth_fp / truth_rank: arrays (fingerprint, rank); unknown URLs score 0."""
    name = "omniscient"
    columns = ("fp",)

    @classmethod
    def params(cls):
        return {"truth_fp": None, "truth_rank": None}

    def score(self, frontier, graph=None):
        if self.truth_fp is None:
            raise ValueError("omniscient needs truth_fp and truth_rank")
        keys = np.asarray(self.truth_fp, dtype=np.int64)
        ranks = np.asarray(self.truth_rank, dtype=np.float64)
        order = np.argsort(keys, kind="stable")
        keys, ranks = keys[order], ranks[order]
        fp = frontier.column("fp").to_numpy(zero_copy_only=False).astype(np.int64)
        pos = np.clip(np.searchsorted(keys, fp), 0, max(len(keys) - 1, 0))
        return np.where((len(keys) > 0) & (keys[pos] == fp), ranks[pos], 0.0) if len(keys) \
            else np.zeros(len(fp))
