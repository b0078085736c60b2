"""`cluster`: Tan & Mitra, "Clustering-based incremental web crawling", ACM TOIS 2010
(WWW 2007 poster) — the seeds' cluster-sampling strategy (聚类抽样策略): cluster pages on
features that predict change (URL pattern, depth, content type, size, host), sample each
cluster, give every member its cluster's change ratio, and spend the budget on the
clusters whose samples changed most (the same greedy as `sampling`, over clusters instead
of sites). Where change follows page features that cut across hosts, a cluster is more
homogeneous than a host and its sample predicts its members better.

Clustering: k-means (k-means++ start, fixed seed) on the features standardised — numeric
ones (depth, log size) as z-scores, categorical ones (URL pattern, content type, host)
one-hot over their `k` (at least 32) most common values. `k` clusters (default: pages /
50, between 2 and 64).

Which features predict change is learnt from the sample, not assumed (Tan & Mitra choose
the features that predict change): once some pages have been revisited, each feature's
block is weighted by the share of the variance of the sampled pages' change ratio (changes
detected / intervals observed) that the feature explains — ω², the between-level variance
adjusted for the number of levels, so a feature with 40 levels gains nothing by chance;
numeric features are cut into deciles for it. Squared distances add the blocks in
proportion to their ω², so when change follows the host the clusters are hosts and the
policy is `sampling`; when it follows the URL pattern, the clusters cut across hosts.
Before any revisit (or when no feature explains anything) every feature weighs the same."""
from __future__ import annotations

import re

import numpy as np

from strategies.recrawl.sampling import Sampling

CATEGORICAL = ("url_pattern", "content_type", "host")
NUMERIC = ("depth", "size")


def url_pattern(url: str) -> str:
    """A URL's pattern: digits and hex runs → '#', last path segment's stem dropped
    (`/news/p17.html` → `/news/*.html`)."""
    path = re.sub(r"^[a-z]+://[^/]+", "", url or "")
    path = re.sub(r"\?.*$", "?", path)
    path = re.sub(r"\d+", "#", path)
    head, _, last = path.rpartition("/")
    ext = last.rpartition(".")[2] if "." in last else ""
    return f"{head}/*{'.' + ext if ext else ''}"


def _numeric(features, name):
    v = np.asarray(features[name], dtype=np.float64)
    return np.nan_to_num(np.log1p(np.maximum(v, 0)) if name == "size" else v)


def _levels(features, name, bins=10):
    """Integer level per page: the categories, or the decile of a numeric feature."""
    if name in NUMERIC:
        v = _numeric(features, name)
        edges = np.unique(np.quantile(v, np.linspace(0, 1, bins + 1)[1:-1]))
        return np.searchsorted(edges, v, side="right")
    return np.unique(np.asarray([str(x) for x in features[name]]), return_inverse=True)[1]


def explained_share(levels, y) -> float:
    """ω² (Hays): the share of the variance of y that the grouping `levels` explains, with
    the between-groups sum of squares corrected for what k groups explain by chance;
    clipped to [0, 1]."""
    y = np.asarray(y, dtype=np.float64)
    inv = np.unique(np.asarray(levels), return_inverse=True)[1]
    n, k = len(y), int(inv.max()) + 1 if len(y) else 0
    if n - k < 1 or k < 2:
        return 0.0
    ss_total = float(((y - y.mean()) ** 2).sum())
    if ss_total <= 0:
        return 0.0
    cnt = np.bincount(inv, minlength=k)
    means = np.bincount(inv, weights=y, minlength=k) / np.maximum(cnt, 1)
    ss_between = float((cnt * (means - y.mean()) ** 2).sum())
    ms_within = (ss_total - ss_between) / (n - k)
    return float(np.clip((ss_between - (k - 1) * ms_within) / (ss_total + ms_within), 0.0, 1.0))


def feature_weights(features: dict, visits, changes) -> dict:
    """Feature name -> ω² of the sampled change ratio (pages with ≥ 1 observed interval);
    every feature 1.0 when nothing was sampled or nothing explains anything."""
    names = [m for m in NUMERIC + CATEGORICAL if m in features]
    ones = {m: 1.0 for m in names}
    if visits is None or changes is None:
        return ones
    v = np.nan_to_num(np.asarray(visits, dtype=np.float64))
    seen = v > 0
    if seen.sum() < 3:
        return ones
    y = np.nan_to_num(np.asarray(changes, dtype=np.float64))[seen] / v[seen]
    w = {m: explained_share(_levels(features, m)[seen], y) for m in names}
    return w if any(x > 0 for x in w.values()) else ones


def feature_matrix(features: dict, n: int, max_levels: int = 32, weights=None) -> np.ndarray:
    """Pages × columns: z-scored numeric features, one-hot categorical ones, each block
    scaled by √weight (so its squared distances count in proportion to the weight)."""
    cols = []
    weights = weights or {}
    for name in NUMERIC:
        if name in features and weights.get(name, 1.0) > 0:
            v = _numeric(features, name)
            sd = v.std()
            z = (v - v.mean()) / sd if sd > 0 else v * 0
            cols.append(np.sqrt(weights.get(name, 1.0)) * z[:, None])
    for name in CATEGORICAL:
        if name in features and weights.get(name, 1.0) > 0:
            vals = np.asarray([str(x) for x in features[name]])
            levels, inv, counts = np.unique(vals, return_inverse=True, return_counts=True)
            top = np.argsort(-counts, kind="stable")[:max_levels]
            onehot = np.zeros((n, len(top)))
            pos = {int(lv): j for j, lv in enumerate(top)}
            for i, lv in enumerate(inv):
                j = pos.get(int(lv))
                if j is not None:
                    onehot[i, j] = 1.0
            cols.append(np.sqrt(weights.get(name, 1.0)) * onehot)
    return np.hstack(cols) if cols else np.zeros((n, 1))


def kmeans(x: np.ndarray, k: int, seed: int = 0, iters: int = 50) -> np.ndarray:
    """Cluster labels of the rows of x (k-means++ start, Lloyd iterations)."""
    n = len(x)
    k = max(1, min(k, n))
    rng = np.random.default_rng(seed)
    centres = [x[rng.integers(n)]]
    d2 = ((x - centres[0]) ** 2).sum(1)
    for _ in range(1, k):
        total = d2.sum()
        i = rng.choice(n, p=d2 / total) if total > 0 else rng.integers(n)
        centres.append(x[i])
        d2 = np.minimum(d2, ((x - x[i]) ** 2).sum(1))
    c = np.array(centres)
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iters):
        dist = (x * x).sum(1)[:, None] - 2 * x @ c.T + (c * c).sum(1)[None, :]
        new = dist.argmin(1)
        if (new == labels).all() and _ > 0:
            break
        labels = new
        for j in range(k):
            m = labels == j
            if m.any():
                c[j] = x[m].mean(0)
    return labels


class Cluster(Sampling):
    """Sampling over k-means clusters of page features (weighted by how much of the
    sampled change they explain) instead of hosts."""

    name = "cluster"

    @classmethod
    def params(cls):
        return {"sample_size": 2, "k": 0, "seed": 0}

    def group_ids(self, pages):
        n = len(pages)
        k = int(self.k) or int(np.clip(n // 50, 2, 64))
        w = feature_weights(pages.features, pages.visits, pages.changes)
        return kmeans(feature_matrix(pages.features, n, max(k, 32), w), k, int(self.seed))
