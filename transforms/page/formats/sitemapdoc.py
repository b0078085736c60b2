"""XML sitemaps reached as a page (a link, not robots.txt): `sitemaps.parse_sitemap`, each
entry's lastmod carried with its link, a sitemap index's children as sitemaps."""
from __future__ import annotations

from transforms.page import sitemaps
from transforms.page.formats.document import Document
from transforms.urls.canonical import normalize


def parse(body, url, budget, content_type_header=None) -> Document:
    entries, children = sitemaps.parse_sitemap(body, url, max_bytes=budget.limits.max_inflated)
    entries = [(u, lm) for u, lm in ((normalize(u), lm) for u, lm in entries) if u]
    return Document(type="", links=[u for u, _ in entries], anchors=[""] * len(entries),
                    lastmod=[lm for _, lm in entries],
                    sitemaps=[u for u in (normalize(c) for c in children) if u])
