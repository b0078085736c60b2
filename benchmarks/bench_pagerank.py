"""PageRank speed: strategies.graph (numpy) vs networkx vs a bare scipy CSR loop.

    .venv/bin/python -m benchmarks.bench_pagerank --edges 2000000

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


def _save(fr, out):
    import os
    import uuid
    np.savez(os.path.join(out, f"{uuid.uuid4().hex}.npz"), fp=fr[0], rank=fr[1])


def beam_run(src, dst, n, iterations, buckets):
    """transforms.score.step.PageRank on the FnApiRunner vs the numpy result after the same steps."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from transforms.score.step import PageRank
    from transforms.score.pagerankblocks import chunk_edges
    from strategies.graph import splitmix64_ids
    fps = splitmix64_ids(n)
    import os
    import tempfile
    import pyarrow as pa
    import pyarrow.parquet as pq
    out = tempfile.mkdtemp(prefix="bench_pagerank_")
    # input from Parquet, as in a crawl (beam.Create would pickle and bz2 the data into
    # the pipeline proto, which alone takes longer than the PageRank)
    for i, (s, d) in enumerate(chunk_edges(fps[src], fps[dst], 200_000)):
        pq.write_table(pa.table({"src_fp": s, "dst_fp": d}), os.path.join(out, f"e{i:03d}.parquet"))
    pq.write_table(pa.table({"fp": fps}), os.path.join(out, "nodes.parquet"))
    t = time.perf_counter()
    with beam.Pipeline(runner="FnApiRunner", options=PipelineOptions()) as p:
        nodes = (p | "ReadNodes" >> beam.io.ReadFromParquetBatched(os.path.join(out, "nodes.parquet"))
                 | "NodeArrays" >> beam.Map(lambda t: t.column("fp").to_numpy()))
        _ = (p | "ReadEdges" >> beam.io.ReadFromParquetBatched(os.path.join(out, "e*.parquet"))
             | PageRank(iterations=iterations, num_buckets=buckets, nodes=nodes)
             | beam.Map(_save, out))          # DoFns are pickled: write, don't append
    secs = time.perf_counter() - t
    ref = pagerank(src, dst, n, tol=0.0, max_iter=iterations)
    import glob
    import os
    order = np.argsort(fps)
    x = np.zeros(n)
    for fn in glob.glob(os.path.join(out, "*.npz")):
        z = np.load(fn)
        x[order[np.searchsorted(fps[order], z["fp"])]] = z["rank"]
    print(f"Beam PageRank ({iterations} steps, {buckets} buckets, FnApiRunner): {secs:.1f}s, "
          f"L1 to numpy after {iterations} steps = {l1(x, ref):.2e}")
    return (f"Beam PageRank, {iterations} steps", secs, iterations)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", type=int, default=2_000_000, help="target distinct edges")
    ap.add_argument("--tol", type=float, default=1e-10, help="L1 tolerance (all three)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip_networkx", action="store_true")
    ap.add_argument("--beam_iterations", type=int, default=0,
                    help="also run transforms.pagerank (FnApiRunner) for this many steps")
    ap.add_argument("--beam_buckets", type=int, default=16)
    a = ap.parse_args(argv)

    n = int(a.edges / 5.7)           # host_graph gives ~5.7 distinct edges per page at mean 8
    g = host_graph(n, seed=1)
    src, dst = dedupe_edges(g.src, g.dst, n)
    print(f"graph: {n} nodes, {len(src)} distinct edges")

    G = None
    if not a.skip_networkx:
        import networkx as nx
        t = time.perf_counter()
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from(zip(src.tolist(), dst.tolist()))
        print(f"networkx DiGraph build: {time.perf_counter() - t:.2f}s (not counted)")
    # interleaved repeats, best of each: the machine may be shared, so a slow spell hits
    # every implementation alike instead of one of them
    best = {}
    outs = {}
    op = PageRankOperator(src, dst, n)
    jobs = [("numpy", lambda: pagerank(src, dst, n, tol=a.tol, return_info=True)),
            ("numpy_loop", lambda: op.iterate(tol=a.tol)),
            ("numpy_scipy_backend", lambda: pagerank(src, dst, n, tol=a.tol, backend="scipy")),
            ("scipy", lambda: scipy_loop(src, dst, n, tol=a.tol))]
    if G is not None:
        # networkx stops at err < n * tol; give it tol / n so both stop at the same L1 bound
        jobs.append(("networkx", lambda: nx.pagerank(G, tol=a.tol / n, max_iter=1000)))
    for _ in range(a.repeat):
        for name, fn in jobs:
            t = time.perf_counter()
            outs[name] = fn()
            best[name] = min(best.get(name, np.inf), time.perf_counter() - t)
    x_np, info = outs["numpy"]
    x_sp, it_sp = outs["scipy"]
    t_np = best["numpy"]
    rows = [("numpy (strategies.graph), edge arrays -> ranks", t_np, info["iterations"]),
            ("numpy power loop only (prepared operator)", best["numpy_loop"],
             info["iterations"]),
            ("strategies.graph, backend='scipy'", best["numpy_scipy_backend"],
             info["iterations"]),
            ("scipy CSR loop (incl. building the matrix)", best["scipy"], it_sp)]
    if G is not None:
        ref = outs["networkx"]
        x_nx = np.array([ref[i] for i in range(n)])
        rows.append(("networkx.pagerank(G) (DiGraph prebuilt)", best["networkx"], None))
        print(f"L1(numpy, networkx) = {l1(x_np, x_nx):.2e}")
    print(f"L1(numpy, scipy) = {l1(x_np, x_sp):.2e}")
    if a.beam_iterations:
        rows.append(beam_run(src, dst, n, a.beam_iterations, a.beam_buckets))
    print(f"{'implementation':50s} {'seconds':>8s} {'iters':>6s} {'vs numpy':>9s}")
    for name, t, it in rows:
        print(f"{name:50s} {t:8.3f} {it if it else '':>6} {t / t_np:8.2f}x")
    return rows


if __name__ == "__main__":
    main()
