"""Vertical (focused) crawling, driver side: the topic, the crawl's document frequencies,
the harvest report and when `--mode vertical` stops (docs/vertical.md).

- `focus_config(settings, fetch, limits, ordering)`: the page step's FocusConfig, or None
  without a topic. The topic is the keywords of --topic plus the text of the --topic_pages
  examples (files, or URLs fetched with the round's fetch settings: robots.txt, address
  guard, resolver), each read by the parser of its sniffed format.
- `with_docfreq(cfg, crawl, prev)`: the round's config with the topic weighed by the
  document frequencies of every page parsed up to round `prev` (the docfreq view).
- `harvest(stats, prev_report, settings)`: the report's harvest section: this round's
  harvest rate (relevant / visited at --relevance_threshold) and its running curve.
- `stop_reason(report)`: why a vertical crawl stops after this round (None: go on).
"""
from __future__ import annotations

import dataclasses
import os

from strategies.topic import DocFreq, Topic
from transforms.page.focus import FocusConfig
from transforms.page.formats import parse_document
from transforms.page.formats import sniff as sniff_mod

FOCUSED = ("best_first", "shark_search", "fish_search")


class TopicError(ValueError):
    """The topic flags cannot make a topic; the message names the flag."""


def _csv(v):
    return [x.strip() for x in str(v or "").split(",") if x.strip()]


def _fetch_example(url, fetch, limits):
    from transforms.fetch.hostjob import FetcherFactory
    from transforms.fetch.records import FetchRequest, HostState
    from transforms.urls.canonical import fingerprints, host_key, normalize
    canon = normalize(url)
    if not canon:
        raise TopicError(f"--topic_pages {url}: not a valid http(s) URL")
    host = host_key(canon)
    fetcher = FetcherFactory(fetch)()
    try:
        results, _ = fetcher.fetch_host(host, [FetchRequest(url=canon, fp=int(fingerprints([canon])[0]))],
                                        HostState.from_row(None, host))
    finally:
        fetcher.close()
    res = results[0] if results else None
    if res is None or res.outcome != "ok" or not res.body:
        why = f"{res.outcome} {res.http_status or ''} {res.reason or ''}".strip() if res else "no result"
        raise TopicError(f"--topic_pages {url}: could not fetch it ({why}); give a reachable "
                         "URL (robots.txt and the address guard apply) or a local file")
    return res.body, res.content_type, res.content_type_header, canon


def example_text(spec, fetch, limits) -> str:
    """The text of one --topic_pages entry (a file or an http(s) URL)."""
    if spec.lower().startswith(("http://", "https://")):
        body, ctype, header, url = _fetch_example(spec, fetch, limits)
    else:
        if not os.path.isfile(spec):
            raise TopicError(f"--topic_pages {spec}: no such file (give files or http(s) URLs)")
        with open(spec, "rb") as f:
            body = f.read()
        ctype, header, url = None, None, "file:///" + os.path.abspath(spec).lstrip("/")
    doc = parse_document(body, url, sniff_mod.sniff(body, ctype), limits, header)
    if doc is None or not doc.text.strip():
        raise TopicError(f"--topic_pages {spec}: no text could be read from it")
    return doc.text


def focus_config(s, fetch, limits, ordering) -> FocusConfig | None:
    """The FocusConfig of the settings `s`, None without a topic (an error if one is needed)."""
    keywords, pages = _csv(s.get("topic")), _csv(s.get("topic_pages"))
    needs = s.get("mode") == "vertical" or s.get("strategy") in FOCUSED
    if not keywords and not pages:
        if needs:
            why = "--mode vertical" if s.get("mode") == "vertical" else f"--strategy {s['strategy']}"
            raise TopicError(f"{why} needs a topic: give --topic KEYWORDS,... and/or "
                             "--topic_pages FILE_OR_URL,...")
        return None
    texts = list(keywords) + [example_text(p, fetch, limits) for p in pages]
    topic = Topic.from_texts(texts)
    if topic.empty:
        raise TopicError("--topic: no words in the topic (words of two letters or more)")
    return FocusConfig(topic=topic, ordering=ordering,
                       threshold=float(s.get("relevance_threshold", 0.2)),
                       depth_bound=int(s.get("depth_bound", 3)),
                       anchor_window=int(s.get("anchor_window", 10)),
                       vertical=s.get("mode") == "vertical")


def with_docfreq(cfg, crawl, prev):
    """`cfg` with its topic weighed by the docfreq view of committed round `prev`."""
    focus = cfg.page.focus
    if focus is None or prev is None:
        return cfg
    df = DocFreq.from_table(crawl.read_table("docfreq", prev))
    focus = dataclasses.replace(focus, topic=focus.topic.with_docfreq(df))
    return dataclasses.replace(cfg, page=dataclasses.replace(cfg.page, focus=focus))


def harvest(stats, prev_report, settings) -> dict | None:
    """The report's `harvest` section (None when the round scored no topic)."""
    if "topic_scored" not in stats and not (prev_report or {}).get("harvest"):
        return None
    visited = int(stats.get("visited", 0)) - sum(v for k, v in stats.items()
                                                 if k.startswith("refused_guard_"))
    relevant = int(stats.get("topic_relevant", 0))
    prev = (prev_report or {}).get("harvest") or {}
    run_rel = int(prev.get("running_relevant", 0)) + relevant
    run_vis = int(prev.get("running_visited", 0)) + visited
    rate = relevant / visited if visited else 0.0
    running = run_rel / run_vis if run_vis else 0.0
    return {"threshold": settings.get("relevance_threshold"), "relevant": relevant,
            "visited": visited, "scored": int(stats.get("topic_scored", 0)), "rate": rate,
            "running_relevant": run_rel, "running_visited": run_vis, "running_rate": running,
            # the running curve: (pages visited so far, running harvest rate) after each round
            "curve": list(prev.get("curve", [])) + [[run_vis, round(running, 6)]],
            "mode": settings.get("mode"), "floor": settings.get("harvest_floor")}


def summary_line(report) -> list:
    h = report.get("harvest")
    if not h:
        return []
    return [(f"  harvest: {h['relevant']}/{h['visited']} relevant = {h['rate']:.3f} this round, "
            f"running {h['running_relevant']}/{h['running_visited']} = {h['running_rate']:.3f} "
            f"(relevance >= {h['threshold']})")]


def stop_reason(report) -> str | None:
    h = report.get("harvest")
    if not h or h.get("mode") != "vertical" or not h.get("visited"):
        return None
    if h["running_visited"] == h["visited"]:   # the first round fetches seeds, not choices
        return None
    if h["rate"] < float(h.get("floor") or 0.0):
        return (f"vertical crawl stops: round {report['round']}'s harvest rate {h['rate']:.3f} "
                f"is below --harvest_floor {h['floor']}")
    return None
