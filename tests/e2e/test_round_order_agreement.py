"""Issue #11: a real crawl in rounds delivers the order the evaluator's replay promises.

A small web of a few large hosts with many links per page is crawled with each
whole-frontier strategy in rounds of K pages until half its pages are fetched; the
relative AUC (true PageRank captured against pages fetched, up to 50 % of the pages,
over the perfect order's) of the real fetch order — the visited table in (round,
fetch_time) order — must be within 0.02 of the evaluator's replay of the same graph with
the same K and caps. The replay models what a round does: generate's selection, scores
recomputed once per round, and the round's hosts fetched at once, each in list order at its
politeness pace (two of the web's four hosts ask robots Crawl-delay 0.1, so they fall
behind the other two inside a round; without that pace the replay was 0.014-0.016 above
the real order, with it the gap measured 0.0003).
"""
import pytest

from pipelines import evaluate
from pipelines.crawldir import CrawlDir
from pipelines.ordering_report import NOT_FETCHED
from tests.e2e import crawlstate

pytestmark = pytest.mark.long   # not in the default suite: make test-long (.ci/run runs it)

K, PER_HOST = 60, 60
WEB = dict(n_pages=500, mean_extra_links=30.0)
FETCH_SECONDS = 0.005   # a loopback fetch of a simulated page, about


def real_order(g, crawl_dir):
    c = CrawlDir(str(crawl_dir))
    v = c.read_table("visited", c.last_committed(),
                     columns=["url", "round", "fetch_time", "outcome"]).to_pylist()
    v = sorted((r for r in v if r["outcome"] not in NOT_FETCHED),
               key=lambda r: (r["round"], r["fetch_time"]))
    pos = {u: i for i, u in enumerate(g.urls.to_pylist())}
    return [pos[r["url"]] for r in v if r["url"] in pos]


@pytest.fixture(scope="module")
def bigweb(tmp_path_factory):
    from tests.simweb.process import SimWebProcess
    d = tmp_path_factory.mktemp("bighosts")
    with SimWebProcess("bighosts", seed=1, workdir=d / "web", **WEB) as web:
        web.web.export(d / "truth")
        g = evaluate.load_graph(pages=d / "truth" / "pages.parquet",
                                links=d / "truth" / "links.parquet",
                                seeds=d / "truth" / "seeds.parquet")
        yield web, g


@pytest.mark.parametrize("strategy", ["opic", "partial_pagerank"])
def test_real_rounds_fetch_in_the_order_the_replay_promises(bigweb, tmp_path, strategy):
    web, g = bigweb
    budget = g.n // 2 + K
    crawlstate.start_crawl(web, tmp_path, "--strategy", strategy, "--max_pages", str(K),
                           "--max_per_host", str(PER_HOST), "--delay_per_host", "0")
    crawlstate.run_rounds(tmp_path, "--max_total_pages", str(budget))
    # the replay knows each host's politeness: two of the four hosts ask Crawl-delay 0.1
    c = CrawlDir(str(tmp_path))
    hosts = c.read_table("hosts", c.last_committed(), columns=["host", "crawl_delay"]).to_pylist()
    pace = evaluate.host_pace({h["host"].split(":")[0]: h["crawl_delay"] for h in hosts},  # graph: no port
                              0.0, FETCH_SECONDS)
    assert sum(p > FETCH_SECONDS for p in pace.values()) == 2, pace
    replay = evaluate.relative_auc(g, evaluate.simulate(
        g, strategy, batch_size=K, per_host_cap=PER_HOST, max_pages=budget,
        host_seconds=pace).order)
    order = real_order(g, tmp_path)
    assert len(order) >= g.n // 2
    real = evaluate.relative_auc(g, order)
    print(f"\n{strategy}: relative AUC@50% real {real:.4f} replay {replay:.4f} ({g.n} pages)")
    assert abs(real - replay) <= 0.02
