"""PageRank speed: strategies.graph (numpy) vs networkx vs a bare scipy CSR loop.

    .venv/bin/python -m strategies.bench_pagerank --edges 2000000

All three run the same number of power iterations to the same L1 tolerance on the same
host-structured graph (strategies.hostgraph). networkx is timed twice: the full call
(`nx.pagerank(G)`, which first converts the DiGraph to a scipy matrix) and its scipy
power loop alone; "scipy loop" is a hand-written CSR mat-vec loop — the limit a numpy
implementation can hope to approach. Needs networkx and scipy (dev requirements).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from strategies.graph import PageRankOperator, dedupe_edges, l1, pagerank
from strategies.hostgraph import host_graph


def scipy_loop(src, dst, n, damping=0.85, tol=1e-10, max_iter=1000):
    import scipy.sparse as sp
    outdeg = np.bincount(src, minlength=n).astype(float)
    inv = np.divide(1.0, outdeg, out=np.zeros(n), where=outdeg > 0)
    A = sp.csr_matrix((inv[src], (dst, src)), shape=(n, n))     # column-stochastic, CSR by dst
    dangling = outdeg == 0
    x = np.full(n, 1.0 / n)
    for it in range(1, max_iter + 1):
        y = damping * (A @ x) + (damping * x[dangling].sum() + 1.0 - damping) / n
        err = np.abs(y - x).sum()
        x = y
        if err < tol:
            break
    return x, it


def best_of(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", type=int, default=2_000_000, help="target distinct edges")
    ap.add_argument("--tol", type=float, default=1e-10, help="L1 tolerance (all three)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip_networkx", action="store_true")
    a = ap.parse_args(argv)

    n = int(a.edges / 5.7)           # host_graph gives ~5.7 distinct edges per page at mean 8
    g = host_graph(n, seed=1)
    src, dst = dedupe_edges(g.src, g.dst, n)
    print(f"graph: {n} nodes, {len(src)} distinct edges")

    t_np, (x_np, info) = best_of(lambda: pagerank(src, dst, n, tol=a.tol, return_info=True),
                                 a.repeat)
    op = PageRankOperator(src, dst, n)
    t_np_loop, _ = best_of(lambda: op.iterate(tol=a.tol), a.repeat)
    t_sp, (x_sp, it_sp) = best_of(lambda: scipy_loop(src, dst, n, tol=a.tol), a.repeat)
    rows = [("numpy (strategies.graph), edge arrays -> ranks", t_np, info["iterations"]),
            ("numpy power loop only (prepared operator)", t_np_loop, info["iterations"]),
            ("scipy CSR loop (incl. building the matrix)", t_sp, it_sp)]
    if not a.skip_networkx:
        import networkx as nx
        t = time.perf_counter()
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from(zip(src.tolist(), dst.tolist()))
        t_build = time.perf_counter() - t
        # networkx stops at err < n * tol; give it tol / n so both stop at the same L1 bound
        t_nx, ref = best_of(lambda: nx.pagerank(G, tol=a.tol / n, max_iter=1000), 1)
        x_nx = np.array([ref[i] for i in range(n)])
        rows.append(("networkx.pagerank(G) (DiGraph prebuilt)", t_nx, None))
        print(f"networkx DiGraph build: {t_build:.2f}s (not counted)")
        print(f"L1(numpy, networkx) = {l1(x_np, x_nx):.2e}")
    print(f"L1(numpy, scipy) = {l1(x_np, x_sp):.2e}")
    print(f"{'implementation':50s} {'seconds':>8s} {'iters':>6s} {'vs numpy':>9s}")
    for name, t, it in rows:
        print(f"{name:50s} {t:8.3f} {it if it else '':>6} {t / t_np:8.2f}x")
    return rows


if __name__ == "__main__":
    main()
