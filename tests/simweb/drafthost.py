"""drafts.simweb.test: pairs of drafts that share much text and are NOT near-duplicates.

``similar_pairs`` > 0 turns it on. Each pair k is two drafts of one note, ``/draft/nK-1.html``
and ``/draft/nK-2.html``: the second repeats the first's text except one contiguous span of
words, rewritten. The span's length is chosen so that the two pages' texts have a word-bigram
Jaccard near a target spread evenly over ``similar_jaccard`` (default 0.55-0.75): under a
near-duplicate threshold of 0.9, but high enough that MinHash LSH bands (16 x 8) make such a
pair a candidate now and then (P ~ 1 - (1 - J^8)^16: 0.13 at 0.55, 0.40 at 0.65, 0.74 at 0.75),
so only the check of a candidate's similarity keeps it out of the near-duplicates (precision).

A page is one ``<h1>`` and one ``<p>`` (no block repeats across pages, so no boilerplate
detector drops any of it) and a link to ``/``, which lists every draft. Ground truth: table
``similar_pairs`` (url, of_url, jaccard) with the Jaccard of the two texts' distinct
lower-cased word bigrams, computed here from the words the pages were built from.
"""
from __future__ import annotations

import html
import random

from .words import TOPICS

NAME = "drafts"
WORDS_PER_NOTE = 120
_WORDS = " ".join(ws for _, ws in TOPICS).split()


def bigram_jaccard(a: list[str], b: list[str]) -> float:
    """Jaccard of the distinct lower-cased word bigrams of two word lists."""
    sa = {(x.lower(), y.lower()) for x, y in zip(a, a[1:])}
    sb = {(x.lower(), y.lower()) for x, y in zip(b, b[1:])}
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


def target(k: int, n: int, span: tuple[float, float]) -> float:
    """Pair k's target Jaccard: n targets spread evenly over span (both ends included)."""
    lo, hi = span
    return lo if n < 2 else lo + (hi - lo) * k / (n - 1)


def _title(k: int, draft: int) -> list[str]:
    return ["Note", str(k + 1), "draft", str(draft)]


def note_words(k: int, n: int, seed: int, span: tuple[float, float]) -> tuple[list[str], list[str]]:
    """(first, second) draft of note k as word lists, title first: the second's rewritten
    span is the shortest whose text Jaccard falls to the target or below."""
    r = random.Random(seed * 1_000_003 + 7_777 + k)
    body = r.choices(_WORDS, k=WORDS_PER_NOTE)
    fresh = r.choices(_WORDS, k=WORDS_PER_NOTE)
    at = r.randrange(WORDS_PER_NOTE // 4)
    first = _title(k, 1) + body
    goal = target(k, n, span)
    for m in range(1, WORDS_PER_NOTE - at + 1):
        second = _title(k, 2) + body[:at] + fresh[at:at + m] + body[at + m:]
        if bigram_jaccard(first, second) <= goal:
            break
    return first, second


def _page(words: list[str]) -> bytes:
    title, text = " ".join(words[:4]), " ".join(words[4:])
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'</head><body><h1>{html.escape(title)}</h1><p>{html.escape(text.capitalize())}.</p>'
            '<a href="/">All notes</a></body></html>').encode()


def paths(n: int) -> list[str]:
    return ["/"] + [f"/draft/n{k}-{d}.html" for k in range(n) for d in (1, 2)]


def _index(n: int) -> bytes:
    items = "".join(f'<li><a href="{p}">Note {p[8:-5]}</a></li>' for p in paths(n)[1:])
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Drafts</title></head>'
            f'<body><h1>Drafts of notes</h1><ul>{items}</ul></body></html>').encode()


def respond(web, host, target_: str, headers: dict, now: float):
    from .model import Response
    path = target_.split("#", 1)[0].split("?", 1)[0]
    n, span = web.cfg.similar_pairs, tuple(web.cfg.similar_jaccard)
    html_type = [("Content-Type", "text/html; charset=utf-8")]
    if path == "/":
        return Response(200, html_type, _index(n))
    if path in set(paths(n)[1:]):
        k, d = path[len("/draft/n"):-len(".html")].split("-")
        words = note_words(int(k), n, web.seed, span)[int(d) - 1]
        return Response(200, html_type, _page(words))
    return Response(404, [("Content-Type", "text/html")], b"<html><body>Not found</body></html>")


def truth(web) -> tuple[list[tuple[str, str, list[tuple[str, str]]]], list[tuple[str, str, float]]]:
    """([(url, title, [(linked url, anchor)])] of every page, [(url, of_url, jaccard)] pairs)."""
    n, span = web.cfg.similar_pairs, tuple(web.cfg.similar_jaccard)
    base = web.base_url(web.draft_host.name)
    home = (base + "/", "All notes")
    pages = [(base + "/", "Drafts", [(base + p, f"Note {p[8:-5]}") for p in paths(n)[1:]])]
    pairs = []
    for k in range(n):
        first, second = note_words(k, n, web.seed, span)
        u1, u2 = f"{base}/draft/n{k}-1.html", f"{base}/draft/n{k}-2.html"
        pages += [(u1, " ".join(first[:4]), [home]), (u2, " ".join(second[:4]), [home])]
        pairs.append((u2, u1, bigram_jaccard(first, second)))
    return pages, pairs
