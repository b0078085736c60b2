"""transforms.parse / transforms.charset: links as a browser sees them, decoding, robots."""
import gzip
import random
import time
import zlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from transforms.page.charset import codec_for_label, utf8_body
from transforms.page.parse import ParsedPage, decode_body, looks_binary, parse_html, refresh_target
from transforms.urls.canonical import normalize

PAGE = "http://www.example.com/dir/page.html"


def links_of(html, url=PAGE, **kw):
    return parse_html(html.encode("utf-8") if isinstance(html, str) else html, url, **kw).links


# ------------------------------------------------------------------ link syntaxes
@pytest.mark.parametrize("href, expected", [
    ("http://other.org/x", "http://other.org/x"),
    ("HTTPS://Other.ORG:443/X", "https://other.org/X"),
    ("next.html", "http://www.example.com/dir/next.html"),
    ("./next.html", "http://www.example.com/dir/next.html"),
    ("../up.html", "http://www.example.com/up.html"),
    ("/root.html", "http://www.example.com/root.html"),
    ("//cdn.example.org/path", "http://cdn.example.org/path"),
    ("?page=2&sort=asc", "http://www.example.com/dir/page.html?page=2&sort=asc"),
    ("/search?q=a+b&z=1&a=2", "http://www.example.com/search?q=a+b&z=1&a=2"),  # query kept as is
    ("/a.html#section", "http://www.example.com/a.html"),                      # fragment dropped
    ("  /spaced.html\n", "http://www.example.com/spaced.html"),
    ("/new\nline", "http://www.example.com/newline"),
    ("/%7Euser/", "http://www.example.com/~user/"),
])
def test_link_syntaxes_resolve_like_a_browser(href, expected):
    assert links_of(f'<a href="{href}">x</a>') == [expected]


def test_entities_in_href_are_decoded():
    assert links_of('<a href="/s?a=1&amp;b=2">x</a>') == ["http://www.example.com/s?a=1&b=2"]


def test_base_href_is_honoured_for_all_links_first_one_wins():
    html = """<html><head><base href="/other/base/"><base href="http://ignored.org/"></head>
    <body><a href="x.html">x</a><a href="../y.html">y</a><a href="/z">z</a></body></html>"""
    p = parse_html(html.encode(), PAGE)
    assert p.base == "http://www.example.com/other/base/"
    assert p.links == ["http://www.example.com/other/base/x.html",
                       "http://www.example.com/other/y.html", "http://www.example.com/z"]


def test_base_after_links_still_applies_and_absolute_base():
    html = '<a href="x">x</a><base href="https://b.example.net/d/">'
    p = parse_html(html.encode(), PAGE)
    assert p.links == ["https://b.example.net/d/x"] and p.base == "https://b.example.net/d/"


def test_unusable_base_is_ignored():
    for base in ("javascript:alert(1)", "http://[broken/", "data:text/html,x"):
        p = parse_html(f'<base href="{base}"><a href="x">x</a>'.encode(), PAGE)
        assert p.links == ["http://www.example.com/dir/x"]
        assert p.base == PAGE


def test_frames_iframes_and_areas_are_links_with_title_or_alt():
    html = """<frameset><frame src="left.html" title="Menu"><frame src="right.html"></frameset>"""
    p = parse_html(html.encode(), PAGE)
    assert p.links == ["http://www.example.com/dir/left.html", "http://www.example.com/dir/right.html"]
    assert p.anchors == ["Menu", ""]
    html = """<body><iframe src="//video.example.org/embed/1" title=" Video "></iframe>
    <img usemap="#m"><map name="m"><area href="/a1" alt="Area one"><area href="/a2" title="Two">
    <area nohref alt="none"></map></body>"""
    p = parse_html(html.encode(), PAGE)
    assert p.links == ["http://video.example.org/embed/1", "http://www.example.com/a1",
                       "http://www.example.com/a2"]
    assert p.anchors == ["Video", "Area one", "Two"]


def test_anchor_text_is_collapsed_truncated_and_falls_back_to_img_alt():
    long = "word " * 100
    html = f"""<a href="/1">  Hello <b>bold</b>
       world </a><a href="/2"><img src="i.png" alt=" Logo "></a><a href="/3" title="T"></a>
       <a href="/4">{long}</a><a href="/5"></a>"""
    p = parse_html(html.encode(), PAGE)
    assert p.anchors[:3] == ["Hello bold world", "Logo", "T"]
    assert len(p.anchors[3]) == 200 and p.anchors[3].startswith("word word")
    assert p.anchors[4] == ""


