"""Sitemaps (sitemaps.org protocol): urlset and sitemap index, plain or gzip-compressed.

`parse_sitemap(body, base_url)` -> (entries, child_sitemaps):
- entries: [(loc, lastmod as epoch seconds or None)] of a `<urlset>`
- child_sitemaps: [loc] of a `<sitemapindex>`

Safety: a gzip body (detected by its magic bytes, whatever the Content-Type says) is
inflated with a bound (`max_bytes`, 50 MiB = the protocol's uncompressed limit); the XML
is parsed by lxml with entity resolution, DTD loading and network access off and
huge_tree off, and the DOCTYPE is dropped before parsing, so a billion-laughs document
does not expand (and keeps its other entries) and an XXE entity cannot read a file or
reach the network. A plain-text sitemap (one URL per line) is accepted
too. Element names are matched by local name, so a sitemap with a wrong or missing
namespace still works. Locations are resolved against `base_url`; only http(s) URLs are
kept; at most `max_urls` (50,000, the protocol's limit) of each kind.
"""
from __future__ import annotations

import datetime as _dt
import re
from urllib.parse import urljoin, urlsplit

from lxml import etree

from transforms.fetch.httpbody import DecodeError, decompress_bounded

MAX_SITEMAP_BYTES = 50 * 1024 * 1024
MAX_SITEMAP_URLS = 50_000
GZIP_MAGIC = b"\x1f\x8b"


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           dtd_validation=False, huge_tree=False, recover=True,
                           remove_comments=True, remove_pis=True)


_DOCTYPE = re.compile(rb"<!DOCTYPE(?:[^\[>]|\[.*?\]\s*)*>", re.S | re.I)
_FIRST_ELEMENT = re.compile(rb"<[A-Za-z_]")


def _drop_doctype(body: bytes) -> bytes:
    """The document without its DOCTYPE (a sitemap needs none). The parser already refuses
    to expand entities, but libxml2 still stops at an entity bomb's amplification limit, which
    would lose every entry after it; without the declarations, each reference is just an
    undefined entity that contributes nothing."""
    first = _FIRST_ELEMENT.search(body)
    end = first.start() if first else len(body)
    i = body.find(b"<!DOCTYPE", 0, end)
    if i < 0:
        i = body.upper().find(b"<!DOCTYPE", 0, end)
        if i < 0:
            return body
    m = _DOCTYPE.match(body, i)
    if m is None:
        return body
    return body[:i] + body[m.end():]


_DATE_ONLY = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?$")


def parse_lastmod(text: str | None) -> float | None:
    """W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, full ISO 8601 with zone) -> epoch seconds (UTC
    when no zone is given); None when absent or unparseable."""
    if not text:
        return None
    text = text.strip()
    m = _DATE_ONLY.match(text)
    try:
        if m:
            y, mo, d = int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
            return _dt.datetime(y, mo, d, tzinfo=_dt.timezone.utc).timestamp()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        dt = _dt.datetime.fromisoformat(text)
    except (ValueError, OverflowError):
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.timezone.utc)
    return dt.timestamp()


def _clean_loc(loc: str | None, base_url: str) -> str | None:
    if not loc:
        return None
    loc = loc.strip()
    if not loc:
        return None
    try:
        url = urljoin(base_url, loc)
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            return None
    except ValueError:
        return None
    return url


def _local(tag) -> str:
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1].lower()


def _child_text(elem, name: str) -> str | None:
    for child in elem:
        if _local(child.tag) == name:
            # text and tails only: an unexpanded entity reference contributes nothing
            parts = [child.text or ""]
            for sub in child:
                parts.append(sub.tail or "")
            return "".join(parts)
    return None


def parse_sitemap(body: bytes, base_url: str, max_bytes: int = MAX_SITEMAP_BYTES,
                  max_urls: int = MAX_SITEMAP_URLS
                  ) -> tuple[list[tuple[str, float | None]], list[str]]:
    """Parse a sitemap or sitemap index; see the module docstring. Never raises on bad input
    (returns what could be recovered, possibly nothing)."""
    if body[:2] == GZIP_MAGIC:
        try:
            body, _truncated = decompress_bounded(body, ["gzip"], max_bytes)
        except DecodeError:
            return [], []
    else:
        body = body[:max_bytes]
    stripped = body.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        return [], []
    if not stripped.startswith(b"<"):
        return _parse_text(stripped, base_url, max_urls), []
    try:
        root = etree.fromstring(_drop_doctype(stripped), _parser())
    except (etree.XMLSyntaxError, ValueError):
        return [], []
    if root is None:
        return [], []
    kind = _local(root.tag)
    entries: list[tuple[str, float | None]] = []
    children: list[str] = []
    if kind == "urlset":
        for el in root:
            if _local(el.tag) != "url":
                continue
            loc = _clean_loc(_child_text(el, "loc"), base_url)
            if loc:
                entries.append((loc, parse_lastmod(_child_text(el, "lastmod"))))
                if len(entries) >= max_urls:
                    break
    elif kind == "sitemapindex":
        for el in root:
            if _local(el.tag) != "sitemap":
                continue
            loc = _clean_loc(_child_text(el, "loc"), base_url)
            if loc:
                children.append(loc)
                if len(children) >= max_urls:
                    break
    return entries, children


def _parse_text(body: bytes, base_url: str, max_urls: int) -> list[tuple[str, float | None]]:
    out = []
    for line in body.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line.lower().startswith(("http://", "https://")):
            continue
        loc = _clean_loc(line, base_url)
        if loc:
            out.append((loc, None))
            if len(out) >= max_urls:
                break
    return out
