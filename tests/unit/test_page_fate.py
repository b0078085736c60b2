"""The page step as one pure function: recorded responses in, `page_fate` rows out.

The responses (tests/unit/data/page_fate/, recorded from the simulated web by its
record.py) become fetch results the way HostFetcher classifies a response (2xx ok with the
body, 3xx redirect to the absolute Location, 429/503 with Retry-After transient, other
408/429/5xx transient, other statuses http_error; error bodies dropped), carrying the
frontier columns a fetched page carries. No runner, no network.
"""
import json
from pathlib import Path
from urllib.parse import urljoin

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import tables
from transforms.contentseen import fingerprints as contentseen
from transforms.fetch.connection import media_type, parse_retry_after
from transforms.fetch.records import TRANSIENT
from transforms.page import parse as parse_mod
from transforms.page.fate import PageConfig, page_fate
from transforms.urls import canonical as urls_mod
from transforms.urls.scope import UrlFilter

DATA = Path(__file__).parent / "data" / "page_fate"
NOW = 1.8e9
PARENT = "http://site0.simweb.test:8000/"
CONFIG = PageConfig(round_no=3, now=NOW, max_retries=3, retry_backoff=60.0,
                    guard_signature="address_guard:x")


def recorded(name):
    meta = json.loads((DATA / f"{name}.json").read_text())
    return meta["url"], meta["status"], meta["headers"], (DATA / f"{name}.body").read_bytes()


def fetched(name, source=tables.SOURCE_LINK, depth=1, retries=0):
    """The page dict fetch_one_host would hand the page step for a recorded response."""
    url, status, headers, body = recorded(name)
    h = {k.lower(): v for k, v in headers}
    ctype = h.get("content-type")
    page = dict(fp=urls_mod.fingerprint(url), url=url, host=urls_mod.host_key(url), depth=depth,
                discovered_round=2, first_parent=PARENT, retries=retries, redirects=0,
                source=source, inlinks=1, fetch_time=NOW - 1, elapsed_ms=12.5,
                http_status=status, content_type=media_type(ctype), content_type_header=ctype,
                body=b"", truncated=False, redirect_to=None, etag=h.get("etag"),
                last_modified=h.get("last-modified"), retry_after=None,
                x_robots_tag=h.get("x-robots-tag"), outcome=tables.OK, reason=None)
    if 200 <= status < 300:
        page["body"] = body
    elif 300 <= status < 400:
        page.update(outcome=tables.REDIRECT, reason=f"http_{status}",
                    redirect_to=urljoin(url, h["location"].strip()))
    elif status in (429, 503) and h.get("retry-after") is not None:
        page.update(outcome=TRANSIENT, reason="retry_after",
                    retry_after=parse_retry_after(h["retry-after"], NOW))
    elif status in (408, 429) or 500 <= status < 600:
        page.update(outcome=TRANSIENT, reason=f"http_{status}")
    else:
        page.update(outcome=tables.HTTP_ERROR, reason=f"http_{status}")
    return page


def visited_row(page, **columns):
    """The visited row every final page gets, with the columns a case adds."""
    row = {k: page[k] for k in ("fp", "url", "host", "depth", "discovered_round", "first_parent",
                                "retries", "fetch_time", "http_status", "content_type",
                                "truncated", "elapsed_ms", "etag", "last_modified", "source")}
    row.update(round=3, outcome=page["outcome"], reason=page["reason"], bytes=len(page["body"]),
               redirect_to=page["redirect_to"])
    row.update(columns)
    return row


def html_columns(page, title, meta_robots=None, language="en"):
    """What the parser adds to an HTML page's row. Text extraction and link extraction are
    test_parse's business: the text fingerprint, its length and the link count are taken
    from it. The recorded pages state their language (<html lang=en>) and no description
    or dates (the noindex/nofollow pages state no language and are too short to detect one)."""
    parsed = parse_mod.parse_html(page["body"], page["url"], page["content_type_header"])
    return dict(charset="utf-8", title=title, canonical=None, outlinks=len(parsed.links),
                meta_robots=meta_robots, text_fp=contentseen.text_fingerprint(parsed.text),
                content_fp=contentseen.body_fingerprint(page["body"], page["url"]),
                doc_type="text/html", text_chars=len(parsed.text), description=None,
                language=language, published=None, modified=None)