def test_duplicates_are_dropped_keeping_first_occurrence_and_first_nonempty_anchor():
    html = """<a href="/a"><img src=x></a><a href="/b">B</a><a href="/a#top">A text</a>
              <a href="http://WWW.example.com:80/a">again</a>"""
    p = parse_html(html.encode(), PAGE)
    assert p.links == ["http://www.example.com/a", "http://www.example.com/b"]
    assert p.anchors == ["A text", "B"]


def test_non_http_links_are_dropped_and_counted():
    html = """<a href="javascript:void(0)">j</a><a href=" JAVASCRIPT:go()">j</a>
    <a href="mailto:me@example.com">m</a><a href="tel:+123">t</a><a href="ftp://f.org/">f</a>
    <a href="data:text/html,hi">d</a><a href="http://[::1">bad</a><a href="http://">bad</a>
    <a>no href</a><a href="/ok">ok</a>"""
    p = parse_html(html.encode(), PAGE)
    assert p.links == ["http://www.example.com/ok"]
    assert p.dropped == {"javascript": 2, "mailto": 1, "other_scheme": 3, "invalid": 2}


# ------------------------------------------------------------------ robots, canonical, refresh
def test_rel_nofollow_skips_the_link_when_honoured():
    html = """<a href="/a" rel="nofollow">a</a><a href="/b" rel="noopener NOFOLLOW">b</a>
              <area href="/c" rel="nofollow"><a href="/d" rel="nofollowed">d</a>"""
    p = parse_html(html.encode(), PAGE)
    assert p.links == ["http://www.example.com/d"] and p.nofollow_dropped == 3
    p = parse_html(html.encode(), PAGE, honour_nofollow=False)
    assert len(p.links) == 4 and p.nofollow_dropped == 0


@pytest.mark.parametrize("content", ["nofollow", "NOINDEX, NOFOLLOW", "none", " noarchive ,nofollow "])
def test_meta_robots_nofollow_empties_links_but_keeps_the_rest(content):
    html = f"""<html><head><title>T</title><meta name="ROBOTS" content="{content}">
    <link rel="canonical" href="/canon"><meta http-equiv="refresh" content="0; url=/next"></head>
    <body><p>Hello</p><a href="/a">a</a></body></html>"""
    p = parse_html(html.encode(), PAGE)
    assert p.links == [] and p.anchors == []
    assert p.title == "T" and p.text == "Hello a" and p.canonical == "http://www.example.com/canon"
    assert p.refresh == "http://www.example.com/next"
    assert "nofollow" in p.meta_robots or p.meta_robots == "none"
    p = parse_html(html.encode(), PAGE, ignore_meta_nofollow=True)
    assert p.links == ["http://www.example.com/next", "http://www.example.com/a"]


def test_meta_robots_directives_are_collected_lower_case():
    html = """<meta name="robots" content="NOINDEX, Follow"><meta name="robots" content="noarchive">
              <meta name="googlebot" content="nofollow"><meta name="beamcrawl" content="nosnippet">"""
    p = parse_html(html.encode(), PAGE)
    assert p.meta_robots == "noindex,follow,noarchive"
    p = parse_html(html.encode(), PAGE, user_agent_token="BeamCrawl")
    assert p.meta_robots == "noindex,follow,noarchive,nosnippet"
    assert parse_html(b"<p>x</p>", PAGE).meta_robots == ""
    p = parse_html(b'<meta name="robots" content="noindex  nofollow"><a href="/a">a</a>', PAGE)
    assert p.meta_robots == "noindex nofollow" and p.links == []


def test_links_in_template_are_inert_links_in_noscript_count():
    html = """<template><a href="/tpl">t</a><meta name="robots" content="nofollow"></template>
    <noscript><a href="/nos">n</a></noscript><script>document.write('<a href="/js">')</script>"""
    assert links_of(html) == ["http://www.example.com/nos"]


def test_svg_links():
    html = '<svg><a xlink:href="/svg-link"><text>S</text></a><a href="/svg2">T</a></svg>'
    assert links_of(html) == ["http://www.example.com/svg-link", "http://www.example.com/svg2"]


def test_canonical_is_recorded_not_followed():
    html = '<link rel="Canonical" href="/c?id=1#frag"><link rel="canonical" href="/second"><a href="/a">a</a>'
    p = parse_html(html.encode(), PAGE)
    assert p.canonical == "http://www.example.com/c?id=1"
    assert p.links == ["http://www.example.com/a"]
    assert parse_html(b'<link rel="canonical" href="mailto:x">', PAGE).canonical is None


