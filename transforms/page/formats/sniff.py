"""What a body is, from its bytes first and its declared Content-Type second (pure).

`sniff(body, declared)` -> a media type. Order, after the WHATWG MIME sniffing standard in
spirit: binary signatures win over whatever the server declared (a PDF served as text/html
is a PDF; `%PDF-` within the first 1 KiB, as readers accept it), then the leading markup
of a text body (after BOMs, whitespace, `<?xml?>`, comments and a DOCTYPE): an `<rss>` or
`<rdf:RDF>` root is RSS, `<feed>` Atom, `<urlset>`/`<sitemapindex>` a sitemap, `<html>` or
an HTML-only tag HTML. A text body declared text/plain is never promoted to HTML (browsers
do not either: a user's text file must not become active markup). Anything else keeps the
declared type; a body without a type that is text is HTML (as the crawler always did),
one that is binary is application/octet-stream.
"""
from __future__ import annotations

import re

from transforms.page.charset import looks_binary

HTML = "text/html"
XHTML = "application/xhtml+xml"
TEXT = "text/plain"
XML = "application/xml"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
RSS = "application/rss+xml"
ATOM = "application/atom+xml"
SITEMAP = "application/x-sitemap+xml"
ZIP = "application/zip"
OLE = "application/x-ole-storage"      # .doc, .xls, .ppt (and .msi): never parsed
GZIP = "application/gzip"
OCTET = "application/octet-stream"

_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
               (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"), (b"\x1f\x8b", GZIP),
               (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", OLE), (b"BZh", "application/x-bzip2"),
               (b"\xfd7zXZ\x00", "application/x-xz"), (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
               (b"Rar!", "application/vnd.rar"), (b"\x28\xb5\x2f\xfd", "application/zstd"))
_XML_TYPES = (XML, "text/xml", RSS, ATOM, "application/rdf+xml")
_HTML_TAGS = frozenset(("html", "head", "body", "script", "iframe", "h1", "div", "font", "table",
                        "a", "style", "title", "b", "br", "p", "meta", "link"))
_PROLOG = re.compile(rb"\s*(?:<\?[^>]*\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>|\s+)*", re.S | re.I)
_TAG = re.compile(rb"<([A-Za-z][A-Za-z0-9_.:-]*)")
_ROOTS = {b"rss": RSS, b"rdf:rdf": RSS, b"feed": ATOM, b"urlset": SITEMAP,
          b"sitemapindex": SITEMAP}


def _text_head(body: bytes) -> bytes:
    """The first 1 KiB as ASCII-compatible bytes (UTF-16 re-encoded, BOM dropped)."""
    head = body[:1024]
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        codec = "utf-16-le" if head[:2] == b"\xff\xfe" else "utf-16-be"
        return head[2:].decode(codec, "ignore").encode("utf-8", "ignore")
    return head[3:] if head[:3] == b"\xef\xbb\xbf" else head


def root_element(body: bytes) -> str | None:
    """Lower-case name of the first element of a markup body (None when it is not markup)."""
    head = _text_head(body)
    m = _PROLOG.match(head)
    rest = head[m.end():] if m else head
    t = _TAG.match(rest)
    return t.group(1).lower().decode("ascii", "replace") if t else None


def sniff(body: bytes, declared: str | None) -> str:
    declared = (declared or "").lower()
    head = body[:1024]
    if b"%PDF-" in head:
        return PDF
    if head.startswith(b"PK\x03\x04"):
        return DOCX if b"word/document.xml" in body else ZIP
    for magic, kind in _SIGNATURES:
        if head.startswith(magic):
            return "application/msword" if kind == OLE and declared == "application/msword" else kind
    if looks_binary(body):
        return OCTET
    root = root_element(body)
    if root is not None:
        kind = _ROOTS.get(root.encode())
        if kind is not None:
            return kind
        if root in _HTML_TAGS and declared != TEXT:
            return XHTML if declared == XHTML else HTML
        if head.lstrip()[:14].lower().startswith(b"<!doctype html") and declared != TEXT:
            return HTML
    if not declared or declared == OCTET:
        return HTML
    if declared in _XML_TYPES:
        return XML
    return declared
