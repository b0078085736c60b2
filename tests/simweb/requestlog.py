"""Reading the simulated web's request log (JSON lines, one object per request).

Fields: host, path (with query), method, status, start, end (epoch seconds, real time),
headers (User-Agent, If-None-Match, If-Modified-Since, Accept-Encoding when sent),
addr (local address that received the request), bytes, and sim_time when the server
runs on a simulated clock.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlsplit


def read_log(path) -> list[dict]:
    out = []
    p = Path(path)
    if not p.exists():
        return out
    with open(p, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line being written right now
    return out


def by_host(records, key: str = "host") -> dict[str, list[dict]]:
    """Records by host name (key="addr": by the address that received them, a server)."""
    d = defaultdict(list)
    for r in records:
        d[r[key]].append(r)
    for v in d.values():
        v.sort(key=lambda r: r["start"])
    return dict(d)


def gaps_per_host(records, measure: str = "start", key: str = "host") -> dict[str, list[float]]:
    """Gaps between consecutive requests to each host, in seconds.

    measure="start": start(n+1) - start(n); measure="end": start(n+1) - end(n) (idle time
    between the end of one response and the next request)."""
    out = {}
    for h, rs in by_host(records, key).items():
        if measure == "end":
            out[h] = [b["start"] - a["end"] for a, b in zip(rs, rs[1:])]
        else:
            out[h] = [b["start"] - a["start"] for a, b in zip(rs, rs[1:])]
    return out


def min_gap_per_host(records, measure: str = "start", key: str = "host") -> dict[str, float]:
    return {h: min(g) for h, g in gaps_per_host(records, measure, key).items() if g}


def max_concurrency_per_host(records, key: str = "host") -> dict[str, int]:
    """Most requests to one host (key="addr": one server address) in flight at the same time
    (1 = strictly sequential)."""
    out = {}
    for h, rs in by_host(records, key).items():
        ev = sorted([(r["start"], 1) for r in rs] + [(r["end"], -1) for r in rs],
                    key=lambda x: (x[0], x[1]))
        cur = best = 0
        for _, d in ev:
            cur += d
            best = max(best, cur)
        out[h] = best
    return out


def requested_twice(records, robots=False) -> list[tuple]:
    """(host, path) of the pages requested more than once, sorted (robots.txt left out unless
    `robots`): a crawl that fetches each page once logs none."""
    counts = Counter((r["host"].lower(), r["path"]) for r in records
                     if robots or not r["path"].startswith("/robots"))
    return sorted(k for k, n in counts.items() if n > 1)


def _robots_by_host(ground_truth):
    from protego import Protego
    hosts = ground_truth["hosts"].to_pydict()
    out = {}
    for name, status, txt in zip(hosts["host"], hosts["robots_status"], hosts["robots_txt"]):
        if status >= 500:
            out[name] = False
        elif status >= 400:
            out[name] = True
        else:
            out[name] = Protego.parse(txt or "")
    return out


def robots_allows(ground_truth, host: str, path: str, user_agent: str = "simweb-truth") -> bool:
    rules = _robots_by_host(ground_truth).get(host.lower(), True)
    if isinstance(rules, bool):
        return rules
    return rules.can_fetch(f"http://{host}{path}", user_agent)


def disallowed_requests(records, ground_truth, user_agent: str = "simweb-truth") -> list[dict]:
    """Logged requests (other than robots.txt itself) that robots.txt forbids for
    ``user_agent`` (default: the ``*`` group). A host whose robots.txt is 5xx forbids all."""
    rules = _robots_by_host(ground_truth)
    bad = []
    for r in records:
        path = r["path"]
        if path.split("?")[0] in ("/robots.txt", "/robots-moved.txt"):
            continue
        rule = rules.get(r["host"].lower(), True)
        ok = rule if isinstance(rule, bool) else rule.can_fetch(f"http://{r['host']}{path}", user_agent)
        if not ok:
            bad.append(r)
    return bad


def requests_to_forbidden(records, ground_truth) -> list[dict]:
    """Requests received on a forbidden address (e.g. the metadata stand-in)."""
    hosts = ground_truth["hosts"].to_pydict()
    addrs = {a for a, f in zip(hosts["addr"], hosts["forbidden"]) if f}
    names = {h for h, f in zip(hosts["host"], hosts["forbidden"]) if f}
    return [r for r in records if r.get("addr") in addrs or r["host"] in names]


def fetched_urls(records, port: int, statuses=(200,)) -> set[str]:
    """Canonical URLs (http://host:port/path) of logged GETs with one of ``statuses``."""
    net = lambda h: h if port in (0, 80) else f"{h}:{port}"
    return {f"http://{net(r['host'])}{r['path']}" for r in records
            if r["method"] == "GET" and r["status"] in statuses}
