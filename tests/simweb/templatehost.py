"""docs.simweb.test: a documentation book rendered from one template (``template_pages`` > 0).

Every page is what documentation generators (GitBook, mdBook, javadoc, Sphinx themes
without ARIA roles) produce: one shared navigation block of about 5 KB -- the book's table
of contents, a ``<div class="book-summary">`` of plain lists, no ``<nav>``, no ``role`` --
a one-line header and footer as plain ``<div>``s, and one distinct paragraph of its own.
No two pages are near-duplicates of each other (their own text shares no sentence); a
MinHash over the whole page text finds them all ~90 % similar (the trap of issue #20).

Pages: ``/`` (the book's cover) and ``/book/chN.html`` for N in 0..template_pages-1; each
links to every page through the summary. `page_html(i, n, seed)` renders page i of an
n-page book without a web (benchmarks and unit tests use it in-process).
"""
from __future__ import annotations

import html
import random

from .words import TOPICS

NAME = "docs"
NAV_ENTRIES = 120          # the summary lists this many chapters (about 5 KB of HTML text)
_WORDS = " ".join(w for _, ws in TOPICS for w in ws.split()).split()
_SECTION = ["Getting started", "Configuration", "Reference", "Guides", "Internals", "Appendix"]


def chapter_title(k: int) -> str:
    r = random.Random(k * 7919 + 1)
    return f"{k + 1}. " + " ".join(w.capitalize() for w in r.sample(_WORDS, 3))


def _paragraph(i: int, seed: int) -> str:
    r = random.Random(seed * 1_000_003 + i)
    words = r.choices(_WORDS, k=25 + r.randrange(15))
    return " ".join(words).capitalize() + "."


def nav_html(n: int) -> str:
    """The book's summary: the same on every page (about 5 KB)."""
    parts = ['<div class="book-summary"><div class="book-search">Type to search</div>']
    per = max(1, NAV_ENTRIES // len(_SECTION))
    for s, name in enumerate(_SECTION):
        parts.append(f'<div class="part"><div class="part-title">{name}</div><ul class="chapters">')
        for k in range(s * per, min((s + 1) * per, NAV_ENTRIES)):
            href = f"/book/ch{k % max(1, n)}.html"
            parts.append(f'<li class="chapter"><a href="{href}">{html.escape(chapter_title(k))}</a></li>')
        parts.append("</ul></div>")
    parts.append('<div class="summary-footer">Published with simdoc 2.4. Report an issue. '
                 'Edit this book on the project forge.</div></div>')
    return "".join(parts)


def page_html(i: int, n: int, seed: int = 1) -> bytes:
    """Page i (-1: the cover) of an n-page book: the template around one own paragraph."""
    title = "The simulated book" if i < 0 else chapter_title(i)
    own = _paragraph(i, seed)
    body = (f'<div class="book-header">The simulated book &middot; version 2.4</div>{nav_html(n)}'
            f'<div class="book-body"><div class="page-inner"><h1>{html.escape(title)}</h1>'
            f"<p>{html.escape(own)}</p></div></div>"
            '<div class="book-footer">Copyright the simulated authors. '
            'Licensed under a permissive license.</div>')
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title></head><body>{body}</body></html>").encode()


def paths(n: int) -> list[str]:
    return ["/"] + [f"/book/ch{i}.html" for i in range(n)]


def respond(web, host, target: str, headers: dict, now: float):
    from .model import Response
    path = target.split("#", 1)[0].split("?", 1)[0]
    n = web.cfg.template_pages
    if path == "/robots.txt":
        return Response(404, [("Content-Type", "text/html")], b"not found")
    if path == "/":
        return Response(200, [("Content-Type", "text/html; charset=utf-8")], page_html(-1, n, web.seed))
    if path.startswith("/book/ch") and path.endswith(".html"):
        num = path[len("/book/ch"):-len(".html")]
        if num.isdigit() and str(int(num)) == num and int(num) < n:
            return Response(200, [("Content-Type", "text/html; charset=utf-8")],
                            page_html(int(num), n, web.seed))
    return Response(404, [("Content-Type", "text/html")], b"<html><body>Not found</body></html>")


def truth(web) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(url, title, [(linked url, anchor)]) of every page of the book, for the ground truth."""
    n, base = web.cfg.template_pages, web.base_url(web.template_host.name)
    nav = [(f"{base}/book/ch{k % max(1, n)}.html", chapter_title(k)) for k in range(NAV_ENTRIES)]
    return [(base + p, "The simulated book" if p == "/" else chapter_title(i - 1), nav)
            for i, p in enumerate(paths(n))]
