"""The real crawl agrees with the evaluator (issue #5): crawling the medium simulated web for
a fixed page budget with --strategy opic and --strategy bfs, the area under the curve of
true PageRank captured by the real fetch order ranks the two strategies as the evaluator's
replay over the same ground truth does. Two crawls of 600 pages: marker `long` (make
test-long; .ci/run runs it).

The evaluator and the crawl score the frontier with the same `get_ordering` object, so a
break in a strategy's score flips both alike and agreement alone would still hold: the test
also asserts what the evaluator measures on this web, OPIC ahead of BFS by at least MARGIN
of BFS's area, on both sides (seen over three runs: OPIC 0.191-0.193, BFS 0.159-0.169;
BFS's ties among equal depths fall differently from run to run)."""
import numpy as np
import pytest

from pipelines import evaluate
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate

BUDGET, BATCH, PER_HOST = 600, 150, 30
MARGIN = 0.05   # OPIC leads BFS by 14-21 % on this web; a broken ordering falls below BFS


def _auc(truth_of, order_urls, total):
    """Mean share of the graph's PageRank captured over the first BUDGET fetches."""
    pr = np.array([truth_of.get(u, 0.0) for u in order_urls[:BUDGET]])
    return float(np.cumsum(pr).sum() / total / BUDGET)


@pytest.mark.long
def test_opic_and_bfs_rank_the_same_in_a_real_crawl_and_in_the_evaluator(simweb_factory, tmp_path):
    web = simweb_factory("medium", seed=1)
    truth_dir = tmp_path / "truth"
    web.web.export(truth_dir)
    truth = web.ground_truth["pagerank"]
    truth_of = dict(zip(truth.column("url").to_pylist(), truth.column("pagerank").to_pylist()))
    total = sum(truth_of.values())
    g = evaluate.load_graph(pages=truth_dir / "pages.parquet", links=truth_dir / "links.parquet",
                            seeds=truth_dir / "seeds.parquet")
    evaluator, real = {}, {}
    for strategy in ("opic", "bfs"):
        r = evaluate.simulate(g, strategy, batch_size=BATCH, per_host_cap=PER_HOST, max_pages=BUDGET)
        urls = g.urls.to_pylist()
        evaluator[strategy] = _auc(truth_of, [urls[i] for i in r.order], total)
        d = tmp_path / strategy
        crawlstate.start_crawl(web, d, "--strategy", strategy, "--max_pages", str(BATCH),
                               "--max_per_host", str(PER_HOST), "--delay_per_host", "0.01")
        crawlstate.run_rounds(d, "--max_total_pages", str(BUDGET))
        c = CrawlDir(str(d))
        v = c.read_table("visited", c.last_committed()).to_pylist()
        v = [r for r in v if r["outcome"] not in ("robots_denied", "forbidden_address")]
        v.sort(key=lambda r: (r["round"], r["fetch_time"]))
        real[strategy] = _auc(truth_of, [r["url"] for r in v], total)
    print(f"\nAUC over the first {BUDGET} fetches: evaluator {evaluator}  real crawl {real}")
    assert (evaluator["opic"] > evaluator["bfs"]) == (real["opic"] > real["bfs"])
    for side, auc in (("evaluator", evaluator), ("real crawl", real)):
        assert auc["opic"] >= (1 + MARGIN) * auc["bfs"], (
            f"{side}: OPIC's area {auc['opic']:.4f} is not {MARGIN:.0%} above BFS's {auc['bfs']:.4f}")