@pytest.mark.parametrize("content, target", [
    ("0; url=/next", "/next"),
    ("0;URL=/next", "/next"),
    ("5;URL='/quoted'", "/quoted"),
    ('5; url="/dq" ', "/dq"),
    ("5 ; url = /spaced", "/spaced"),
    ("3.5, /comma", "/comma"),
    ("0; /nourl", "/nourl"),
    ("0;url='/q'trailing", "/q"),
    ("10", None),
    ("10;", None),
    ("", None),
    ("url=/x", None),
    ("abc; url=/x", None),
    ("1x; url=/x", None),
    (".5; url=/x", "/x"),
    ("0; urlfoo", "urlfoo"),
])
def test_refresh_target_syntaxes(content, target):
    assert refresh_target(content) == target


def test_meta_refresh_is_recorded_and_followed():
    html = """<head><meta http-equiv="Refresh" content="5;URL='next.html#x'"></head>
              <body><a href="/a">a</a><a href="next.html">n</a></body>"""
    p = parse_html(html.encode(), PAGE)
    assert p.refresh == "http://www.example.com/dir/next.html"
    assert p.links == ["http://www.example.com/dir/next.html", "http://www.example.com/a"]
    assert p.anchors == ["n", "a"]
    assert parse_html(b'<meta http-equiv="refresh" content="30">', PAGE).refresh is None


# ------------------------------------------------------------------ title, text
def test_title_and_visible_text():
    html = """<html><head><title>  My
    Title </title><style>p{color:red}</style><script>var x = "<a href='/s'>";</script></head>
    <body><h1>Head</h1><p>Para<b>bold</b> text</p><script>hidden()</script>
    <noscript>no js</noscript><template><p>tpl</p></template><!-- comment -->
    <p>Tail &amp; more</p></body></html>"""
    p = parse_html(html.encode(), PAGE)
    assert p.title == "My Title"
    assert p.text == "Head Para bold text Tail & more"
    assert p.links == []


# ------------------------------------------------------------------ charsets
ZH_PAGE = """<html><head>{meta}<title>新闻中心 - 北京</title></head><body>
<p>中华人民共和国是世界上人口最多的国家之一，首都是北京。今天天气很好，我们去公园散步吧。</p>
<p>这是一个用来测试编码检测的页面，内容需要足够长，检测器才能可靠地判断出简体中文的编码。</p>
<a href="/新闻/国内.html">国内新闻</a> <a href="http://例子.中国/路径">例子</a> <a href="/a?page=2">第二页</a>
</body></html>"""


@pytest.mark.parametrize("meta, header", [
    ('<meta charset="gbk">', None),
    ('<meta http-equiv="Content-Type" content="text/html; charset=gb2312">', None),
    ("", "text/html; charset=GBK"),
    ("", None),  # no declaration at all: detected
])
def test_gbk_page_equals_its_utf8_twin(meta, header):
    twin = parse_html(ZH_PAGE.format(meta="").encode("utf-8"), "http://example.cn/")
    p = parse_html(ZH_PAGE.format(meta=meta).encode("gbk"), "http://example.cn/", header)
    assert p.charset == "gb18030" and twin.charset == "utf-8"
    assert (p.links, p.anchors, p.title, p.text) == (twin.links, twin.anchors, twin.title, twin.text)
    assert p.links[1] == "http://xn--fsqu00a.xn--fiqs8s/%E8%B7%AF%E5%BE%84"
    assert p.title == "新闻中心 - 北京"


def test_query_of_a_link_is_encoded_in_the_page_encoding_like_browsers():
    html = '<meta charset="gbk"><a href="/搜索?q=北京&x=1">s</a>'
    assert links_of(html.encode("gbk")) == ["http://www.example.com/%E6%90%9C%E7%B4%A2?q=%B1%B1%BE%A9&x=1"]
    assert links_of(html.replace("gbk", "utf-8")) == [
        "http://www.example.com/%E6%90%9C%E7%B4%A2?q=%E5%8C%97%E4%BA%AC&x=1"]


