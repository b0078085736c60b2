"""The page step made cheaper (issue #12) keeps its results: main-content blocks, links and
scope decisions are those of the straightforward implementations they replace (kept here as
references), on generated markup and on the simulated web's pages."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from transforms.page import maintext
from transforms.page import parse as parse_mod


# ---------------------------------------------------------------- main-content blocks
def reference_main_blocks(root) -> list[str]:
    """main_blocks as it was written first: iterwalk start/end events."""
    blocks, run = [], []

    def flush():
        if run:
            t = " ".join(" ".join(run).split())
            run.clear()
            if t:
                blocks.append(t)

    walk = etree.iterwalk(root, events=("start", "end"))
    skipped = None
    for event, el in walk:
        tag = el.tag
        if not isinstance(tag, str):
            if event == "end" and el.tail and skipped is None:
                run.append(el.tail)
            continue
        if event == "start":
            if el is not root and maintext.is_chrome(el):
                skipped = el
                walk.skip_subtree()
                continue
            if tag not in maintext.INLINE_TAGS:
                flush()
            if el.text:
                run.append(el.text)
        else:
            if el is skipped:
                skipped = None
            elif tag not in maintext.INLINE_TAGS:
                flush()
            if el.tail and el is not root:
                run.append(el.tail)
    flush()
    return blocks


TAGS = ["div", "p", "li", "ul", "td", "h1", "section", "main", "article", "span", "a", "b", "code",
        "em", "img", "br", "nav", "header", "footer", "aside", "menu", "table", "tr"]
ATTRS = ["", " class='x'", " class='SideBar other'", " class='toc'", " role=navigation",
         " role=' Banner '", " role=main", " hidden", " aria-hidden=true", " aria-hidden=' TRUE'",
         " aria-hidden=false", " href='/x'", " id=a", " class=''",
         # several attributes: the walk tests each class string once, then the others
         " class='x' role=navigation", " class='NAV x'", " class='x' hidden", " role=main class='toc'",
         " href='/x' class='y' aria-hidden=true", " class='x' role=main"]
TEXTS = ["", " ", "word", "two words", "  spaced \n out\t", "é ü", "\u00a0nbsp\u00a0"]


@st.composite
def markup(draw, depth=0):
    parts = []
    for _ in range(draw(st.integers(0, 4 if depth < 4 else 0))):
        tag = draw(st.sampled_from(TAGS))
        inner = draw(markup(depth + 1))
        parts.append(f"<{tag}{draw(st.sampled_from(ATTRS))}>{draw(st.sampled_from(TEXTS))}"
                     f"{inner}</{tag}>{draw(st.sampled_from(TEXTS))}")
    return "".join(parts)


def _body(html: str):
    root = etree.fromstring(("<html><body>" + html + "</body></html>").encode(), parse_mod._parser())
    return root.find("body") if root.find("body") is not None else root


@settings(max_examples=200, deadline=None)
@given(markup(), st.sampled_from(TEXTS))
def test_main_blocks_are_the_iterwalk_blocks(html, lead):
    body = _body(lead + html)
    assert maintext.main_blocks(body) == reference_main_blocks(body)
    for el in body.iter():   # any subtree as the root (the root itself is never chrome)
        blocks, text = maintext.blocks_and_text(el)
        assert blocks == reference_main_blocks(el)
        assert text == " ".join(" ".join(el.itertext()).split())


@settings(max_examples=100, deadline=None)
@given(markup(), st.sampled_from(["<!-- c -->", "<?pi x?>", "<!--c-->tail"]))
def test_text_of_the_walk_is_itertext_also_with_comments(html, extra):
    parser = etree.HTMLParser(remove_comments=False, remove_pis=False)
    root = etree.fromstring(f"<html><body>{extra}{html}{extra}</body></html>".encode(), parser)
    for el in root.iter():
        if isinstance(el.tag, str):
            assert maintext.blocks_and_text(el)[1] == " ".join(" ".join(el.itertext()).split())


def test_main_blocks_examples():
    body = _body("<div class='main'>a<span>b</span>c<p>d<b>e</b></p>f<nav>n</nav>g<div hidden>h</div>"
                 "i</div><ul><li>one</li><li> two <a href=x>link</a></li></ul><p></p><p> </p>")
    assert maintext.main_blocks(body) == ["a b c", "d e", "f g i", "one", "two link"]
    deep = _body("<div>" * 200 + "deep" + "</div>" * 200)
    assert maintext.main_blocks(deep) == ["deep"]


@pytest.mark.parametrize("web", ["small", "bighosts"])
def test_main_blocks_on_simweb_pages(web):
    from tests.simweb.model import build_web
    w = build_web(web, 1, port=8080)
    n = 0
    for i in range(0, len(w.paths), max(1, len(w.paths) // 150)):
        r = w.respond(w.hosts[w.page_host[i]], w.paths[i])
        if r.status != 200 or b"<html" not in r.body[:200].lower():
            continue
        text, _ = parse_mod.decode_body(r.body, dict((k.lower(), v) for k, v in r.headers).get("content-type"))
        root = etree.fromstring(text.encode(), parse_mod._parser())
        etree.strip_elements(root, "script", "style", "noscript", "template", with_tail=False)
        body = root.find("body") if root.find("body") is not None else root
        assert maintext.main_blocks(body) == reference_main_blocks(body)
        n += 1
    assert n > 50


# ---------------------------------------------------------------- links of a page
_HREFS = st.sampled_from(["a", "../b", "/c?d=1", "#top", "", "  x\t", "//h.example/p", "HTTP://H.example",
                          "javascript:void(0)", "mailto:a@b", "http://[x/", "data:,x", "%7e/%2f",
                          "http://u:p@h.example/?", "?", "ä/ö?ü#é", "\\\\h.example\\p", "http:x", "ftp://f/"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["http://h.example/a/b.html", "https://H.example:8443/x/?q", "not a base",
                        b"http://h.example/dir/"]),
       st.lists(_HREFS | st.text(max_size=12), max_size=30))
def test_classify_many_is_classify_of_each_href(base, hrefs):
    from transforms.urls.canonical import classify, classify_many
    hrefs = hrefs + hrefs[::2]   # repeated hrefs are resolved once: same answers
    assert classify_many(base, hrefs) == [classify(base, h) for h in hrefs]


# ---------------------------------------------------------------- block fingerprints hashed once
def test_block_fps_carried_by_the_visited_row_give_the_same_template_and_text():
    from transforms.page import boilerplate as bp
    from transforms.page.fate import PageConfig, page_fate
    page = {"fp": 1, "url": "http://h.example/a", "host": "h.example", "depth": 0, "source": "link",
            "outcome": "ok", "http_status": 200, "content_type": "text/html", "fetch_time": 1.0,
            "body": b"<html><body><p>shared block of the site</p><p>own words of this page here</p>"
                    b"<p>and more of them</p><nav>menu</nav></body></html>"}
    row = page_fate(page, PageConfig(round_no=1, now=1.0)).visited
    blocks, fps = row[bp.BLOCKS_FOR_MINHASH], row[bp.BLOCK_FPS]
    assert fps == [bp.block_fp(b) for b in blocks] and len(blocks) == 3
    assert bp.page_block_fps(blocks, fps) == bp.page_block_fps(blocks)
    template = frozenset([bp.block_fp("shared block of the site")])
    signed = bp.sign_text(row, template, "_text")
    assert signed["_text"] == "own words of this page here and more of them" == bp.content_text(blocks, template)
    assert bp.BLOCK_FPS not in signed and bp.BLOCKS_FOR_MINHASH not in signed
    assert bp.sign_text(row, frozenset(), "_text")["_text"] == " ".join(blocks)


_LINKS = st.sampled_from(["http://a.example/x", "http://b.example/y.css", "https://a.example/" + "z" * 60,
                          "http://c.other/q?x=1", "http://a.example/s.xml"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINKS, max_size=8), st.sampled_from(["link", "sitemap_file", "sitemap", "redirect"]),
       st.integers(0, 4), st.sampled_from(["list", "none", "empty"]), st.booleans(), st.booleans())
def test_filter_bundle_shortcut_is_the_general_split(urls, source, depth, anchors, lastmod, scores):
    from transforms.page.fate import filter_bundle, filter_reasons, split_by_reasons
    from transforms.urls.scope import UrlFilter
    bundle = {"src": "http://a.example/", "src_fp": 1, "depth": depth, "source": source, "redirects": 0,
              "dst": list(urls)}
    if anchors != "none":
        bundle["anchor"] = {"list": [f"t{i}" for i in range(len(urls))], "empty": []}[anchors]
    if lastmod:
        bundle["lastmod"] = [float(i) for i in range(len(urls))]
    if scores:
        bundle["topic_score"] = [0.5] * len(urls)
    for f in (UrlFilter(), UrlFilter(allow_domains=("a.example",), max_depth=2, max_url_length=50),
              UrlFilter(allow_domains=("example",), deny_extensions=())):
        # the all-kept shortcut gives what the general split gives
        assert filter_bundle(dict(bundle), f) == split_by_reasons(dict(bundle), filter_reasons(dict(bundle), f))
