"""End-to-end: strategies that need the whole frontier run inside real rounds."""
import numpy as np
import pytest

from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate


@pytest.mark.parametrize("strategy", ["opic", "larger_sites_first"])  # partial_pagerank: below
def test_whole_frontier_strategy_scores_every_round(simweb_small, tmp_path, strategy):
    d = tmp_path / strategy
    crawlstate.start_crawl(simweb_small, d, "--strategy", strategy, "--max_pages", "15")
    crawlstate.run_rounds(d, "--rounds", "2")
    c = CrawlDir(str(d))
    assert c.committed_rounds() == [0, 1, 2]
    assert c.read_report(2)["visited"] > 0
    for n in c.committed_rounds():
        f = c.read_table("frontier", n)
        if f.num_rows == 0:
            continue
        scores = f.column("score").to_numpy()
        assert np.isfinite(scores).all()
        if strategy == "opic":
            state = c.read_table("opic", n)
            assert abs(state.column("cash").to_numpy().sum() - 1.0) < 1e-9, f"round {n}: cash not conserved"
            assert np.array_equal(scores, f.column("cash").to_numpy())


@pytest.mark.slow
def test_beam_pagerank_path_scores_the_frontier_as_the_in_memory_path(simweb_small, tmp_path):
    import shutil
    a = tmp_path / "memory"
    crawlstate.start_crawl(simweb_small, a, "--strategy", "partial_pagerank", "--max_pages", "20")
    crawlstate.run_rounds(a, "--rounds", "1")
    b = tmp_path / "beam"
    shutil.copytree(a, b)
    crawlstate.run_rounds(a, "--rounds", "1", "--pagerank_path", "memory")
    crawlstate.run_rounds(b, "--rounds", "1", "--pagerank_path", "beam", "--pagerank_iterations", "80")
    fa, fb = (CrawlDir(str(d)).read_table("frontier", 2).to_pylist() for d in (a, b))
    sa, sb = ({r["url"]: r["score"] for r in f} for f in (fa, fb))
    assert set(sa) == set(sb) and len(sa) > 10
    top = max(sa.values())
    assert top > 0
    assert max(abs(sa[u] - sb[u]) for u in sa) <= 1e-6 * top * len(sa)
