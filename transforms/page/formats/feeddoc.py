"""RSS (0.9x, 1.0/RDF, 2.0) and Atom feeds: every item's link is an outlink, carrying the
date the feed gives it (Atom `updated`, else `published`; RSS `pubDate`, else `dc:date`)
the way a sitemap's lastmod travels, so a news site is discovered, and its fresh items
recognised, through its feed. The feed's title, description (RSS description / Atom
subtitle), language and last build date fill the metadata; item titles and summaries are
its text. XML is parsed as sitemaps are (no entities, no DTD, no network)."""
from __future__ import annotations

from lxml import etree

from transforms.page.formats.document import (
    Document,
    clean,
    language_tag,
    parse_date,
    resolve_links,
)
from transforms.page.sitemaps import _drop_doctype, _local, _parser

MAX_ITEMS = 50_000
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def _text(el) -> str | None:
    return clean("".join(el.itertext())) if el is not None else None


def _child(el, *names):
    """First child whose local name is one of `names` (in the order of `names`)."""
    found = {}
    for c in el:
        n = _local(c.tag)
        if n in names and n not in found:
            found[n] = c
    for n in names:
        if n in found:
            return found[n]
    return None


def _atom_link(entry) -> str | None:
    best = None
    for c in entry:
        if _local(c.tag) == "link" and c.get("href"):
            rel = (c.get("rel") or "alternate").strip().lower()
            if rel == "alternate":
                return c.get("href").strip()
            if best is None and rel not in ("self", "edit", "enclosure", "replies"):
                best = c.get("href").strip()
    return best


def parse(body, url, budget, content_type_header=None) -> Document:
    root = etree.fromstring(_drop_doctype(body.lstrip(b"\xef\xbb\xbf \t\r\n")), _parser())
    if root is None:
        return Document(type="", reason="feed without a root element")
    kind = _local(root.tag)
    doc = Document(type="")
    pairs, dates, texts = [], [], []
    if kind == "feed":                                   # Atom
        head, items = root, [c for c in root if _local(c.tag) == "entry"]
        doc.title = _text(_child(root, "title"))
        doc.description = _text(_child(root, "subtitle"))
        doc.modified = parse_date(_text(_child(root, "updated")))
        doc.language = language_tag(root.get(_XML_LANG))
    else:                                                # RSS 2.0 / 0.9x, RSS 1.0 (RDF)
        head = _child(root, "channel")
        if head is None:
            head = root
        items = [c for c in head if _local(c.tag) == "item"] or [c for c in root if _local(c.tag) == "item"]
        doc.title = _text(_child(head, "title"))
        doc.description = _text(_child(head, "description"))
        doc.language = language_tag(_text(_child(head, "language")))
        doc.modified = parse_date(_text(_child(head, "lastbuilddate", "date")))
        doc.published = parse_date(_text(_child(head, "pubdate")))
    for n, item in enumerate(items[:MAX_ITEMS]):
        if n % 256 == 0:
            budget.check()
        title = _text(_child(item, "title")) or ""
        if kind == "feed":
            href = _atom_link(item)
            when = parse_date(_text(_child(item, "updated", "published")))
            summary = _text(_child(item, "summary", "content"))
        else:
            href = _text(_child(item, "link"))
            guid = _child(item, "guid")
            if not href and guid is not None and (guid.get("isPermaLink") or "true").lower() == "true":
                href = _text(guid)
            href = href or item.get("{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about")
            when = parse_date(_text(_child(item, "pubdate", "date")))
            summary = _text(_child(item, "description"))
        texts.extend(t for t in (title, summary) if t)
        if href:
            pairs.append((href, title))
            dates.append(when)
    doc.links, doc.anchors, doc.lastmod = resolve_links(url, pairs, dates or None)
    if doc.lastmod is None:
        doc.lastmod = []
    doc.blocks = ([doc.title] if doc.title else []) + texts
    doc.text = " ".join(doc.blocks)
    return doc
