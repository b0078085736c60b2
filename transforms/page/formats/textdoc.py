"""Plain text: the text itself; URLs written in it become outlinks only with `text_links` on
(off by default: a URL in a text file is a mention more often than a link)."""
from __future__ import annotations

import re

from transforms.page.charset import decode_body
from transforms.page.formats.document import Document, resolve_links, text_blocks

_URL = re.compile(r"\bhttps?://[^\s<>\"'`{}|\\^\[\]]+", re.I)
MAX_TEXT_LINKS = 5000


def parse(body, url, budget, content_type_header=None) -> Document:
    text, _charset = decode_body(body, content_type_header)
    doc = Document(type="", text=" ".join(text.split()), blocks=text_blocks(text))
    if budget.limits.text_links:
        hrefs = [m.group(0).rstrip(".,;:!?)") for m in _URL.finditer(text)][:MAX_TEXT_LINKS]
        doc.links, doc.anchors, _ = resolve_links(url, [(h, "") for h in hrefs])
    return doc
