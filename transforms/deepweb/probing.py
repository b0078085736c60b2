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
from transforms.urls import canonical


def host_of(url: str) -> str:
    return canonical.host_key(url)


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


def advance_host(host, found_items, digests, states, round_no, cfg, url_filter):
    """One host's round: (DEEPWEB row or None, FORMS rows, kept bundles, filtered bundles, stats).

    `states`: its previous state (a list of 0 or 1 dicts)."""
    state = states[0] if states else None
    if state is None and not found_items and not digests:
        return None, [], [], [], {}
    before = state["sent"] if state else 0
    state, emit = planner.advance(state, found_items, digests, round_no, cfg, canonical.normalize)
    groups = {}
    for url, depth, parent in emit:
        groups.setdefault((parent, depth), []).append(url)
    kept, dropped = [], []
    for (parent, depth), urls in groups.items():
        bundle = {"src": parent, "src_fp": int(canonical.fingerprint(parent)) if parent else 0,
                  "depth": depth, "source": tables.SOURCE_FORM, "redirects": 0,
                  "dst": urls, "anchor": [""] * len(urls)}
        k, f = filter_bundle(bundle, url_filter)
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