def test_iso_8859_1_is_decoded_as_windows_1252():
    html = "<title>Café €uro “quotes”</title><p>naïve façade</p><a href='/caf\xe9'>é</a>"
    body = html.encode("cp1252")
    for header in ("text/html; charset=ISO-8859-1", 'text/html;charset="latin1"'):
        p = parse_html(body, PAGE, header)
        assert p.charset == "cp1252"
        assert p.title == "Café €uro “quotes”" and p.text == "naïve façade é"
        assert p.links == ["http://www.example.com/caf%C3%A9"]  # the path is always UTF-8
    assert decode_body(b"\x81\x8d", "text/html; charset=windows-1252") == ("\x81\x8d", "cp1252")


def test_decode_order_bom_header_meta_detection():
    assert decode_body("\ufeffé".encode("utf-8"), "text/html; charset=gbk") == ("é", "utf-8")
    assert decode_body(b"\xff\xfe" + "é<".encode("utf-16-le"), None) == ("é<", "utf-16-le")
    assert decode_body(b"\xfe\xff" + "é".encode("utf-16-be"), None) == ("é", "utf-16-be")
    meta = '<meta charset="utf-8"><p>é'.encode("cp1252")
    assert decode_body(meta, "text/html; charset=windows-1252")[1] == "cp1252"  # header > meta
    assert decode_body(meta, "text/html")[1] == "utf-8"                           # meta
    late = b" " * 5000 + b'<meta charset="koi8-r">'
    assert decode_body(late, None)[1] == "utf-8"                                  # only first 4 KiB
    assert decode_body(b'<meta charset="utf-16"><p>x', None)[1] == "utf-8"
    assert decode_body("<p>façade".encode("utf-8"), None) == ("<p>façade", "utf-8")


UNDECLARED = [   # mostly ASCII with a few words of the page's language, as many real pages
    ("gbk", "gb18030", "<p>Review marathon and notes with tournament coach 比赛 medal as by tennis "
                       "medal this 球队 marathon striker 冠军 stadium league as goal goal 比赛.</p>"),
    ("koi8-r", "koi8-u", "<p>Football news: Спартак выиграл матч, тренер доволен игрой команды "
                          "and the stadium was full.</p>"),
    ("shift_jis", "cp932", "<p>Tennis report: 東京で大会が開かれました。選手たちは素晴らしい試合を見せました。</p>"),
    ("cp1252", "cp1252", "<p>Le garçon a mangé une pomme près de l'église; à bientôt, café crème.</p>"),
]


@pytest.mark.parametrize("codec,expected,text", UNDECLARED)
def test_an_undeclared_legacy_page_is_guessed_as_a_browser_guesses_it(codec, expected, text):
    # (charset-normalizer, the detector before chardetng, took the GBK page for another encoding)
    assert decode_body(text.encode(codec), "text/html") == (text, expected)


def test_bogus_charsets_are_ignored():
    for label in ("zlib", "base64", "rot13", "utf-7", "no-such-charset", "undefined", "idna", ""):
        text, cs = decode_body(b"<p>hello", f"text/html; charset={label}")
        assert text == "<p>hello" and cs == "utf-8", label
    assert codec_for_label("x-gbk") == "gb18030" and codec_for_label("Shift_JIS") == "cp932"


def test_invalid_utf8_does_not_raise():
    body = b'<meta charset="utf-8"><title>bad \xff\xfe\xc3 bytes</title><a href="/\xe9t\xe9">x</a>'
    p = parse_html(body, PAGE)
    assert p.title == "bad \ufffd\ufffd\ufffd bytes"
    assert p.links == ["http://www.example.com/%EF%BF%BDt%EF%BF%BD"]
    text, cs = decode_body("<p>truncated é".encode("utf-8")[:-1], None)
    assert cs == "utf-8" and text.endswith("\ufffd")


# ------------------------------------------------------------------ binary, malformed
@pytest.mark.parametrize("body", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3", b"GIF89a\x01\x00",
    b"\xff\xd8\xff\xe0\x00\x10JFIF", b"PK\x03\x04\x14\x00", gzip.compress(b"<html>", mtime=0),
    zlib.compress(b"<html>" * 50), b"\x7fELF\x02\x01", b"RIFF\x10\x00\x00\x00WEBPVP8 ",
    b"\x00\x00\x00\x18ftypmp42", b"<html>\x00\x00\x00\x00</html>", bytes(range(32)) * 20,
    b"wOF2\x00\x01",
])
def test_binary_bodies_are_detected(body):
    assert looks_binary(body)
    assert parse_html(body, PAGE) == ParsedPage(base=PAGE)


