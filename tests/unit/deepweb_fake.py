"""An in-memory deep-web crawl: the planner (strategies.deepweb) driven round by round over
a simulated-web host's `respond`, pages parsed by the page step's parser (parse_html with
deep_web). No sockets, no Beam: the unit tests and benchmarks/bench_deepweb.py use it."""
from __future__ import annotations

from urllib.parse import urlsplit

from strategies.deepweb import planner
from transforms.page.parse import parse_html
from transforms.urls.canonical import normalize


def fetch(web, url, mode):
    parts = urlsplit(url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    r = web.respond(parts.hostname, target, {}, now=web.cfg.sim_start)
    return r, parse_html(r.body, url, dict(r.headers).get("Content-Type"), deep_web=mode)


def probe(web, form_url, cfg: planner.ProbeConfig, max_rounds=500):
    """Crawl `form_url`'s host's forms with the planner until it emits nothing more.
    Returns (state, stats): submissions, result pages fetched, record URLs reached, rounds."""
    form_url = normalize(form_url)
    _, page = fetch(web, form_url, "forms")
    found = [{"page": form_url, "depth": 0, "form": f, "words": list(dict.fromkeys(page.text.lower().split()))}
             for f in page.forms]
    state, digests, reached, fetched = None, [], set(), 0
    for r in range(1, max_rounds):
        state, emit = planner.advance(state, found, digests, r, cfg, normalize)
        found, digests = [], []
        if not emit:
            break
        for url, _, _ in emit:
            resp, parsed = fetch(web, url, "results")
            fetched += 1
            if resp.status == 200 and parsed.result is not None:
                digests.append({"url": url, "result": parsed.result})
                reached.update(parsed.result["records"])
    return state, {"submissions": state["sent"], "fetched": fetched, "reached": reached, "rounds": r}
