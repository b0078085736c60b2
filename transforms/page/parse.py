"""HTML parsing: outlinks with anchor text, robots directives, canonical, title, text.

Pure functions, no Beam. One lxml parse per page and one pass over the link-bearing
elements; links are resolved with `transforms.urls.canonical.classify` (WHATWG, via ada) against the
document's base URL, so a link here is the URL a browser would follow, in canonical form.

What counts as a link: ``a[href]``, ``area[href]``, ``frame[src]``, ``iframe[src]`` and the
target of ``<meta http-equiv=refresh>``, also inside ``<noscript>`` but not inside
``<template>`` (inert in browsers). ``<link rel=canonical>`` is recorded, not followed.
``<base href>``: the first one with an http(s) result wins (resolved against the page URL);
it applies to all links of the document, also those before it, as in browsers.

Robots: ``rel=nofollow`` on an a/area skips that link (counted in nofollow_dropped) when
`honour_nofollow`; ``<meta name=robots content=nofollow|none>`` (or
``name=<user_agent_token>``) empties the links (unless `ignore_meta_nofollow`), while
canonical, refresh, title and text are still filled.

Details a caller may rely on:
- links are de-duplicated on their canonical form, first occurrence kept; its anchor is the
  first non-empty anchor text among the duplicates. A link to the page itself (``#top``,
  ``href=""``) is kept like any other (it is what the page links to).
- anchor text: the element's text, whitespace-collapsed, at most MAX_ANCHOR_CHARS; if
  empty, the alt of an ``<img>`` inside, then the title attribute. area: alt, then title;
  frame/iframe: title, then name.
- decoding: `transforms.page.charset.decode_body` (BOM, header, meta, UTF-8, detection; the
  parser reads `utf8_body`, its text as UTF-8, which is the body itself when that is UTF-8). In a
  page decoded with a legacy encoding (GBK, Shift_JIS, windows-1252 ...), the non-ASCII
  characters of a link's *query* are percent-encoded in that encoding, as browsers do
  (`transforms.urls.canonical.encode_query`); the path is UTF-8 whatever the page encoding.
- text: all text nodes of ``<body>`` (of the document when there is none) except those in
  script/style/noscript/template, joined with single spaces. main_blocks: the same tree's
  main content as blocks, chrome (nav, header, footer, aside, role=navigation ...) left
  out (`transforms.page.maintext`).
- lxml (libxml2's HTML parser) is not an HTML5 tree builder: for broken markup its tree can
  differ from a browser's, but every href attribute it sees is still extracted.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from lxml import etree

from transforms.page import forms as forms_mod
from transforms.page.charset import decode_body, looks_binary, utf8_body
from transforms.page.maintext import blocks_and_text
from transforms.urls.canonical import classify, classify_many, encode_query, normalize

__all__ = ["ParsedPage", "parse_html", "decode_body", "looks_binary", "refresh_target",
           "MAX_ANCHOR_CHARS", "DROP_REASONS"]

MAX_ANCHOR_CHARS = 200
DROP_REASONS = ("javascript", "mailto", "other_scheme", "invalid")


@dataclass
class ParsedPage:
    links: list[str] = field(default_factory=list)    # canonical http(s) URLs, document order, first occurrence
    anchors: list[str] = field(default_factory=list)  # anchor text per link ('' if none)
    nofollow_dropped: int = 0      # links skipped because of rel=nofollow
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> count, non-zero only
    canonical: str | None = None   # rel=canonical target (canonical form), not followed
    refresh: str | None = None     # meta refresh target (canonical form); also in links
    meta_robots: str = ""          # lower-case, comma-joined directives, e.g. 'noindex,nofollow'
    title: str | None = None
    text: str = ""                 # visible text, whitespace collapsed
    # main-content text blocks (chrome by markup left out, see transforms.page.maintext):
    # what near-duplicate search signs, after the host's repeated blocks are dropped
    main_blocks: list[str] = field(default_factory=list)
    charset: str = ""              # codec used to decode the body ('' if not decoded)
    base: str = ""                 # effective base URL (after <base href>)
    # page metadata as the markup states it (raw strings; dates parsed by the caller)
    description: str | None = None  # <meta name=description>, else og:description
    lang: str | None = None        # <html lang> / xml:lang, else <meta http-equiv=content-language>
    published: str | None = None   # article:published_time, datePublished, dc.date, date ...
    modified: str | None = None    # article:modified_time, dateModified, dcterms.modified ...
    # deep web (transforms.page.forms), only when asked for: the page's forms, and for a
    # page answering a form submission what its results say
    forms: list[dict] = field(default_factory=list)
    result: dict | None = None


_LINK_TAGS = ("a", "area", "frame", "iframe", "meta", "base", "link", "title")
_HIDDEN_TAGS = ("script", "style", "noscript")  # and template, removed before links
# <meta name|property|itemprop=KEY content=...> -> metadata field (first one wins)
_META_KEYS = {"description": "description", "og:description": "og:description",
              "article:published_time": "published", "datepublished": "published",
              "dc.date": "published", "dcterms.created": "published", "date": "published",
              "article:modified_time": "modified", "datemodified": "modified",
              "og:updated_time": "modified", "dcterms.modified": "modified",
              "last-modified": "modified"}
_UTF = frozenset(["utf-8", "utf-16-le", "utf-16-be", ""])
_tls = threading.local()


def _parser() -> etree.HTMLParser:
    # lxml parsers must not be shared between threads; one per thread, reused.
    p = getattr(_tls, "parser", None)
    if p is None:
        p = _tls.parser = etree.HTMLParser(
            encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True,
            recover=True, collect_ids=False, default_doctype=False)
    return p


def _collapse(s: str | None) -> str:
    return " ".join(s.split()) if s else ""


def refresh_target(content: str | None) -> str | None:
    """URL part of a meta refresh ``content`` (HTML spec "shared declarative refresh steps"),
    unresolved; None when there is none (a plain reload) or the syntax is invalid.

    Accepts ``5``, ``0; url=/x``, ``5;URL='/x'``, ``0, /x``, ``0 url = "/x"``, ``3.5;url=/x``.
    """
    if not content:
        return None
    s = content.lstrip(" \t\n\r\f")
    n = len(s)
    i = 0
    while i < n and s[i].isdigit() and s[i].isascii():
        i += 1
    if i == 0 and not s.startswith("."):
        return None
    while i < n and (s[i] == "." or (s[i].isdigit() and s[i].isascii())):
        i += 1
    if i >= n:
        return None
    if s[i] not in ";, \t\n\r\f":
        return None
    while i < n and s[i] in " \t\n\r\f":
        i += 1
    if i < n and s[i] in ";,":
        i += 1
    while i < n and s[i] in " \t\n\r\f":
        i += 1
    if i >= n:
        return None
    url = s[i:]
    if s[i:i + 3].lower() == "url":
        j = i + 3
        while j < n and s[j] in " \t\n\r\f":
            j += 1
        if j < n and s[j] == "=":
            j += 1
            while j < n and s[j] in " \t\n\r\f":
                j += 1
            i = j
            url = s[i:]
    if i < n and s[i] in "'\"":
        q = s[i]
        url = s[i + 1:]
        k = url.find(q)
        if k >= 0:
            url = url[:k]
    return url.strip(" \t\n\r\f") or None


def _anchor_text(el) -> str:
    if len(el):
        t = " ".join("".join(el.itertext()).split())
    else:  # no child elements (the common case): its own text is all of it
        t = el.text
        t = " ".join(t.split()) if t else ""
    if not t:
        img = el.find(".//img[@alt]")
        if img is not None:
            t = _collapse(img.get("alt"))
        if not t:
            t = _collapse(el.get("title"))
    return t[:MAX_ANCHOR_CHARS] if len(t) > MAX_ANCHOR_CHARS else t


def _empty(url: str, charset: str = "") -> ParsedPage:
    return ParsedPage(charset=charset, base=normalize(url) or url)


def parse_html(body: bytes, url: str, content_type_header: str | None = None, *,
               honour_nofollow: bool = True, ignore_meta_nofollow: bool = False,
               user_agent_token: str | None = None, deep_web: str = "") -> ParsedPage:
    """Parse an HTML body fetched from `url` (see the module docstring).

    Never raises on malformed HTML, empty or binary bodies, invalid bytes or huge attribute
    values: unusable input gives an empty ParsedPage (base = the page URL).
    `user_agent_token`: also honour ``<meta name=TOKEN>`` robots directives.
    `deep_web`: "forms" fills `forms`, "results" also `result` (transforms.page.forms).
    """
    if not body or looks_binary(body):
        return _empty(url)
    try:
        data, charset = utf8_body(body, content_type_header)
    except Exception:
        return _empty(url)
    try:
        return _parse(data, charset, url, honour_nofollow, ignore_meta_nofollow,
                      user_agent_token.lower() if user_agent_token else None, deep_web)
    except Exception:  # lxml or a pathological document: better no links than a dead bundle
        return _empty(url, charset)


def _parse(data, charset, url, honour_nofollow, ignore_meta_nofollow, ua_token, deep_web="") -> ParsedPage:
    root = etree.fromstring(data, _parser())
    if root is None:
        return _empty(url, charset)

    etree.strip_elements(root, "template", with_tail=False)  # inert content, as in browsers
    raw = []            # (href, anchor) in document order; anchor None = refresh
    nofollow = 0
    base_href = None
    canonical_href = None
    refresh_href = None
    robots = []
    title = None
    meta = {}
    for el in root.iter(_LINK_TAGS):
        tag = el.tag
        if tag == "a" or tag == "area":
            href = el.get("href")
            if href is None:
                href = el.get("xlink:href")  # <svg><a xlink:href=...>
                if href is None:
                    continue
            if honour_nofollow:
                rel = el.get("rel")
                if rel and "nofollow" in rel.lower().split():
                    nofollow += 1
                    continue
            if tag == "a":
                t = None if len(el) else el.text   # the common case of _anchor_text, inline
                if t:
                    t = " ".join(t.split())
                    if len(t) > MAX_ANCHOR_CHARS:
                        t = t[:MAX_ANCHOR_CHARS]
                raw.append((href, t or _anchor_text(el)))
            else:
                raw.append((href, _collapse(el.get("alt") or el.get("title"))[:MAX_ANCHOR_CHARS]))
        elif tag == "iframe" or tag == "frame":
            src = el.get("src")
            if src is not None:
                raw.append((src, _collapse(el.get("title") or el.get("name"))[:MAX_ANCHOR_CHARS]))
        elif tag == "meta":
            equiv = el.get("http-equiv")
            if equiv is not None and equiv.strip().lower() == "refresh":
                if refresh_href is None:
                    target = refresh_target(el.get("content"))
                    if target is not None:
                        refresh_href = target
                        raw.append((target, None))
                continue
            if equiv is not None and equiv.strip().lower() == "content-language":
                meta.setdefault("content-language", el.get("content"))
            name = el.get("name") or el.get("property") or el.get("itemprop")
            if name is not None:
                name = name.strip().lower()
                if name in _META_KEYS:
                    meta.setdefault(_META_KEYS[name], el.get("content"))
                if name == "robots" or (ua_token is not None and name == ua_token):
                    content = el.get("content")
                    if content:
                        robots.extend(" ".join(d.split()) for d in content.lower().split(","))
        elif tag == "base":
            if base_href is None:
                h = el.get("href")
                if h is not None:
                    base_href = h
        elif tag == "link":
            if canonical_href is None:
                rel = el.get("rel")
                if rel and "canonical" in rel.lower().split():
                    canonical_href = el.get("href")
        elif tag == "title":
            if title is None:
                title = _collapse(el.text)
    if charset not in _UTF:  # browsers encode a URL's query in the page's encoding
        if base_href is not None and not base_href.isascii():
            base_href = encode_query(base_href, charset)
        if canonical_href is not None and not canonical_href.isascii():
            canonical_href = encode_query(canonical_href, charset)
        if refresh_href is not None and not refresh_href.isascii():
            refresh_href = encode_query(refresh_href, charset)
    # Effective base: the first <base href> that resolves to http(s), else the page URL.
    base = url
    if base_href is not None:
        b, _ = classify(url, base_href)
        if b is not None:
            base = b
    bb = base.encode("utf-8", "replace")

    meta_robots = ",".join(dict.fromkeys(d for d in robots if d))
    # Lenient, as search engines are: "noindex nofollow" (spaces, no comma) also counts.
    meta_nofollow = bool(robots) and any(
        "nofollow" in d.split() or "none" in d.split() for d in robots)

    page = ParsedPage(nofollow_dropped=nofollow, meta_robots=meta_robots, title=title,
                      charset=charset, base=normalize(base) or base,
                      description=_collapse(meta.get("description") or meta.get("og:description")) or None,
                      lang=(root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang")
                            or meta.get("content-language")),
                      published=meta.get("published"), modified=meta.get("modified"))
    if canonical_href is not None:
        page.canonical = classify(bb, canonical_href)[0]
    if refresh_href is not None:
        page.refresh = classify(bb, refresh_href)[0]

    if not (meta_nofollow and not ignore_meta_nofollow):
        links = page.links
        anchors = page.anchors
        dropped = page.dropped
        seen = {}
        hrefs = [r[0] for r in raw]
        if charset not in _UTF:
            hrefs = [h if h.isascii() else encode_query(h, charset) for h in hrefs]
        for (u, reason), (_, anchor) in zip(classify_many(bb, hrefs), raw):
            if u is None:
                dropped[reason] = dropped.get(reason, 0) + 1
                continue
            i = seen.get(u)
            if i is None:
                seen[u] = len(links)
                links.append(u)
                anchors.append(anchor or "")
            elif anchor and not anchors[i]:
                anchors[i] = anchor

    # Visible text: drop script/style/noscript/template subtrees (keeping their tails).
    etree.strip_elements(root, *_HIDDEN_TAGS, with_tail=False)
    body = root.find("body")
    # Text nodes joined with a space (so "</p><p>" does not glue words), then collapsed;
    # read in the walk that cuts the main-content blocks.
    page.main_blocks, page.text = blocks_and_text(body if body is not None else root)
    if deep_web:
        try:   # a form the reader cannot make sense of costs the forms, never the links
            page.forms = forms_mod.page_forms(root, base)
            if deep_web == "results":   # last: it takes the result items out of the tree
                page.result = forms_mod.result_digest(root, normalize(url) or url, base)
        except Exception:
            page.forms, page.result = [], None
    return page