def row(fate):
    """The visited row as written: without the keys that carry text to the MinHash batch."""
    return {k: v for k, v in fate.visited.items() if not k.startswith("_")}


def stored(page):
    return {"fp": page["fp"], "url": page["url"], "round": 3,
            "content_type": page["content_type"], "body": page["body"]}


SLOW = "http://slow.simweb.test:8000"
SLOW_LINKS = [f"{SLOW}/p{i}.html" for i in range(4)] + [f"{SLOW}/private/secret.html"]
SLOW_ANCHORS = [f"Slow site page {i}" for i in range(4)] + ["Secret"]


def links(page, urls, anchors, source=tables.SOURCE_LINK, depth=2, redirects=0):
    return {"src": page["url"], "src_fp": page["fp"], "depth": depth, "source": source,
            "redirects": redirects, "dst": urls, "anchor": anchors}


def test_an_html_page_gives_its_row_its_body_and_its_links_with_anchors_one_hop_deeper():
    page = fetched("html_links")
    fate = page_fate(page, CONFIG)
    assert fate.result == {"fp": page["fp"], "final": True}
    assert row(fate) == visited_row(page, **html_columns(page, "Slow site"))
    assert row(fate)["outlinks"] == 5
    assert any(k.startswith("_") for k in fate.visited), "no text for MinHash"
    assert fate.stored == stored(page)
    assert fate.links == [links(page, SLOW_LINKS, SLOW_ANCHORS)]
    assert fate.filtered == []


def test_links_the_scope_drops_are_filtered_with_their_reason_and_the_rest_kept():
    page = fetched("html_links")
    config = PageConfig(round_no=3, now=NOW, url_filter=UrlFilter(url_regex_deny=("/private/",)))
    fate = page_fate(page, config)
    assert fate.links == [links(page, SLOW_LINKS[:4], SLOW_ANCHORS[:4])]
    assert fate.filtered == [{"src": page["url"], "url": [SLOW_LINKS[4]], "reason": ["regex_deny"],
                              "depth": 2, "source": tables.SOURCE_LINK}]
    too_deep = page_fate(page, PageConfig(round_no=3, now=NOW, url_filter=UrlFilter(max_depth=1)))
    assert too_deep.links == [] and too_deep.filtered[0]["reason"] == ["depth"] * 5


def test_a_redirect_is_a_visited_row_and_its_target_a_link_at_the_same_depth_one_hop_more():
    page = fetched("redirect")
    fate = page_fate(page, CONFIG)
    target = "http://hostile.simweb.test:8000/chain/1"
    assert fate.visited == visited_row(page, redirect_to=target, reason="http_302",
                                       outcome=tables.REDIRECT)
    assert fate.stored is None
    assert fate.links == [links(page, [target], [""], tables.SOURCE_REDIRECT, depth=1, redirects=1)]
    assert fate.result == {"fp": page["fp"], "final": True}


def test_a_404_ends_at_once_with_no_body_and_no_links():
    page = fetched("not_found")
    fate = page_fate(page, CONFIG)
    assert fate.visited == visited_row(page, outcome=tables.HTTP_ERROR, reason="http_404")
    assert (fate.stored, fate.links, fate.filtered) == (None, [], [])


def test_a_503_with_retry_after_stays_in_the_frontier_with_backoff_until_the_retries_run_out():
    page = fetched("unavailable")
    assert page["retry_after"] == 1.0
    fate = page_fate(page, CONFIG)
    assert fate.result == {"fp": page["fp"], "final": False, "retries": 1,
                           "not_before": NOW + 60.0, "last_error": "retry_after"}
    assert (fate.visited, fate.stored, fate.links) == (None, None, [])
    third = page_fate(fetched("unavailable", retries=2), CONFIG).result
    assert third["retries"] == 3 and third["not_before"] == NOW + 240.0
    last = page_fate(fetched("unavailable", retries=3), CONFIG)
    assert last.result == {"fp": page["fp"], "final": True}
    assert (last.visited["outcome"], last.visited["reason"]) == (
        tables.FAILED, "retry_after (after 4 attempts)")


