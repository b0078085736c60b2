"""`cluster`: Tan & Mitra, "Clustering-based incremental web crawling", ACM TOIS 2010
(WWW 2007 poster) — the seeds' cluster-sampling strategy (聚类抽样策略): cluster pages on
features that predict change (URL pattern, depth, content type, size, host), sample each
cluster, give every member its cluster's change ratio, and spend the budget on the
clusters whose samples changed most (the same greedy as `sampling`, over clusters instead
of sites). Where change follows page features that cut across hosts, a cluster is more
homogeneous than a host and its sample predicts its members better.

Clustering: k-means (k-means++ start, fixed seed) on the features standardised — numeric
ones (depth, log size) as z-scores, categorical ones (URL pattern, content type, host)
one-hot over their `max_levels` most common values. `k` clusters (default: pages / 50,
between 2 and 64)."""
from __future__ import annotations

import numpy as np

from strategies.recrawl.sampling import Sampling

CATEGORICAL = ("url_pattern", "content_type", "host")
NUMERIC = ("depth", "size")


def url_pattern(url: str) -> str:
    """A URL's pattern: digits and hex runs → '#', last path segment's stem dropped
    (`/news/p17.html` → `/news/*.html`)."""
    import re
    path = re.sub(r"^[a-z]+://[^/]+", "", url or "")
    path = re.sub(r"\?.*$", "?", path)
    path = re.sub(r"\d+", "#", path)
    head, _, last = path.rpartition("/")
    ext = last.rpartition(".")[2] if "." in last else ""
    return f"{head}/*{'.' + ext if ext else ''}"


def feature_matrix(features: dict, n: int, max_levels: int = 32) -> np.ndarray:
    cols = []
    for name in NUMERIC:
        if name in features:
            v = np.asarray(features[name], dtype=np.float64)
            v = np.log1p(np.maximum(v, 0)) if name == "size" else v
            v = np.nan_to_num(v)
            sd = v.std()
            cols.append(((v - v.mean()) / sd if sd > 0 else v * 0)[:, None])
    for name in CATEGORICAL:
        if name in features:
            vals = np.asarray([str(x) for x in features[name]])
            levels, inv, counts = np.unique(vals, return_inverse=True, return_counts=True)
            top = np.argsort(-counts, kind="stable")[:max_levels]
            onehot = np.zeros((n, len(top)))
            pos = {int(lv): j for j, lv in enumerate(top)}
            for i, lv in enumerate(inv):
                j = pos.get(int(lv))
                if j is not None:
                    onehot[i, j] = 1.0
            cols.append(onehot)
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
    """Sampling over k-means clusters of page features instead of hosts."""

    name = "cluster"

    @classmethod
    def params(cls):
        return {"sample_size": 2, "k": 0, "seed": 0}

    def group_ids(self, pages):
        n = len(pages)
        k = int(self.k) or int(np.clip(n // 50, 2, 64))
        return kmeans(feature_matrix(pages.features, n), k, int(self.seed))
