"""How many URLs a round fetches: --max_pages, or with --round_growth a share of the pages
downloaded so far (at most --max_round_pages).

Why: a round reads what the crawl knows (content-seen's probe of every visited page's
fingerprint and band keys, URL-seen's buckets, the frontier) whatever its own size, so with
a fixed round size the crawl-DB work a page costs grows with the crawl, and a whole crawl
costs rounds x crawl size. Near-duplicate search cannot avoid the read: a round's band
keys (16 a page) hit nearly every block of the stored ones, however they are sorted. A
round growing with the crawl keeps that work a page flat (a share g reads the crawl once
per g of growth) and spreads the round's fixed cost over more pages. The price: a bigger
round's memory (the round, not the crawl, sets the process's peak; hence the cap) and the
frontier re-ranked once per round, i.e. less often per page fetched.

The size depends only on the committed rounds and the settings, so a killed round rerun
fetches the same list.
"""
from __future__ import annotations

import math


def round_pages(settings: dict, downloaded: int) -> int:
    """The fetch list's size of a round after `downloaded` pages (the previous round's
    report's page_sets.downloaded)."""
    base = int(settings["max_pages"])
    growth = float(settings.get("round_growth") or 0.0)
    if growth <= 0:
        return base
    grown = math.floor(growth * max(0, int(downloaded)))
    cap = int(settings.get("max_round_pages") or 0)
    if cap > 0:
        grown = min(grown, cap)
    return max(base, grown)


def sized(settings: dict, downloaded: int) -> dict:
    """`settings` with max_pages set to this round's size (what options.json then records)."""
    n = round_pages(settings, downloaded)
    return settings if n == settings["max_pages"] else {**settings, "max_pages": n}


def within_budget(given: dict, settings: dict, downloaded: int, remaining: int) -> dict:
    """The flags of a round that may fetch only `remaining` more pages (`crawl
    --max_total_pages`): `given` unchanged when the round's size fits, else max_pages set
    to what is left and the growth off."""
    if remaining >= round_pages(settings, downloaded):
        return given
    return {**given, "max_pages": remaining, "round_growth": 0.0}