@pytest.mark.parametrize("body", [
    b"", b"<html><body>hi</body></html>", "<p>中文 é ü</p>".encode("gbk"), "\ufeff<p>é".encode(),
    b"\xff\xfe" + "<p>hello</p>".encode("utf-16-le"), b"\x1b$B\x30\x21\x1b(B plain iso-2022-jp",
    b"ID3 is a tag format", b"BZh is not bzip", b"PK is text too", b"\tTabbed\r\n\x0clines\n",
])
def test_text_bodies_are_not_binary(body):
    assert not looks_binary(body)


@pytest.mark.parametrize("body", [
    b"", b"   ", b"<", b"<<<>>>", b"<a href=", b"<a href='/unterminated>text", b"</a></b></html>",
    b"<!-- never closed", b"<![CDATA[ x", b"<html><body><table><tr><td><a href=/t>x</td></p></a>",
    b'<?xml version="1.0" encoding="iso-8859-1"?><html><body><a href="/x">y</a></body></html>',
    b"<a href=\"/" + b"x" * 3_000_000 + b"\">huge</a><a href='/after'>after</a>",
    b"<a href='/nul\x00'>n\x00ul</a>" + b"<p>" * 100_000, b"<svg><a href='/svg'>s</a></svg>",
    b"\xef\xbb\xbf", b"<p>" + b"\xff" * 10000,
])
def test_malformed_html_never_raises(body):
    p = parse_html(body, PAGE)
    assert isinstance(p, ParsedPage)
    assert len(p.links) == len(p.anchors)
    assert all(normalize(u) == u for u in p.links)


def test_xml_declaration_and_unclosed_tags_still_give_links():
    assert links_of(b'<?xml version="1.0" encoding="utf-8"?><html><a href="/x">y</a>') == [
        "http://www.example.com/x"]
    assert links_of(b"<table><tr><td><a href=/t>x</td></p>") == ["http://www.example.com/t"]
    assert "http://www.example.com/after" in links_of(
        b"<a href=\"/" + b"x" * 3_000_000 + b"\">huge</a><a href='/after'>after</a>")


def test_bad_page_url_still_gives_absolute_links():
    p = parse_html(b'<a href="http://a.org/">a</a><a href="rel">r</a>', "not a url")
    assert p.links == ["http://a.org/"] and p.dropped == {"invalid": 1}


# ------------------------------------------------------------------ properties
_tags = st.sampled_from(["a", "area", "frame", "iframe", "base", "meta", "link", "title", "p",
                         "script", "style", "noscript", "template", "table", "b", "div", "svg"])
_attr_values = st.one_of(
    st.sampled_from(["/x", "../y", "//h.org/z", "javascript:x", "mailto:m", "#f", "?q=1", "",
                     "http://[::1", "nofollow", "canonical", "refresh", "robots", "0; url=/r",
                     "noindex,nofollow", "text/html; charset=gbk"]),
    st.text(max_size=20))
_attrs = st.lists(st.tuples(st.sampled_from(["href", "src", "rel", "name", "content",
                                             "http-equiv", "charset", "alt", "title"]),
                            _attr_values), max_size=3)
_element = st.builds(
    lambda t, attrs, text, close: "<%s %s>%s%s" % (
        t, " ".join('%s="%s"' % (k, v.replace('"', "&quot;")) for k, v in attrs), text,
        "</%s>" % t if close else ""),
    _tags, _attrs, st.text(max_size=15), st.booleans())
_documents = st.lists(st.one_of(_element, st.text(max_size=10)), max_size=25).map("".join)


def _check(p: ParsedPage):
    assert isinstance(p, ParsedPage)
    assert len(p.links) == len(p.anchors) == len(set(p.links))
    for u in p.links:
        assert normalize(u) == u
    for u in (p.canonical, p.refresh):
        assert u is None or normalize(u) == u
    assert all(len(a) <= 200 for a in p.anchors)
    assert set(p.dropped) <= {"javascript", "mailto", "other_scheme", "invalid"}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.sampled_from([None, "text/html", "text/html; charset=gbk",
                                                  "text/html; charset=bogus"]))
def test_parse_never_raises_on_arbitrary_bytes(body, header):
    _check(parse_html(body, PAGE, header))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_documents, st.sampled_from(["utf-8", "gb18030", "cp1252", "utf-16"]),
       st.booleans(), st.booleans())
def test_parse_never_raises_on_random_tag_soup(doc, encoding, honour, ignore_meta):
    body = doc.encode(encoding, "replace") if encoding != "utf-16" else doc.encode("utf-16")
    _check(parse_html(body, PAGE, None, honour_nofollow=honour, ignore_meta_nofollow=ignore_meta))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.one_of(st.none(), st.text(max_size=40).map(
    lambda t: "text/html; charset=" + t)), st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff\xfe",
                                                        b'<meta charset="gbk">']))