def test_a_sitemap_index_queues_its_child_sitemaps_despite_their_extension():
    page = fetched("sitemap_index", source=tables.SOURCE_SITEMAP_FILE, depth=0)
    fate = page_fate(page, CONFIG)
    children = ["http://site0.simweb.test:8000/sitemap-1.xml",
                "http://site0.simweb.test:8000/sitemap-2.xml.gz"]
    assert fate.visited == visited_row(page, outlinks=2)
    assert fate.links == [links(page, children, ["", ""], tables.SOURCE_SITEMAP_FILE, depth=1)]
    assert fate.stored is None and fate.filtered == []


def test_a_noindex_page_is_visited_and_followed_but_its_body_not_stored():
    page = fetched("noindex")
    fate = page_fate(page, CONFIG)
    assert row(fate) == visited_row(page, **html_columns(page, "Meta noindex", "noindex", language=None))
    assert fate.stored is None
    assert fate.links == [links(page, ["http://hostile.simweb.test:8000/noindex-target.html"], ["target"])]


def test_a_meta_nofollow_page_is_stored_but_gives_no_links():
    page = fetched("nofollow")
    fate = page_fate(page, CONFIG)
    assert row(fate) == visited_row(page, **html_columns(page, "Meta nofollow", "nofollow", language=None))
    assert fate.stored == stored(page)
    assert fate.links == []
    follow = page_fate(page, PageConfig(round_no=3, now=NOW, ignore_meta_nofollow=True))
    assert follow.links[0]["dst"] == ["http://hostile.simweb.test:8000/only-from-nofollow.html"]


def test_a_binary_body_served_as_html_is_stored_and_flagged_without_links():
    page = fetched("binary_as_html")
    fate = page_fate(page, CONFIG)
    assert row(fate) == visited_row(
        page, reason="binary body served as html", doc_type="application/octet-stream",
        content_fp=contentseen.body_fingerprint(page["body"], page["url"]))
    assert fate.stored == stored(page)
    assert fate.links == []


def test_a_url_refused_by_the_address_guard_records_the_guard_settings():
    page = dict(fetched("not_found"), outcome=tables.FORBIDDEN_ADDRESS, reason="loopback",
                http_status=None)
    fate = page_fate(page, CONFIG)
    assert fate.visited == visited_row(page, refused_by="address_guard:x")
    assert fate.result == {"fp": page["fp"], "final": True}


@settings(max_examples=150, deadline=None)
@given(body=st.one_of(st.binary(max_size=3000), st.text(max_size=2000).map(str.encode),
                      st.lists(st.sampled_from(["<a href='", "x/", "'>", "</a>", "<meta name=robots content=",
                                                "noindex", "nofollow", "<base href='http://e.test/'>",
                                                "<?xml", "<urlset>", "<loc>", "\x00", "é", "%"]),
                               max_size=60).map(lambda parts: "".join(parts).encode())),
       ctype=st.sampled_from([None, "", "text/html", "text/html; charset=gbk", "application/xml",
                              "text/xml", "application/pdf", "image/png", "text/plain; charset=utf-16",
                              "application/xhtml+xml", "x/y; charset=nonsense"]),
       status=st.sampled_from([200, 203, 301, 302, 404, 410, 429, 500, 503]),
       source=st.sampled_from([tables.SOURCE_LINK, tables.SOURCE_SITEMAP_FILE, tables.SOURCE_SEED]))
def test_page_fate_never_raises_and_never_loses_the_url(body, ctype, status, source):
    url = "http://h.test/a/b.html"
    page = dict(fp=urls_mod.fingerprint(url), url=url, host="h.test", depth=1, discovered_round=0,
                first_parent=None, retries=0, redirects=0, source=source, inlinks=0,
                fetch_time=NOW, elapsed_ms=1.0, http_status=status, content_type=media_type(ctype),
                content_type_header=ctype, body=body, truncated=False, etag=None,
                last_modified=None, x_robots_tag=None, retry_after=None,
                redirect_to="/c?d" if 300 <= status < 400 else None,
                outcome=(tables.OK if status < 300 else tables.REDIRECT if status < 400
                         else TRANSIENT if status in (429, 500, 503) else tables.HTTP_ERROR),
                reason=None)
    fate = page_fate(page, CONFIG)
    assert fate.result["fp"] == page["fp"]
    assert (fate.visited is not None) == fate.result["final"]
    if fate.visited is not None:
        assert fate.visited["fp"] == page["fp"] and fate.visited["url"] == url
    for bundle in fate.links:
        assert len(bundle["dst"]) == len(bundle["anchor"]) and bundle["src_fp"] == page["fp"]
