"""What a crawl did, from nginx's access log (benchmarks/realweb/nginx.py LOG_FORMAT) against
the export's ground truth: coverage, robots violations, duplicate fetches, per-host
concurrency. Pure Python plus protego (robots.txt, RFC 9309, as the ground truth uses)."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from benchmarks.realweb.canon import canonical

NOT_PAGES = ("/robots.txt", "/robots-moved.txt")


@dataclass
class Request:
    start: float
    end: float
    status: int
    host: str
    uri: str
    agent: str
    conn: str = ""


def read_access_log(path) -> list[Request]:
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 7:
                continue
            end, rt = float(parts[0]), float(parts[1])
            out.append(Request(end - rt, end, int(parts[2]), parts[4].lower(), parts[5], parts[6],
                               parts[7] if len(parts) > 7 else ""))
    return out


class RobotsRules:
    """Per host: allow-all (4xx), disallow-all (5xx) or the parsed rules of its effective
    robots.txt, for the ``*`` group (``robots.json`` of the export: host -> [status, text])."""

    def __init__(self, robots: dict):
        from protego import Protego
        self.rules = {}
        for host, (status, text) in robots.items():
            if status >= 500:
                self.rules[host] = False
            elif status >= 400:
                self.rules[host] = True
            else:
                self.rules[host] = Protego.parse(text or "")

    @classmethod
    def from_export(cls, export_dir) -> "RobotsRules":
        return cls(json.loads((Path(export_dir) / "robots.json").read_text()))

    def allows(self, host: str, uri: str) -> bool:
        r = self.rules.get(host, True)
        if isinstance(r, bool):
            return r
        return r.can_fetch(f"http://{host}{uri}", "simweb-truth")


def analyse(requests: list[Request], reachable: set[str], robots: RobotsRules, port: int) -> dict:
    net = (lambda h: h) if port in (0, 80) else (lambda h: f"{h}:{port}")
    counts = Counter()
    violations = []
    for r in requests:
        path = r.uri.split("?", 1)[0]
        if path in NOT_PAGES:
            continue
        counts[canonical(f"http://{net(r.host)}{r.uri}")] += 1
        if not robots.allows(r.host, r.uri):
            violations.append(f"{r.host}{r.uri}")
    fetched = set(counts)
    by_host = defaultdict(list)
    for r in requests:
        by_host[r.host].append(r)
    max_conc = 0
    for rs in by_host.values():
        # Connections to one host with a request in flight at once. nginx logs times in
        # ms, so two quick requests in one ms look simultaneous: requests on the SAME
        # (keep-alive) connection are sequential by HTTP/1.1, so count distinct connections.
        ev = sorted([(r.start, 1, r.conn) for r in rs] +
                    [(max(r.end, r.start + 0.0005), -1, r.conn) for r in rs])
        active = Counter()
        for _, d, conn in ev:
            active[conn] += d
            if active[conn] == 0:
                del active[conn]
            max_conc = max(max_conc, len(active))
    return {
        "requests": len(requests),
        "pages": len(fetched),
        "covered": len(fetched & reachable),
        "coverage": len(fetched & reachable) / max(1, len(reachable)),
        "outside_truth": len(fetched - reachable),
        "robots_violations": len(violations),
        "violation_examples": violations[:5],
        "duplicate_fetches": sum(c - 1 for c in counts.values() if c > 1),
        "max_conns_per_host": max_conc,
        "statuses": dict(Counter(r.status for r in requests)),
    }
