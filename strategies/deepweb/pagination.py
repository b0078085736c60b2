"""A submission's result pages from its first page.

Sites page results with a parameter that counts pages (``page=2``) or results
(``start=20``); the first page's ``rel=next`` link shows which and by how much. With the
result count the page states and the records it lists, every page's URL is known at once,
so a result list of P pages is fetched in one round instead of P rounds of rel=next. When
the next link changes more than one parameter, or no count is stated, only the next link is
followed (page by page).
"""
from __future__ import annotations

import math
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def result_pages(url: str, next_url: str | None, count: int | None, per_page: int,
                 max_pages: int = 1000) -> list[str]:
    """The URLs of pages 2.. of the results whose first page is `url` (see the docstring)."""
    if not next_url:
        return []
    cur, nxt = urlsplit(url), urlsplit(next_url)
    if (cur.scheme, cur.netloc, cur.path) != (nxt.scheme, nxt.netloc, nxt.path) or not count or per_page <= 0:
        return [next_url]
    a, b = dict(parse_qsl(cur.query, keep_blank_values=True)), parse_qsl(nxt.query, keep_blank_values=True)
    bd = dict(b)
    changed = [k for k in set(a) | set(bd) if a.get(k) != bd.get(k)]
    if len(changed) != 1 or _int(bd.get(changed[0])) is None:
        return [next_url]
    p = changed[0]
    second = _int(bd[p])
    first = _int(a.get(p))
    if first is None:                         # absent on page 1: pages count from 1, offsets from 0
        first = 1 if second == 2 else 0
    step = second - first
    if step <= 0:
        return [next_url]
    n_pages = min(math.ceil(count / per_page), max_pages)
    out = []
    for i in range(1, n_pages):
        v = str(first + i * step)
        q = [(k, v if k == p else val) for k, val in b]
        out.append(urlunsplit((nxt.scheme, nxt.netloc, nxt.path, urlencode(q), "")))
    return out
