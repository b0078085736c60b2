"""Near-duplicates on template sites (issue #20): main content, host template, clusters.

Pages are rendered in-process by the simulated web (no server): the documentation book of
`tests/simweb/templatehost.py` (one shared ~5 KB summary, one own paragraph per page) and
the `neardup` web's planted copies (hundreds of original/copy pairs). Everything runs
through the page step's functions (one parse: `ParsedPage.main_blocks`, the host's
template dropped by `boilerplate`) and content-seen's cluster functions.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pytest

from tests.simweb import build_web, templatehost
from transforms.contentseen import clusters, duplicates
from transforms.contentseen import fingerprints as fpmod
from transforms.page import boilerplate
from transforms.page.parse import parse_html

BANDS, ROWS = fpmod.LSH_PARAMS
NOW = 1769904000.0 + 3600.0


def _fp(url):
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "big", signed=True)


def _cluster(urls, texts, rnd=1, cap=clusters.NEAR_CAP):
    """ASSIGNMENTS of one round of pages (url, text) and the widest group compared."""
    sigs, has = fpmod.minhash_signatures(texts)
    idx = np.flatnonzero(has)
    t = pa.table({"fp": pa.array([_fp(urls[i]) for i in idx], pa.int64()),
                  "url": [urls[i] for i in idx], "round": pa.array([rnd] * len(idx), pa.int32()),
                  "minhash": fpmod.signature_column(sigs[idx])})
    nb, _ = duplicates._band_rows(t, BANDS, ROWS, fpmod.NUM_PERM, True)
    edges, widest = clusters.candidate_edges([nb], BANDS, ROWS, fpmod.NUM_PERM, 0.9, cap)
    return clusters.resolve_clusters(edges), widest


def _signed_texts(pages):
    """{url: text MinHash signs} as the page step makes it: main blocks minus the host's template."""
    parsed = {u: parse_html(b, u, "text/html") for u, b in pages.items()}
    by_host = {}
    for u in parsed:
        by_host.setdefault(u.split("/")[2], []).append(u)
    out = {}
    for us in by_host.values():
        tpl = boilerplate.host_template([parsed[u].main_blocks for u in us])
        out.update({u: boilerplate.content_text(parsed[u].main_blocks, tpl) for u in us})
    return out, parsed


@pytest.fixture(scope="module")
def book():
    n = 80
    web = build_web("small", template_pages=n)
    host = web.template_host.name
    pages = {f"http://{host}{p}": web.respond(host, p, {}, now=NOW).body for p in templatehost.paths(n)}
    return pages


def test_template_pages_are_not_near_duplicates_of_each_other(book):
    texts, parsed = _signed_texts(book)
    urls = sorted(book)
    asg, _ = _cluster(urls, [texts[u] for u in urls])
    assert asg.num_rows == 0
    # every page still has a signature of its own paragraph
    assert all(len(texts[u].split()) >= fpmod.MIN_WORDS for u in urls)
    # the trap this avoids: signed over the whole page text, the book is one big cluster
    whole, _ = _cluster(urls, [parsed[u].text for u in urls])
    assert whole.num_rows > len(urls) // 2


def test_markup_chrome_is_left_out_of_the_main_blocks():
    body = (b"<html><body><header>Site name and a long tagline here</header>"
            b"<nav><ul><li>Home</li><li>Docs</li></ul></nav>"
            b"<div role=navigation>Side links one two three</div><div class='sidebar'>More links</div>"
            b"<main><h1>Title</h1><p>The page's <b>own</b> words.</p></main>"
            b"<aside>Related reading</aside><footer>Copyright</footer></body></html>")
    p = parse_html(body, "http://a.example/x", "text/html")
    assert p.main_blocks == ["Title", "The page's own words."]
    assert "Copyright" in p.text and "Side links" in p.text     # text_fp stays over everything


def test_blocks_on_fewer_than_min_pages_distinct_pages_are_kept():
    shared = "a paragraph an original and its copies share word for word"
    pages = [[shared, f"own {i}"] for i in range(boilerplate.MIN_PAGES - 1)]
    pages += [list(pages[0])] * 3                 # the same page again (another URL): counted once
    assert boilerplate.host_template(pages) == frozenset()
    pages.append([shared, "one more page"])
    assert boilerplate.host_template(pages) == {boilerplate.block_fp(shared)}
    # ... and on fewer than half the host's distinct pages it is kept too
    pages += [[f"another page {i}"] for i in range(boilerplate.MIN_PAGES + 1)]
    assert boilerplate.host_template(pages) == frozenset()


