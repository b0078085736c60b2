"""What every document parser returns, the limits it parses within, and shared helpers (pure).

A parser is `parse(body, url, budget, options) -> Document`. It checks `budget.check()`
between units of work (pages, items, paragraphs) so a slow document stops at the time
budget with what was read so far and a reason; it never runs code from the document.
"""
from __future__ import annotations

import datetime as _dt
import email.utils
import re
import time
from dataclasses import dataclass, field

from transforms.page.formats import langmodel
from transforms.page.sitemaps import parse_lastmod
from transforms.urls.canonical import classify_many

MIN_DETECT_CHARS = 40        # shorter texts: no language detection (a guess, not a fact)
DETECT_CHARS = 2000          # the detector reads this much of the text


@dataclass(frozen=True)
class ParseLimits:
    """Per-document budget and switches (settings `parse_*`, `text_links`, `detect_language`)."""
    seconds: float = 5.0                 # wall clock, checked between pages / items
    max_pages: int = 200                 # PDF pages read (the rest: reason "pages capped")
    max_inflated: int = 50 * 1024 * 1024  # bytes any decompression inside a document may give
    max_text_chars: int = 1_000_000      # extracted text kept
    text_links: bool = False             # plain text: URLs in the text become outlinks
    detect_language: bool = True         # detect the language when the markup states none
    honour_nofollow: bool = True         # HTML only
    ignore_meta_nofollow: bool = False   # HTML only
    deep_web: str = ""                   # HTML only: "forms" | "results" (transforms.page.forms)


class BudgetExceeded(Exception):
    """A document hit one of its limits; the message is the reason recorded."""


class Budget:
    def __init__(self, limits: ParseLimits):
        self.limits = limits
        self.deadline = time.monotonic() + limits.seconds

    def check(self):
        if time.monotonic() > self.deadline:
            raise BudgetExceeded(f"time budget of {self.limits.seconds:g} s spent")


@dataclass
class Document:
    type: str                                         # the sniffed media type
    links: list[str] = field(default_factory=list)    # canonical http(s) URLs, first occurrence
    anchors: list[str] = field(default_factory=list)
    lastmod: list | None = None        # per link: a date the document states (feeds, sitemaps)
    sitemaps: list[str] = field(default_factory=list)  # child sitemaps (sitemap index)
    title: str | None = None
    description: str | None = None
    language: str | None = None        # primary subtag, lower case ('en')
    canonical: str | None = None
    published: float | None = None     # epoch seconds, as the document states it
    modified: float | None = None
    text: str = ""
    blocks: list[str] = field(default_factory=list)   # text blocks for near-duplicate MinHash
    reason: str | None = None          # why parsing failed or stopped early
    html: object = None                # HTML only: the parse.ParsedPage (robots, charset)


def clean(s) -> str | None:
    s = " ".join(str(s).split()) if s is not None else ""
    return s or None


_PDF_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz+-])?(\d{2})?'?(\d{2})?")


def parse_date(text) -> float | None:
    """ISO 8601 / W3C, RFC 822 (RSS) or PDF (D:YYYYMMDDHHmmSS+HH'mm') dates -> epoch seconds."""
    if text is None:
        return None
    text = str(text).strip()
    if not text:
        return None
    m = _PDF_DATE.match(text)
    if m:
        g = [int(x) if x and x.isdigit() else None for x in m.groups()]
        try:
            t = _dt.datetime(g[0], g[1] or 1, g[2] or 1, g[3] or 0, g[4] or 0, g[5] or 0,
                             tzinfo=_dt.timezone.utc).timestamp()
        except ValueError:
            return None
        if m.group(7) in ("+", "-"):
            off = (g[7] or 0) * 3600 + (g[8] or 0) * 60
            t -= off if m.group(7) == "+" else -off
        return t
    t = parse_lastmod(text)
    if t is not None:
        return t
    try:
        dt = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.timezone.utc)
    return dt.timestamp()


def language_tag(tag) -> str | None:
    """'en-US' -> 'en'; None for empty or malformed tags."""
    tag = (tag or "").strip().lower().replace("_", "-").split("-")[0]
    return tag if 2 <= len(tag) <= 3 and tag.isalpha() else None


def detect_language(text: str) -> str | None:
    """py3langid's guess (ISO 639-1) for a text of at least MIN_DETECT_CHARS, else None
    (its model memory-mapped from a shared cache: `langmodel`)."""
    if len(text) < MIN_DETECT_CHARS:
        return None
    return langmodel.classifier()(text[:DETECT_CHARS])[0]


def resolve_links(base: str, pairs, dates=None):
    """(links, anchors, lastmod) of (href, anchor) pairs: canonical http(s) URLs, first
    occurrence kept (its anchor; the first non-empty anchor among duplicates)."""
    links, anchors, lastmod, seen = [], [], [], {}
    hrefs = [h for h, _ in pairs]
    for k, ((u, _reason), (_, anchor)) in enumerate(zip(classify_many(base, hrefs), pairs)):
        if u is None:
            continue
        i = seen.get(u)
        if i is None:
            seen[u] = len(links)
            links.append(u)
            anchors.append((anchor or "")[:200])
            lastmod.append(dates[k] if dates else None)
        elif anchor and not anchors[i]:
            anchors[i] = anchor[:200]
    return links, anchors, (lastmod if dates else None)


def text_blocks(text: str, max_blocks: int = 2000) -> list[str]:
    """Paragraph-like blocks of extracted text (non-empty lines, whitespace collapsed)."""
    out = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            out.append(line)
            if len(out) >= max_blocks:
                break
    return out
