"""The crawl graph as dense integer arrays, and PageRank on it by numpy power iteration.

Pure numpy (no Beam; scipy only if asked for), so the round's Score step, the offline
evaluator and the tests share one implementation. The sparse product is a gather
(`x[src]`) plus a `np.bincount` scatter over edges sorted by destination: about two
scipy CSR mat-vecs' worth of memory traffic per step, since numpy cannot fuse the two
(measured in benchmarks/bench_pagerank.py). The default backend ("auto") uses scipy's CSR
mat-vec when scipy is installed (it is a runtime requirement), numpy's otherwise.

PageRank definition (the same as `networkx.pagerank` with default arguments):

    x' = damping * (A^T D^-1 x  +  (sum of x over dangling nodes) / n)  +  (1 - damping) / n

where D is the out-degree, dangling nodes (out-degree 0) spread their rank uniformly and
duplicate (src, dst) edges count once (networkx DiGraph semantics). Iteration stops when
the L1 change of one step is below `tol` (an absolute L1 bound, unlike networkx's n*tol).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from strategies.hashing import splitmix64

DAMPING = 0.85
TOL = 1e-10
MAX_ITER = 1000


@dataclass
class CrawlGraph:
    """The downloaded ∪ pending graph with dense node ids.

    urls_fp: int64 URL fingerprints; the index of a fingerprint is its node id.
    src, dst: int32 edge endpoints (node ids). Only downloaded pages have known out-links.
    downloaded: bool per node (True = fetched; False = pending in the frontier).
    """
    urls_fp: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    downloaded: np.ndarray
    _sorted: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def num_nodes(self) -> int:
        return int(len(self.urls_fp))

    @classmethod
    def from_edges(cls, src_fp, dst_fp, downloaded_fp, pending_fp=()) -> "CrawlGraph":
        """Build from fingerprint arrays: edges (src_fp -> dst_fp), fetched and pending fps.

        Nodes are the union of all fingerprints given; edges whose endpoints are not
        nodes cannot occur (both ends are added).
        """
        src_fp = np.asarray(src_fp, dtype=np.int64)
        dst_fp = np.asarray(dst_fp, dtype=np.int64)
        downloaded_fp = np.asarray(downloaded_fp, dtype=np.int64)
        pending_fp = np.asarray(pending_fp, dtype=np.int64)
        fps = unique(np.concatenate([downloaded_fp, pending_fp, src_fp, dst_fp]))
        src = np.searchsorted(fps, src_fp).astype(np.int32)
        dst = np.searchsorted(fps, dst_fp).astype(np.int32)
        down = np.zeros(len(fps), dtype=bool)
        down[np.searchsorted(fps, downloaded_fp)] = True
        # urls_fp is sorted here, so node_ids() can binary-search without a copy.
        return cls(fps, src, dst, down, _sorted=(fps, np.arange(len(fps))))

    def node_ids(self, fps) -> np.ndarray:
        """Node id of each fingerprint, -1 where the fingerprint is not a node."""
        if self._sorted is None:
            order = np.argsort(self.urls_fp, kind="stable")
            self._sorted = (self.urls_fp[order], order)
        keys, order = self._sorted
        fps = np.asarray(fps, dtype=np.int64)
        if len(keys) == 0:
            return np.full(len(fps), -1, dtype=np.int64)
        pos = np.clip(np.searchsorted(keys, fps), 0, len(keys) - 1)
        found = keys[pos] == fps
        return np.where(found, order[pos], -1).astype(np.int64)

    def pagerank(self, **kw) -> np.ndarray:
        return pagerank(self.src, self.dst, self.num_nodes, **kw)


def unique(a) -> np.ndarray:
    """Sorted distinct values. np.unique's default (hash-based) path on numpy 2.4 is ~100x
    slower than sorting on millions of int64s, so sort and mask instead."""
    a = np.sort(np.asarray(a).ravel())
    if len(a) > 1:
        a = a[np.concatenate([[True], a[1:] != a[:-1]])]
    return a


def dedupe_edges(src, dst, n):
    """Distinct (src, dst) pairs, sorted by (dst, src)."""
    key = np.asarray(dst, dtype=np.int64) * np.int64(max(n, 1)) + np.asarray(src, dtype=np.int64)
    key = unique(key)
    return (key % n).astype(np.int64), (key // n).astype(np.int64)


class PageRankOperator:
    """Precomputed edge layout for repeated power iterations on one graph.

    Sorting edges by destination once makes the per-iteration scatter (`np.bincount`)
    stream through memory; the gather `x[src]` is the only random access.
    """

    def __init__(self, src, dst, n: int, dedupe: bool = True, backend: str = "auto"):
        """backend: "scipy" (one CSR mat-vec per step, ~2x faster per step than numpy),
        "numpy" (gather + np.bincount, no other dependency) or "auto" (scipy if installed)."""
        if backend == "auto":
            try:
                import scipy.sparse  # noqa: F401
                backend = "scipy"
            except ImportError:
                backend = "numpy"
        if backend not in ("numpy", "scipy"):
            raise ValueError(f"unknown PageRank backend {backend!r}")
        self.n = int(n)
        src = np.asarray(src)
        dst = np.asarray(dst)
        if len(src) and (src.min() < 0 or dst.min() < 0 or src.max() >= n or dst.max() >= n):
            raise ValueError("edge endpoint outside [0, n)")
        if dedupe:
            src, dst = dedupe_edges(src, dst, self.n)
        else:
            order = np.argsort(dst, kind="stable")
            src, dst = src[order], dst[order]
        # intp indices: numpy converts any other index type to intp on every call
        self.src = src.astype(np.intp)
        self.dst = dst.astype(np.intp)
        outdeg = np.bincount(self.src, minlength=self.n).astype(np.float64)
        self.outdeg = outdeg
        self.dangling = outdeg == 0
        self.inv_outdeg = np.zeros(self.n)
        np.divide(1.0, outdeg, out=self.inv_outdeg, where=~self.dangling)
        self._xs = np.empty(self.n)
        self._csr = None
        if backend == "scipy":
            import scipy.sparse as sp   # optional: only when asked for
            self._csr = sp.csr_matrix((np.ones(len(self.src)), (self.dst, self.src)),
                                      shape=(self.n, self.n))

    def step(self, x: np.ndarray, damping: float = DAMPING) -> np.ndarray:
        n = self.n
        np.multiply(x, self.inv_outdeg, out=self._xs)
        if self._csr is not None:
            y = self._csr @ self._xs
        else:
            # gather + scatter; bincount over dst-sorted edges writes sequentially
            y = np.bincount(self.dst, weights=self._xs[self.src], minlength=n)
        y = y.astype(np.float64, copy=False)   # bincount of no edges is int64
        leak = x[self.dangling].sum()
        y *= damping
        y += (damping * leak + (1.0 - damping)) / n
        return y

    def iterate(self, x0=None, damping=DAMPING, tol=TOL, max_iter=MAX_ITER):
        """Power iteration; returns (ranks, iterations, last L1 change)."""
        n = self.n
        if n == 0:
            return np.zeros(0), 0, 0.0
        if x0 is None:
            x = np.full(n, 1.0 / n)
        else:
            x = np.asarray(x0, dtype=np.float64).copy()
            s = x.sum()
            x = x / s if s > 0 else np.full(n, 1.0 / n)
        err = np.inf
        it = 0
        for it in range(1, max_iter + 1):
            y = self.step(x, damping)
            err = float(np.abs(y - x).sum())
            x = y
            if err < tol:
                break
        return x, it, err


def pagerank(src, dst, n: int, damping: float = DAMPING, tol: float = TOL,
             max_iter: int = MAX_ITER, x0=None, dedupe: bool = True,
             return_info: bool = False, backend: str = "auto"):
    """PageRank of the graph with `n` nodes and edges (src[i] -> dst[i]).

    x0 warm-starts the iteration (e.g. last round's ranks). With tol=0 exactly `max_iter`
    steps are made (used to compare with the Beam version step for step).
    """
    op = PageRankOperator(src, dst, n, dedupe=dedupe, backend=backend)
    x, it, err = op.iterate(x0=x0, damping=damping, tol=tol, max_iter=max_iter)
    if return_info:
        return x, {"iterations": it, "l1_change": err}
    return x


def temporary_scores(pr: np.ndarray, src, dst, n: int) -> np.ndarray:
    """Σ PR(q)/outdeg(q) over the known in-linkers q of each node (Cho et al.'s estimate
    for pages found since the last PageRank computation). `pr` is indexed by node id and
    0 for nodes that had no rank yet; outdeg counts all known out-links of q."""
    src = np.asarray(src)
    outdeg = np.bincount(src, minlength=n).astype(np.float64)
    w = np.zeros(n)
    np.divide(pr[:n] if len(pr) >= n else np.pad(pr, (0, n - len(pr))), outdeg,
              out=w, where=outdeg > 0)
    return np.bincount(np.asarray(dst), weights=w[src], minlength=n)


def splitmix64_ids(n: int, salt: int = 0x5EEDF00D) -> np.ndarray:
    """n distinct pseudo-random int64 'fingerprints' for node ids 0..n-1 (a bijection of
    the ids, so they never collide), for tests and benchmarks on integer graphs."""
    return splitmix64(np.arange(n, dtype=np.uint64) ^ np.uint64(salt)).view(np.int64)


def l1(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).sum())
