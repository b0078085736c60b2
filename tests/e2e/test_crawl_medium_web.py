"""End-to-end: the medium simulated web (dozens of hosts, thousands of pages) crawled to the end."""
import pytest

from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from tests.simweb import requestlog


@pytest.mark.slow
def test_medium_web_visited_set_equals_the_reachable_set(simweb_factory, tmp_path):
    web = simweb_factory("medium", seed=1)
    d = tmp_path / "crawl"
    crawlstate.start_crawl(web, d, "--delay_per_host", "0.01", "--max_pages", "3000",
                           "--max_per_host", "150", "--fetch_threads", "48")
    reports = crawlstate.run_rounds(d, "--until_empty")
    c = CrawlDir(str(d))
    visited = c.read_table("visited", c.last_committed())
    urls = visited.column("url").to_pylist()
    assert len(urls) == len(set(urls))
    fetched = {u for u, o in zip(urls, visited.column("outcome").to_pylist()) if o not in crawlstate.NOT_REQUESTED}
    reachable = set(web.ground_truth["reachable"].column("url").to_pylist())
    assert len(reachable) > 1000
    assert sorted(reachable - fetched)[:5] == [] and sorted(fetched - reachable)[:5] == []
    log = web.requests()
    assert requestlog.disallowed_requests(log, web.ground_truth) == []
    assert max(requestlog.max_concurrency_per_host(log).values()) == 1
    assert requestlog.requested_twice(log) == []
    assert sum(r["visited"] for r in reports) == len(urls)
