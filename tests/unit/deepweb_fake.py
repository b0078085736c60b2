"""An in-memory deep-web crawl: the planner (strategies.deepweb) driven round by round over
a simulated-web host's `respond`, pages parsed by the page step's parser (parse_html with
deep_web). No sockets, no Beam: the unit tests and benchmarks/bench_deepweb.py use it."""
from __future__ import annotations

from urllib.parse import urlsplit

from strategies.deepweb import planner
from transforms.page.forms import page_words
from transforms.page.parse import parse_html
from transforms.urls.canonical import normalize


def fetch(web, url, mode):
    parts = urlsplit(url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    r = web.respond(parts.hostname, target, {}, now=web.cfg.sim_start)
    return r, parse_html(r.body, url, dict(r.headers).get("Content-Type"), deep_web=mode)


def probe(web, form_url, cfg: planner.ProbeConfig, max_rounds=500):
    """Crawl `form_url`'s host's forms with the planner until it emits nothing more.
    Returns (state, stats): submissions, result pages fetched, record URLs reached, rounds,
    and every URL the planner emitted ("urls", in order)."""
    form_url = normalize(form_url)
    _, page = fetch(web, form_url, "forms")
    found = [{"page": form_url, "depth": 0, "form": f, "words": page_words(page.text),
              "links": page.links}
             for f in page.forms]
    state, digests, reached, fetched, urls = None, [], set(), 0, []
    for r in range(1, max_rounds):
        state, emit = planner.advance(state, found, digests, r, cfg, normalize)
        found, digests = [], []
        if not emit:
            break
        for url, _, _ in emit:
            urls.append(url)
            if url.startswith("POST "):   # a POST submission's key: kept in "urls", not fetched
                continue                  # (this web answers GETs; the e2e tests send POSTs)
            resp, parsed = fetch(web, url, "results")
            fetched += 1
            if resp.status == 200 and parsed.result is not None:
                digests.append({"url": url, "result": parsed.result})
                reached.update(parsed.result["records"])
    return state, {"submissions": state["sent"], "fetched": fetched, "reached": reached, "rounds": r,
                   "urls": urls}


def signature(web, url):
    resp, parsed = fetch(web, normalize(url), "results")
    return parsed.result["signature"] if resp.status == 200 and parsed.result else None


def judge_template(web, form, template, cfg: planner.ProbeConfig):
    """The informativeness test of one template, outside ISIT's order: its samples and their
    parents (the submissions without each input) fetched in memory."""
    from strategies.deepweb import isit, templates as tpl
    inputs = tpl.binding_inputs(form)
    samples = tpl.sample(tuple(template), inputs, cfg.samples, tpl.form_key(form))
    got = [(v, signature(web, tpl.submission_url(form, v))) for v in samples]
    return isit.informativeness(list(template), got,
                                lambda v: signature(web, tpl.submission_url(form, v)), cfg.informative)


def form_of(web, url):
    _, page = fetch(web, normalize(url), "forms")
    return [f for f in page.forms if f["method"] == "get"][0]
