"""The ground truth matches what is served: an exhaustive crawl of the small web with a
plain requests + lxml loop (tests/simweb/refcrawl.py) finds exactly the reachable set and
exactly the exported links."""
import pytest

from tests.simweb import SimWebServer, build_web
from tests.simweb.refcrawl import RefCrawler, canonical


@pytest.fixture(scope="module")
def crawled():
    web = build_web("small", seed=3)
    srv = SimWebServer(web).start()
    try:
        gt = web.ground_truth()
        c = RefCrawler(srv.hostmap_lines, max_pages=2000, max_seconds=60).crawl(web.seeds)
        yield web, gt, c, srv
    finally:
        srv.stop()


def test_exhaustive_crawl_fetches_exactly_the_reachable_set(crawled):
    web, gt, c, _ = crawled
    reachable = set(gt["reachable"].column("url").to_pylist())
    fetched = {u for u, s in c.fetched.items() if s in (200, 301)}
    assert fetched == reachable
    assert all(s in (200, 301) for u, s in c.fetched.items())


def test_served_links_equal_ground_truth_links(crawled):
    web, gt, c, _ = crawled
    links = gt["links"].to_pydict()
    truth = {}
    for s, d, a, t, nf in zip(links["src"], links["dst"], links["anchor"], links["tag"], links["nofollow"]):
        if not nf:
            truth.setdefault(s, set()).add(d)
    for src, outs in c.links.items():
        assert {d for d, _, _ in outs} == truth.get(src, set()), src


def test_anchor_text_is_the_target_title(crawled):
    web, gt, c, _ = crawled
    pages = gt["pages"].to_pydict()
    title = dict(zip(pages["url"], pages["title"]))
    redirect = dict(zip(pages["url"], pages["redirect_to"]))
    n = 0
    for src, outs in c.links.items():
        for dst, anchor, tag in outs:
            if tag == "a" and dst in title and anchor not in ("", "Top") and "//site" in dst:
                t = title[redirect[dst]] if redirect.get(dst) else title[dst]
                assert anchor == t or anchor.startswith(("Mirror of", "Job search", "Hostile")), (src, dst)
                n += 1
    assert n > 50


def test_crawl_meets_every_link_syntax(crawled):
    web, gt, c, _ = crawled
    import re
    raw = b"".join(b for ct, b in c.bodies.values() if ct.startswith("text/html"))
    for needle in [rb'href="\.\./', rb'href="//site', rb'href="HTTP://', rb'href="/x/\.\./',
                   rb'href="/%[0-9A-F]{2}', rb'#part-', rb"<base href=", rb"<frame src=",
                   rb"<iframe src=", rb"<area ", rb'http-equiv="refresh"', rb'rel="canonical"',
                   rb'rel="nofollow"', rb'href="javascript:', rb'href="mailto:', rb"\?id=\d+&(amp;)?cat=",
                   rb"\?cat=\d+&(amp;)?id="]:
        assert re.search(needle, raw), needle


def test_robots_denied_pages_are_not_fetched_and_not_reachable(crawled):
    web, gt, c, srv = crawled
    reachable = set(gt["reachable"].column("url").to_pylist())
    assert c.robots_denied and not (c.robots_denied & reachable)
    from tests.simweb.requestlog import disallowed_requests
    assert disallowed_requests(srv.requests, gt) == []
    hosts = {r["host"] for r in srv.requests}
    assert "robots500.simweb.test" in hosts   # it asked for robots.txt ...
    assert {r["path"] for r in srv.requests if r["host"] == "robots500.simweb.test"} == {"/robots.txt"}


def test_canonical_forms():
    assert canonical("HTTP://SiTe1.SimWeb.TEST:80/a/../b/%7Ex?z=1&a=2#frag") == \
        "http://site1.simweb.test/b/~x?z=1&a=2"
    assert canonical("../c.html", "http://h:8080/a/b/x.html") == "http://h:8080/a/c.html"
    assert canonical("mailto:x@y") is None


@pytest.mark.slow
def test_exhaustive_crawl_of_the_medium_web_matches_the_ground_truth():
    web = build_web("medium", seed=2)
    srv = SimWebServer(web).start()
    try:
        gt = web.ground_truth()
        c = RefCrawler(srv.hostmap_lines, max_pages=20000, max_seconds=120).crawl(web.seeds)
    finally:
        srv.stop()
    reachable = set(gt["reachable"].column("url").to_pylist())
    assert {u for u, s in c.fetched.items() if s in (200, 301)} == reachable
    links = gt["links"].to_pydict()
    truth = {}
    for s, d, nf in zip(links["src"], links["dst"], links["nofollow"]):
        if not nf:
            truth.setdefault(s, set()).add(d)
    for src, outs in c.links.items():
        assert {d for d, _, _ in outs} == truth.get(src, set()), src
