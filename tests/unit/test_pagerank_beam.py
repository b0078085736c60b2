"""The Beam PageRank (transforms.score.step.PageRank) equals the in-memory one."""
import numpy as np
import pyarrow as pa
import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that

from strategies.graph import pagerank
from transforms.score.step import PageRank, RanksToTables
from transforms.score.pagerankblocks import chunk_edges


def _graph(n=400, m=2400, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n, m)
    d = np.where(rng.random(m) < 0.5, rng.integers(0, n, m), (rng.zipf(1.6, m) - 1) % n)
    keep = s % 7 != 3                                   # some dangling nodes
    # fingerprints: arbitrary (also negative) int64s, not dense ids
    fps = np.unique(rng.integers(-2**62, 2**62, n * 2))[:n]
    rng.shuffle(fps)
    return s[keep], d[keep], n, fps


def _collect(expected_by_fp, tol):
    def check(parts):
        fps = np.concatenate([p[0] for p in parts])
        ranks = np.concatenate([p[1] for p in parts])
        assert len(fps) == len(expected_by_fp) == len(np.unique(fps))
        err = sum(abs(r - expected_by_fp[int(f)]) for f, r in zip(fps, ranks))
        assert err < tol, f"L1 {err}"
    return check


def test_beam_pagerank_equals_in_memory_step_for_step_and_converged():
    s, d, n, fps = _graph()
    steps = 20
    exact = pagerank(s, d, n, tol=0.0, max_iter=steps)             # same number of steps
    conv = pagerank(s, d, n, tol=1e-14)
    assert np.abs(exact - conv).sum() < 1e-6
    with TestPipeline(runner="FnApiRunner") as p:
        edges = p | beam.Create(chunk_edges(fps[s], fps[d], chunk_size=700))
        nodes = p | "Nodes" >> beam.Create([fps])     # some nodes have no edges at all
        ranks = edges | PageRank(iterations=steps, num_buckets=5, nodes=nodes)
        assert_that(ranks, _collect(dict(zip(fps.tolist(), exact)), 1e-12), label="steps")
        assert_that(ranks, _collect(dict(zip(fps.tolist(), conv)), 1e-6), label="converged")


def test_isolated_nodes_and_arrow_chunks():
    # 0 -> 1, 1 -> 2, 2 -> 0 plus isolated node 3 given only as a node
    src, dst = np.array([10, 11, 12]), np.array([11, 12, 10])
    ref = pagerank(np.array([0, 1, 2]), np.array([1, 2, 0]), 4, tol=0.0, max_iter=10)
    with TestPipeline(runner="FnApiRunner") as p:
        edges = p | "E" >> beam.Create([pa.table({"src_fp": src, "dst_fp": dst})])
        nodes = p | "N" >> beam.Create([np.array([13, 10])])
        ranks = edges | PageRank(iterations=10, num_buckets=3, nodes=nodes)
        assert_that(ranks, _collect({10: ref[0], 11: ref[1], 12: ref[2], 13: ref[3]}, 1e-12))
        tables = ranks | RanksToTables()
        assert_that(tables | beam.Map(lambda t: t.num_rows) | beam.CombineGlobally(sum),
                    lambda xs: xs == [4] or (_ for _ in ()).throw(AssertionError(xs)),
                    label="rows")
