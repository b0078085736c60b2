"""Documents beyond HTML: one parser per sniffed media type (pure, no Beam).

    PARSERS[type](body, url, budget, content_type_header) -> Document

`parse_document(body, url, declared_type, limits)` sniffs the type (`sniff.sniff`: magic
bytes, BOM and leading markup first, the declared Content-Type second), runs the registered
parser within a per-document budget and fills what every format shares: the sniffed type,
the language (markup first, else py3langid over the text when `detect_language`), the text
capped at `max_text_chars`. A type without a parser gives None: the page stays terminal and
its visited row keeps the sniffed type. Adding a format is one module with `parse` and one
line below.

Budget design (every parser, in-process): the input is at most the fetch's max_body; every
decompression inside a document is capped at `max_inflated` bytes (pypdf's Configuration
limits for PDF streams, chunked zip reads for .docx, the sitemap's bounded gunzip); object
counts are capped (PDF page tree nodes and depth, pages read, XObject forms per page, zip
members, feed items); the wall clock is checked between units of work (pages, paragraphs,
items), so a slow document stops with what was read and a reason; any exception a parser
raises ends the document with its reason (never the bundle). No process per document:
a fork per PDF would cost more than parsing most of them, and fork is unsafe in a
multi-threaded Beam worker; the residual risk is one pathological page's extraction
running past the budget (bounded by the caps above, not by a timer).
"""
from __future__ import annotations

from transforms.page.formats import docxdoc, feeddoc, htmldoc, pdfdoc, sitemapdoc, sniff, textdoc
from transforms.page.formats.document import (
    Budget,
    BudgetExceeded,
    Document,
    ParseLimits,
    detect_language,
)

__all__ = ["PARSERS", "parse_document", "Document", "ParseLimits", "sniff"]

PARSERS = {
    sniff.HTML: htmldoc.parse,
    sniff.XHTML: htmldoc.parse,
    sniff.PDF: pdfdoc.parse,
    sniff.DOCX: docxdoc.parse,
    sniff.RSS: feeddoc.parse,
    sniff.ATOM: feeddoc.parse,
    sniff.TEXT: textdoc.parse,
    sniff.SITEMAP: sitemapdoc.parse,
}


def parse_document(body: bytes, url: str, kind: str, limits: ParseLimits,
                   content_type_header: str | None = None) -> Document | None:
    """The Document of a body already sniffed as `kind`; None when no parser handles it."""
    parser = PARSERS.get(kind)
    if parser is None:
        return None
    budget = Budget(limits)
    try:
        doc = parser(body, url, budget, content_type_header)
    except BudgetExceeded as e:
        doc = Document(type=kind, reason=f"{kind}: {e}")
    except Exception as e:   # a parser bug or a pathological file: a reason, never a dead bundle
        doc = Document(type=kind, reason=f"{kind} unreadable: {type(e).__name__}: {str(e)[:120]}")
    doc.type = kind
    if len(doc.text) > limits.max_text_chars:
        doc.text = doc.text[:limits.max_text_chars]
    if doc.language is None and limits.detect_language and doc.text:
        try:
            doc.language = detect_language(doc.text)
        except Exception:
            doc.language = None
    return doc