def test_decode_body_and_sniffing_never_raise(body, header, prefix):
    body = prefix + body
    text, charset = decode_body(body, header)
    assert isinstance(text, str) and charset
    assert body.decode(charset, "replace") is not None  # the name is a usable Python codec
    assert looks_binary(body) in (True, False)


_BODY_PREFIXES = [b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b'<meta charset="gbk">',
                  b'<meta charset="utf-8">', b'<meta charset="utf-16">']


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=400), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))),
       st.sampled_from([None, "text/html", "text/html; charset=UTF-8", "text/html; charset=utf8",
                        "text/html; charset=gbk", "text/html; charset=us-ascii", "text/html; charset=utf-16",
                        "text/html; charset=bogus"]),
       st.sampled_from(_BODY_PREFIXES))
def test_utf8_body_is_the_decoded_text_encoded(body, header, prefix):
    # the parser reads utf8_body's bytes: the body itself where it may, else decode + encode
    body = prefix + body
    text, charset = decode_body(body, header)
    data, data_charset = utf8_body(body, header)
    assert (data, data_charset) == (text.encode("utf-8", "replace"), charset)


def test_utf8_body_passes_a_utf8_body_through_without_copying_it():
    body = "<p>façade €".encode("utf-8") * 100
    for header in (None, "text/html; charset=utf-8"):
        assert utf8_body(body, header)[0] is body
    assert utf8_body(body, "text/html; charset=windows-1252")[0] is not body   # other text
    assert utf8_body(b"\xef\xbb\xbf" + body, None)[0] == body               # BOM: decoded


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_refresh_target_never_raises(content):
    t = refresh_target(content)
    assert t is None or (isinstance(t, str) and t == t.strip(" \t\n\r\f") and t)


# ------------------------------------------------------------------ throughput
def typical_page(seed=0, nlinks=50, size=20_000):
    """A ~20 KB page with `nlinks` links of mixed syntaxes, nav, paragraphs, scripts, styles."""
    r = random.Random(seed)
    words = ("the quick brown fox jumps over lazy dog crawler page link text news sport "
             "weather about contact").split()
    parts = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Page {seed} - '
             f'Example</title><meta name="viewport" content="width=device-width">'
             f'<link rel="stylesheet" href="/s.css"><link rel="canonical" href="/p/{seed}">'
             f'<script>window.dataLayer=[];function f(a){{return a*2}}</script>'
             f'<style>body{{margin:0}} .nav a{{color:red}}</style></head><body><ul class="nav">']
    for i in range(nlinks):
        href = [f"/section/{i % 7}/item-{i}.html", f"https://www.example.com/a/{i}?x={i}&amp;y=z",
                f"../rel/{i}", f"//cdn.example.org/p/{i}", f"page{i}.html#frag"][i % 5]
        words3 = " ".join(r.choice(words) for _ in range(3))
        parts.append(f'<li class="item"><a href="{href}" class="lnk">{words3}</a></li>')
        if i == 20:
            parts.append('</ul><div class="content">')
        if i > 20:
            parts.append("<p>%s</p>" % " ".join(r.choice(words) for _ in range(25)))
    html = "".join(parts)
    while len(html) < size:
        html += '<div class="x"><p>%s</p></div>' % " ".join(r.choice(words) for _ in range(30))
    return (html + "</div><footer>(c) 2026</footer></body></html>").encode()


@pytest.mark.bench
def test_parse_throughput(request):
    """pytest -m bench -s tests/unit/test_parse.py::test_parse_throughput"""
    if "bench" not in (request.config.option.markexpr or ""):
        pytest.skip("benchmark: select with -m bench")
    pages = [typical_page(i) for i in range(300)]
    url = "http://www.example.com/dir/index.html"
    assert len(parse_html(pages[0], url).links) == 50
    best = 0.0
    for _ in range(5):
        t = time.process_time()  # CPU time: per-core throughput, robust to a busy machine
        for b in pages:
            parse_html(b, url, "text/html; charset=utf-8")
        best = max(best, len(pages) / (time.process_time() - t))
    kb = sum(map(len, pages)) / len(pages) / 1024
    print(f"\nparse_html: {best:.0f} pages/s per core ({kb:.1f} KB, 50 links each; "
          f"CPU time, best of 5)")
    assert best > 200
