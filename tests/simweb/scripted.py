"""app.simweb.test and feed.simweb.test: pages a crawler sees only by running their scripts
(``scripted=True``; issue #19).

Every HTML page of both hosts is the same shell: a title, an empty ``<div id="app">``, a
``<noscript>`` notice and two scripts; the static HTML has no link and almost no text.

- app.simweb.test: ``/static/app.js`` holds a table of every page's heading and paragraph
  and builds, with ``document.createElement``, the page's text and a navigation list linking
  to every other page of the host.
- feed.simweb.test: ``/static/feed.js`` loads ``/api/nav.json`` with ``fetch()`` and builds
  the same from that JSON (a host whose links come from an API).

Both shells also load ``/private/analytics.js``, which robots.txt disallows (``User-agent: *
Disallow: /private/``): a polite renderer never requests it (the request log shows it). The
scripts are served with ``Content-Type: application/javascript``.

`truth(web, host)` gives (url, title, [(linked url, anchor)]) of a host's pages: the links
as the rendered DOM shows them.
"""
from __future__ import annotations

import html
import json
import random

from .words import TOPICS

APP, FEED = "app", "feed"
N_PAGES = 6                       # pages besides / on each host (SimConfig.scripted_pages)
ROBOTS = b"User-agent: *\nDisallow: /private/\n"
_WORDS = " ".join(w for _, ws in TOPICS for w in ws.split()).split()
_JS = "application/javascript"
_HTML = "text/html; charset=utf-8"

APP_JS = """(function () {
  var PAGES = %s;
  var me = PAGES[location.pathname] || PAGES["/"];
  var app = document.getElementById("app");
  var h = document.createElement("h1"); h.textContent = me.heading; app.appendChild(h);
  var p = document.createElement("p"); p.textContent = me.text; app.appendChild(p);
  var nav = document.createElement("ul");
  Object.keys(PAGES).forEach(function (path) {
    if (path === location.pathname) return;
    var li = document.createElement("li"), a = document.createElement("a");
    a.href = path; a.textContent = PAGES[path].heading; li.appendChild(a); nav.appendChild(li);
  });
  app.appendChild(nav);
})();
"""
FEED_JS = """fetch("/api/nav.json").then(function (r) { return r.json(); }).then(function (data) {
  var me = data.pages[location.pathname] || data.pages["/"];
  var app = document.getElementById("app");
  var h = document.createElement("h1"); h.textContent = me.heading; app.appendChild(h);
  var p = document.createElement("p"); p.textContent = me.text; app.appendChild(p);
  var nav = document.createElement("ul");
  data.order.forEach(function (path) {
    if (path === location.pathname) return;
    var li = document.createElement("li"), a = document.createElement("a");
    a.href = path; a.textContent = data.pages[path].heading; li.appendChild(a); nav.appendChild(li);
  });
  app.appendChild(nav);
});
"""
ANALYTICS_JS = b"/* robots.txt disallows this file */ window.tracked = true;\n"


def paths(kind: str, n: int = N_PAGES) -> list[str]:
    sub = "view" if kind == APP else "item"
    return ["/"] + [f"/{sub}/{k}" for k in range(n)]


def heading(kind: str, path: str) -> str:
    return f"{'Scripted app' if kind == APP else 'Fetched feed'} {path.strip('/') or 'home'}"


def _text(kind: str, path: str, seed: int) -> str:
    r = random.Random(f"{seed}:{kind}:{path}")
    return " ".join(r.choices(_WORDS, k=60)).capitalize() + "."


def pages(kind: str, seed: int, n: int = N_PAGES) -> dict:
    return {p: {"heading": heading(kind, p), "text": _text(kind, p, seed)} for p in paths(kind, n)}


def shell(kind: str, path: str) -> bytes:
    script = "/static/app.js" if kind == APP else "/static/feed.js"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(heading(kind, path))}</title></head><body>"
            '<div id="app"></div><noscript>This site needs JavaScript.</noscript>'
            f'<script src="{script}"></script><script src="/private/analytics.js"></script>'
            "</body></html>").encode()


def respond(web, host, target: str, headers: dict, now: float):
    from .model import Response
    kind, n = host.kind.split("_", 1)[1], web.cfg.scripted_pages
    path = target.split("#", 1)[0].split("?", 1)[0]
    if path == "/robots.txt":
        return Response(200, [("Content-Type", "text/plain")], ROBOTS)
    if path in paths(kind, n):
        return Response(200, [("Content-Type", _HTML)], shell(kind, path))
    if path == "/private/analytics.js":
        return Response(200, [("Content-Type", _JS)], ANALYTICS_JS)
    if kind == APP and path == "/static/app.js":
        return Response(200, [("Content-Type", _JS)],
                        (APP_JS % json.dumps(pages(kind, web.seed, n), sort_keys=True)).encode())
    if kind == FEED and path == "/static/feed.js":
        return Response(200, [("Content-Type", _JS)], FEED_JS.encode())
    if kind == FEED and path == "/api/nav.json":
        return Response(200, [("Content-Type", "application/json")],
                        json.dumps({"pages": pages(kind, web.seed, n), "order": paths(kind, n)}).encode())
    return Response(404, [("Content-Type", "text/html")], b"<html><body>Not found</body></html>")


def truth(web, host) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(url, title, [(linked url, anchor)]) of every page of `host`, links as rendered."""
    kind = host.kind.split("_", 1)[1]
    base = web.base_url(host.name)
    ps = paths(kind, web.cfg.scripted_pages)
    return [(base + p, heading(kind, p), [(base + q, heading(kind, q)) for q in ps if q != p])
            for p in ps]
