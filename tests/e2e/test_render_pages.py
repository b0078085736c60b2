"""End-to-end (issue #19): crawling app.simweb.test (links and text built by a script) and
feed.simweb.test (built from a fetch() of a JSON endpoint).

Without rendering the crawl finds only the two entry pages; with --render auto it finds every
page of both hosts (the ground truth's), records which pages were rendered and how many links
rendering added, remembers per host that rendering helped, and the server's log shows the
per-host delay kept between all requests (pages and the scripts' sub-requests) and no request
to a path robots.txt disallows (each shell also loads /private/analytics.js).
The rendering tests skip where Chromium is missing (CI installs it and fails on a skip:
tests/ciskips.py); the crawl without rendering needs no browser and always runs.
"""
import playwright.async_api  # noqa: F401 - required (requirements.txt): a missing package is an error
import pytest

from pipelines import inject
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from tests.simweb import requestlog
from tests.simweb import scripted
from tests.simweb.process import SimWebProcess
from transforms.fetch import render
from transforms.fetch.renderpolicy import RenderConfig

missing = render.unavailable(RenderConfig("auto"))
needs_browser = pytest.mark.skipif(missing is not None, reason=f"rendering unavailable: {missing}")
DELAY = 0.2
PAGES = 3          # pages besides / per scripted host: a short test


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    w = SimWebProcess("small", seed=1, workdir=tmp_path_factory.mktemp("simweb"), scripted=True,
                       scripted_pages=PAGES)
    try:
        yield w
    finally:
        w.stop()


def _crawl(web, d, *flags):
    hosts = [h.name for h in web.web.scripted_hosts]
    seeds = [web.web.base_url(h) + "/" for h in hosts]
    args = ["--crawl_dir", str(d), "--resolve_file", str(web.hostmap_file), "--allow_loopback", "true",
            "--delay_per_host", str(DELAY), "--allow_hosts", ",".join(hosts), "--sitemaps", "false",
            "--progress_seconds", "0", *flags]
    assert inject.main(args + [a for s in seeds for a in ("--seed", s)]) == 0
    crawlstate.run_rounds(d, "--rounds", "3")
    c = CrawlDir(str(d))
    return {r["url"]: r for r in c.read_table("visited", c.last_committed()).to_pylist()}, c


def _truth_urls(web):
    return {url for sh in web.web.scripted_hosts for url, _t, _l in scripted.truth(web.web, sh)}


def test_without_rendering_only_the_entry_pages_are_found(web, tmp_path):
    visited, _ = _crawl(web, tmp_path / "plain")
    assert set(visited) == {web.web.base_url(h.name) + "/" for h in web.web.scripted_hosts}
    assert all(r["rendered"] is None and r["outlinks"] == 0 for r in visited.values())


@needs_browser
def test_with_render_auto_every_page_is_found_politely(web, tmp_path):
    start = len(web.requests())
    visited, c = _crawl(web, tmp_path / "auto", "--render", "auto")
    log = web.requests()[start:]
    assert set(visited) == _truth_urls(web)
    assert all(r["outcome"] == "ok" and r["rendered"] is True for r in visited.values())
    for url, r in visited.items():   # each page's nav links every other page of its host
        assert r["outlinks"] == PAGES, url
        assert r["title"] and r["text_chars"] > 200, url
    roots = [web.web.base_url(h.name) + "/" for h in web.web.scripted_hosts]
    assert [visited[u]["render_links"] for u in roots] == [PAGES] * 2
    hosts = c.read_table("hosts", c.last_committed()).to_pylist()
    assert {h["host"]: h["render_helped"] for h in hosts} == {
        f"{h.name}:{web.port}": True for h in web.web.scripted_hosts}
    # the server's view: scripts and the JSON endpoint were requested, by the crawler's rules
    paths = {(r["host"], r["path"]) for r in log}
    assert ("feed.simweb.test", "/api/nav.json") in paths and ("app.simweb.test", "/static/app.js") in paths
    assert requestlog.disallowed_requests(log, web.ground_truth) == []
    assert not any(p.startswith("/private/") for _h, p in paths)
    gaps = requestlog.min_gap_per_host(log, measure="end")
    assert set(gaps) == {h.name for h in web.web.scripted_hosts}
    assert min(gaps.values()) >= DELAY * 0.95, gaps


@needs_browser
@pytest.mark.bench
def test_rendering_one_host_costs_the_other_hosts_at_most_a_fifth_of_their_pages_per_second():
    from benchmarks.bench_render import measure
    assert measure(pairs=1) >= 0.8      # the medium web, the app host rendered throughout
