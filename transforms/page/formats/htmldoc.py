"""HTML and XHTML: `parse.parse_html` (lxml) as a Document; the ParsedPage rides along for
the page step's robots rules (meta robots, noindex/nofollow) and charset."""
from __future__ import annotations

from transforms.page.formats.document import Document, language_tag, parse_date
from transforms.page.parse import parse_html


def parse(body, url, budget, content_type_header=None) -> Document:
    limits = budget.limits
    p = parse_html(body, url, content_type_header, honour_nofollow=limits.honour_nofollow,
                   ignore_meta_nofollow=limits.ignore_meta_nofollow, deep_web=limits.deep_web)
    return Document(type="", links=p.links, anchors=p.anchors, title=p.title or None,
                    description=p.description, language=language_tag(p.lang), canonical=p.canonical,
                    published=parse_date(p.published), modified=parse_date(p.modified),
                    text=p.text, blocks=p.main_blocks, html=p)