@pytest.fixture(scope="module")
def neardup():
    web = build_web("neardup", seed=1)
    truth = web.ground_truth()["pages"].to_pylist()
    pages = {}
    for p in truth:
        if p["kind"] != "html" or p["status"] != 200:
            continue
        host = p["host"]
        path = "/" + p["url"].split("://", 1)[1].split("/", 1)[1]
        r = web.respond(host, path, {}, now=NOW)
        if r.status == 200:
            pages[p["url"]] = r.body
    # exact duplicates (query-order variants) are content-seen's exact side: keep the first
    first = {}
    for u in sorted(pages, key=_fp):
        first.setdefault(fpmod.body_fingerprint(pages[u], u), u)
    pages = {u: pages[u] for u in first.values()}
    planted = {frozenset((p["url"], p["is_duplicate_of"])) for p in truth
               if p["dup_kind"] == "near" and p["url"] in pages and p["is_duplicate_of"] in pages}
    return pages, planted


def test_planted_near_duplicates_are_found_as_clusters(neardup):
    pages, planted = neardup
    assert len(planted) >= 200
    texts, _ = _signed_texts(pages)
    urls = sorted(pages)
    asg, _ = _cluster(urls, [texts[u] for u in urls])
    by_fp = {_fp(u): u for u in urls}
    found = {frozenset((by_fp[r["fp"]], by_fp[r["cluster_fp"]])) for r in asg.to_pylist()}
    found |= {frozenset((by_fp[r["fp"]], r["of_url"])) for r in asg.to_pylist()}
    tp = len(found & planted)
    precision = sum(f in planted for f in found) / max(1, len(found))
    recall = tp / len(planted)
    print(f"\nplanted {len(planted)}, rows {asg.num_rows}, recall {recall:.3f}, precision {precision:.3f}")
    assert precision == 1.0 and recall >= 0.9
    assert asg.num_rows <= len(planted)          # one row per page, the copies


def test_a_template_cluster_gives_one_row_per_page_and_capped_groups():
    """3 000 pages signed over their whole text (as if the template were not removed): one
    cluster, at most one row per page, and no page compared with more than the cap."""
    n = 3000
    urls = [f"http://docs.example/p{i}" for i in range(n)]
    texts = [parse_html(templatehost.page_html(i, n), u, "text/html").text for i, u in enumerate(urls)]
    asg, widest = _cluster(urls, texts, cap=16)
    assert n // 2 < asg.num_rows <= n
    assert widest <= 16
    assert len(set(asg.column("cluster_fp").to_pylist())) < n // 20


def test_planted_copies_fetched_in_other_rounds_are_signed_alike(neardup):
    """The template is learned per round: a page and its copy fetched in different rounds
    (different pages of the host around them) must still be signed alike."""
    pages, planted = neardup
    rng = np.random.default_rng(3)
    rnd = {u: int(rng.integers(1, 5)) for u in pages}
    parsed = {u: parse_html(b, u, "text/html") for u, b in pages.items()}
    groups, texts = {}, {}
    for u in pages:
        groups.setdefault((u.split("/")[2], rnd[u]), []).append(u)
    for us in groups.values():
        tpl = boilerplate.host_template([parsed[u].main_blocks for u in us])
        texts.update({u: boilerplate.content_text(parsed[u].main_blocks, tpl) for u in us})
    urls = sorted(pages)
    sigs, has = fpmod.minhash_signatures([texts[u] for u in urls])
    ix = {u: i for i, u in enumerate(urls)}
    cross = [tuple(p) for p in planted if len({rnd[u] for u in p}) == 2]
    found = sum(bool(has[ix[a]] and has[ix[b]]
                     and fpmod.jaccard_estimate(sigs[ix[a]], sigs[ix[b]]) >= 0.9) for a, b in cross)
    print(f"\ncross-round planted pairs signed alike: {found}/{len(cross)}")
    assert len(cross) > 100 and found >= 0.95 * len(cross)
