"""The deep-web stage without a runner: what the page step found -> per-host planner calls
(strategies.deepweb.planner) -> state rows (DEEPWEB), form rows (FORMS) and candidates
bundles for URL-seen (source `form`, so the page step digests their results).

The emitted submissions and result pages are ordinary frontier URLs from here on: the URL
filter applies (the page step's `filter_bundle`), URL-seen drops what is known, generate's
per-host cap and the fetcher's politeness and robots.txt apply when they are fetched.
"""
from __future__ import annotations

import json

from schemas import tables
from strategies.deepweb import planner
from strategies.deepweb.templates import form_key
from transforms.page.fate import filter_bundle
from transforms.urls import canonical, request


def host_of(url: str) -> str:
    """The host of a URL or of a request key ("POST <url> <body>")."""
    return canonical.host_key(request.split_key(url)[0])


def keyed(found: dict):
    """(host, ("form", item)) per form (keyed by its action's host), (host, ("digest", item))
    for a result page."""
    for form in found["forms"]:
        yield host_of(form["action"]), ("form", {"page": found["url"], "page_fp": found["fp"],
                                                 "depth": found["depth"], "form": form,
                                                 "words": found["words"], "links": found.get("links", [])})
    if found.get("result") is not None:
        yield host_of(found["url"]), ("digest", {"url": found["url"], "result": found["result"]})


def state_rows(table):
    """(host, state dict) per DEEPWEB row."""
    for host, state in zip(table.column("host").to_pylist(), table.column("state").to_pylist()):
        yield host, json.loads(state)


def form_rows(host, items, round_no):
    return [{"page_fp": it["page_fp"], "page": it["page"], "host": host, "round": round_no,
             "action": it["form"]["action"], "method": it["form"]["method"],
             "form_key": form_key(it["form"]), "inputs": json.dumps(it["form"]["inputs"])}
            for it in items]


def request_bundles(emit):
    """Candidates bundles (source `form`) of the planner's [(request key, depth, parent key)]:
    GET URLs grouped by (parent, depth); the POSTs to one action URL by (parent, depth, URL),
    with `method` POST and their form-encoded bodies in `request_body` (one per URL)."""
    groups = {}
    for key, depth, parent in emit:
        url, method, body = request.split_key(key)
        g = groups.setdefault((parent, depth, url if method else None), ([], []))
        g[0].append(url)
        g[1].append(body)
    for (parent, depth, post_url), (urls, bodies) in groups.items():
        src = request.split_key(parent)[0] if parent else None
        bundle = {"src": src, "src_fp": int(request.key_fingerprint(parent)) if parent else 0,
                  "depth": depth, "source": tables.SOURCE_FORM, "redirects": 0,
                  "dst": urls, "anchor": [""] * len(urls)}
        if post_url:
            bundle.update(method=request.POST, request_body=bodies)
        yield bundle


def advance_host(host, found_items, digests, states, round_no, cfg, url_filter):
    """One host's round: (DEEPWEB row or None, FORMS rows, kept bundles, filtered bundles, stats).

    `states`: its previous state (a list of 0 or 1 dicts)."""
    state = states[0] if states else None
    if state is None and not found_items and not digests:
        return None, [], [], [], {}
    before = state["sent"] if state else 0
    state, emit = planner.advance(state, found_items, digests, round_no, cfg.for_host(host),
                                  canonical.normalize)
    kept, dropped = [], []
    for bundle in request_bundles(emit):
        k, f = filter_bundle(bundle, url_filter)
        if k and bundle.get("method"):
            k["request_body"] = bundle["request_body"]   # one action URL: all kept or none
        if k:
            kept.append(k)
        if f:
            dropped.append(f)
    s = planner.summary(state)
    row = {"host": host, "round": round_no, "forms": s["forms"], "submissions": s["submissions"],
           "result_pages": s["result_pages"], "records": s["records"],
           "state": json.dumps(state, separators=(",", ":"), sort_keys=True)}
    stats = {"deepweb_forms": s["forms"], "deepweb_submissions": s["submissions"],
             "deepweb_submitted_round": s["submissions"] - before, "deepweb_records": s["records"],
             "deepweb_result_pages": s["result_pages"], "deepweb_emitted": len(emit),
             "deepweb_digests": len(digests)}
    for status, n in s["templates"].items():
        stats[f"deepweb_templates_{status}"] = n
    return row, form_rows(host, found_items, round_no), kept, dropped, stats
