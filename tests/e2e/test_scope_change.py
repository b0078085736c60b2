"""Narrowing the scope between rounds: queued URLs now out of scope are never fetched; they
move from the frontier to the filtered table with their reason."""
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate


def test_urls_queued_before_a_scope_change_are_filtered_not_fetched(simweb_small, tmp_path):
    d = tmp_path / "crawl"
    crawlstate.start_crawl(simweb_small, d)
    crawlstate.run_rounds(d, "--rounds", "1")
    c = CrawlDir(str(d))
    queued = c.read_table("frontier", 1).to_pylist()
    other = {r["url"] for r in queued if not r["host"].startswith("site0.")}
    assert other, "round 1 queued URLs of several hosts"
    keep_host = next(r["host"] for r in queued if r["host"].startswith("site0.")).split(":")[0]
    crawlstate.run_rounds(d, "--rounds", "1", "--allow_hosts", keep_host, "--allow_domains", "")
    visited2 = [r for r in c.read_table("visited", 2).to_pylist() if r["round"] == 2]
    assert visited2 and all(r["host"].startswith("site0.") for r in visited2)
    filtered = {r["url"]: r["reason"] for r in c.read_table("filtered", 2).to_pylist()}
    frontier = {r["url"] for r in c.read_table("frontier", 2).to_pylist()}
    assert all(filtered.get(u) == "host_not_allowed" for u in other)
    assert not (other & frontier)
