"""End-to-end: sitemaps listed in robots.txt are read and their URLs queued with lastmod."""
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from tests.simweb import requestlog


def test_robots_sitemaps_index_and_gzipped_children_feed_the_frontier(simweb_small, tmp_path):
    d = tmp_path / "crawl"
    crawlstate.start_crawl(simweb_small, d, "--sitemaps", "true")
    crawlstate.run_rounds(d, "--rounds", "3")
    c = CrawlDir(str(d))
    n = c.last_committed()
    visited = {r["url"]: r for r in c.read_table("visited", n).to_pylist()}
    sitemap_docs = {u: r for u, r in visited.items() if "sitemap" in u.rsplit("/", 1)[-1]}
    assert any(u.endswith("/sitemap_index.xml") and r["outcome"] == "ok" for u, r in sitemap_docs.items())
    gz = [r for u, r in sitemap_docs.items() if u.endswith(".xml.gz")]
    assert gz and all(r["outcome"] == "ok" and r["outlinks"] > 0 for r in gz)
    rows = c.read_table("frontier", n).to_pylist() + list(visited.values())
    from_sitemaps = [r for r in c.read_table("frontier", n).to_pylist() if r["source"] == "sitemap"]
    assert from_sitemaps and sum(r["lastmod"] is not None for r in from_sitemaps) >= len(from_sitemaps) // 2
    assert len({r["url"] for r in rows}) == len(rows), "a sitemap URL was queued twice"
    assert requestlog.disallowed_requests(simweb_small.requests(), simweb_small.ground_truth) == []
