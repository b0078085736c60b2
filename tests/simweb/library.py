"""library.simweb.test: a library catalogue, the deep web's second form (`library: true`).

A different site from jobs.simweb.test in every way a crawler could depend on:

- the form (``/``) is ``GET /catalogue/find`` with a text box ``terms`` (no type
  attribute), a radio group ``fmt`` (all / book / ebook / audio), a checkbox ``avail``
  ("only available"), a presentation-only ``order`` select (rel / year / az), a hidden
  ``src=home`` and a ``<button>``; the page also has a POST form (``/suggest``, "suggest
  a purchase") that a crawler submits only when allowed to POST there
  (``--deep_web_post_hosts``); a POSTed suggestion is answered with thanks and the titles
  already held that match its words (a result page: count and records, one page);
  ``/catalogue/find`` answers a POST like a GET;
- results are a ``<table>`` (one ``<tr>`` per book: title link, blurb, author, year), the
  count says "Showing 1–20 of 345 titles", pages are offsets (``start=20``) announced by
  ``<link rel=next>`` in the head and a numbered pager;
- it counts every match but lets you page through only the first ``library_max_results``
  (like real search engines), ranked for ``order=rel`` by how often the words occur, then a per-query pseudo-random key;
- books live at ``/item/b00042``; their words (title and blurb) are drawn from a Zipf
  vocabulary of ``library_vocab`` pseudo-words (exponent ``library_zipf``), so keyword
  probing is the way in (Ntoulas, Zerfos, Cho 2005).

Only ``/`` and ``/help`` are reachable by links. Ground truth: table ``library_records``.
"""
from __future__ import annotations

import hashlib
import html
from urllib.parse import parse_qsl, urlencode

import numpy as np
import pyarrow as pa

NAME = "library"
FORMATS = ("book", "ebook", "audio")
ORDERS = ("rel", "year", "az")
SYLLABLES = ("ba be bi bo bu da de di do du fa fe fi fo ka ke ki ko la le li lo ma me mi mo "
             "na ne ni no pa pe pi po ra re ri ro sa se si so ta te ti to va ve vi vo").split()


class Catalogue:
    def __init__(self, web):
        cfg = web.cfg
        n, rng = cfg.library_records, np.random.default_rng([web.seed, 0x11B])
        vocab, seen = [], set()
        vr = np.random.default_rng([web.seed, 0x70C])
        while len(vocab) < cfg.library_vocab:
            w = "".join(SYLLABLES[i] for i in vr.integers(0, len(SYLLABLES), 3))
            if w not in seen:
                seen.add(w)
                vocab.append(w)
        p = 1.0 / np.arange(1, len(vocab) + 1) ** cfg.library_zipf
        p /= p.sum()
        draws = rng.choice(len(vocab), size=(n, 12), p=p)
        self.vocab = vocab
        self.titles = [" ".join(vocab[j] for j in row[:3]).title() for row in draws]
        self.blurbs = [" ".join(vocab[j] for j in row[3:]) for row in draws]
        self.fmt = [FORMATS[i] for i in rng.integers(0, 3, n)]
        self.avail = list(rng.random(n) < 0.7)
        self.year = [int(y) for y in rng.integers(1950, 2026, n)]
        self.author = [f"{vocab[int(a)].title()} {vocab[int(b)].title()}"
                       for a, b in rng.integers(0, len(vocab), (n, 2))]
        self.tokens = [(t.lower() + " " + b).split() for t, b in zip(self.titles, self.blurbs)]
        self.index = {}
        for r, toks in enumerate(self.tokens):
            for w in set(toks):
                self.index.setdefault(w, []).append(r)
        base = web.base_url(web.library.name)
        self.table = pa.table({
            "id": pa.array(np.arange(n), pa.int64()),
            "url": [f"{base}/item/b{r:05d}" for r in range(n)],
            "title": self.titles, "blurb": self.blurbs, "format": self.fmt,
            "available": self.avail, "year": pa.array(self.year, pa.int64())})


def catalogue(web) -> Catalogue:
    if getattr(web, "_library", None) is None:
        web._library = Catalogue(web)
    return web._library


def _key(r, terms):
    return hashlib.blake2b(f"{r}|{terms}".encode(), digest_size=4).digest()


def query(cat: Catalogue, terms="", fmt="all", avail="", order="rel", cap=None) -> tuple[int, list]:
    """(number of matches, record ids shown in order, at most `cap`)."""
    words = terms.lower().split()
    if words:
        cand = set(cat.index.get(words[0], ()))
        for w in words[1:]:
            cand &= set(cat.index.get(w, ()))
    else:
        cand = range(len(cat.titles))
    ids = [r for r in cand if (fmt in ("", "all") or cat.fmt[r] == fmt) and (not avail or cat.avail[r])]
    if order == "year":
        ids.sort(key=lambda r: (-cat.year[r], r))
    elif order == "az":
        ids.sort(key=lambda r: (cat.titles[r], r))
    else:
        ids.sort(key=lambda r: (-sum(cat.tokens[r].count(w) for w in words), _key(r, terms)))
    return len(ids), ids[:cap] if cap else ids


def _page(title, body, head=""):
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}'
            f'</title>{head}</head><body><div id="top"><b>City Library</b></div>{body}'
            '<div class="foot"><a href="/help">Help</a></div></body></html>').encode()


FORM = ('<div class="search"><form name="lib" action="/catalogue/find">'
        '<input type="hidden" name="src" value="home">'
        '<p>Words: <input name="terms" size="40"></p>'
        '<fieldset><legend>Format</legend>'
        '<input type="radio" name="fmt" value="all" checked> All '
        '<input type="radio" name="fmt" value="book"> Book '
        '<input type="radio" name="fmt" value="ebook"> E-book '
        '<input type="radio" name="fmt" value="audio"> Audiobook</fieldset>'
        '<label><input type="checkbox" name="avail" value="1"> Only available</label> '
        '<select name="order"><option value="rel">Relevance</option><option value="year">Year</option>'
        '<option value="az">A-Z</option></select> <button type="submit">Find</button></form></div>')
SUGGEST = ('<form method="post" action="/suggest"><p>Suggest a purchase: '
           '<input name="title"> <input type="email" name="email"> <input type="submit" value="Send">'
           '</p></form>')


def _suggested(web, form: str):
    """The answer to a POSTed suggestion: thanks, and the titles already held that match
    its words (a result page: count, table of records; no further pages)."""
    cat, per = catalogue(web), web.cfg.library_per_page
    a = dict(parse_qsl(form, keep_blank_values=True))
    title = a.get("title", "")
    total, ids = query(cat, title, cap=per)
    rows = "".join(f'<tr><td><a href="/item/b{r:05d}">{html.escape(cat.titles[r])}</a></td>'
                   f'<td>{cat.year[r]}</td></tr>' for r in ids)
    return _page("Suggestion received", f"<h2>Thank you for suggesting “{html.escape(title)}”</h2>"
                 f'<div class="summary">We already hold {total} titles matching it; the first '
                 f'{len(ids)}:</div><table class="held"><tbody>{rows}</tbody></table>')


def respond(web, host, target: str, headers: dict, now: float, method: str = "GET", body: bytes = b""):
    from .model import Response
    path, _, qs = target.split("#", 1)[0].partition("?")
    if method == "POST":   # the forms answer POST too (a form-encoded body)
        form = body.decode("utf-8", "replace")
        if path == "/suggest":
            return Response(200, [("Content-Type", "text/html; charset=utf-8")], _suggested(web, form))
        if path != "/catalogue/find":
            return Response(405, [("Allow", "GET, HEAD"), ("Content-Type", "text/html")], b"not allowed")
        qs = form
    ok = lambda body: Response(200, [("Content-Type", "text/html; charset=utf-8")], body)  # noqa: E731
    cfg = web.cfg
    if path == "/robots.txt":
        return Response(404, [("Content-Type", "text/html")], b"not found")
    if path == "/":
        return ok(_page("Library catalogue", "<h1>Search the catalogue</h1>" + FORM + SUGGEST))
    if path == "/help":
        return ok(_page("Catalogue help", '<p>Type words and press Find. <a href="/">Back</a></p>'))
    cat = catalogue(web)
    if path.startswith("/item/b"):
        try:
            r = int(path[7:])
            title = cat.titles[r]
        except (ValueError, IndexError):
            return Response(404, [("Content-Type", "text/html")], b"no such item")
        return ok(_page(title, f"<h1>{html.escape(title)}</h1><p>{cat.blurbs[r]}</p>"
                               f"<p>{cat.author[r]}, {cat.year[r]}, {cat.fmt[r]}</p>"))
    if path == "/catalogue/find":
        a = dict(parse_qsl(qs, keep_blank_values=True))
        order = a.get("order", "rel") if a.get("order") in ORDERS else "rel"
        try:
            start = max(0, int(a.get("start", "0") or 0))
        except ValueError:
            start = 0
        total, ids = query(cat, a.get("terms", ""), a.get("fmt", "all"), a.get("avail", ""), order,
                           cfg.library_max_results)
        per = cfg.library_per_page
        chunk = ids[start:start + per]
        rows = "".join(
            f'<tr><td><a href="/item/b{r:05d}">{html.escape(cat.titles[r])}</a>'
            f'<div class="blurb">{cat.blurbs[r]}</div></td><td>{cat.author[r]}</td>'
            f'<td>{cat.year[r]}</td></tr>' for r in chunk)
        keep = [(k, v) for k, v in a.items() if k != "start"]
        head, pager = "", []
        if start + per < len(ids):
            nxt = html.escape("/catalogue/find?" + urlencode(keep + [("start", start + per)]))
            head = f'<link rel="next" href="{nxt}">'
        for i in range(0, min(len(ids), 10 * per), per):
            pager.append(f'<a href="/catalogue/find?{html.escape(urlencode(keep + [("start", i)]))}">'
                         f'{i // per + 1}</a>')
        shown = f"{start + 1}–{start + len(chunk)}" if chunk else "0"
        body = (f'<h2>Catalogue</h2><div class="summary">Showing {shown} of {total} titles</div>'
                '<table class="hits"><thead><tr><th>Title</th><th>Author</th><th>Year</th></tr></thead>'
                f'<tbody>{rows}</tbody></table><div class="pager">{" ".join(pager)}</div>')
        return ok(_page("Catalogue search", body, head))
    return Response(404, [("Content-Type", "text/html")], b"not found")


def truth(web):
    """(url, title, [(dst, anchor)]) of the pages reachable by links."""
    base = web.base_url(web.library.name)
    return [(base + "/", "Library catalogue", [(base + "/help", "Help")]),
            (base + "/help", "Catalogue help", [(base + "/", "Back"), (base + "/help", "Help")])]
