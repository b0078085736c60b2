"""robots.txt rules (RFC 9309) on top of protego.

Fetch semantics (carried out by `hostfetcher.HostFetcher`, decided by `robots_outcome` here):

| robots.txt fetch            | state          | meaning this round                                  |
| --------------------------- | -------------- | --------------------------------------------------- |
| 2xx                         | parsed         | rules apply; only the first 500 KiB is parsed       |
| 3xx                         | (follow)       | up to 5 hops, each hop's address guarded            |
| more than 5 hops            | allow_all      | RFC 9309 2.3.1.2: treat as unavailable              |
| 4xx (incl. 401, 403, 429*)  | allow_all      | RFC 9309 2.3.1.3                                    |
| 5xx, timeout, network error | disallow_all   | host skipped this round, retried next round         |

(*) 429 is treated like a 5xx (the server asks us to slow down), as Google does.

A parsed/allow_all result is cached in the host state for `robots_ttl` (24 h by default);
disallow_all is never cached past the round.

Group selection: the crawler's product token (the User-Agent up to the first '/' or
space, e.g. 'beamcrawl') is matched case-insensitively and exactly against the groups'
user-agent lines; if no group names it, the '*' group applies; no group -> allow all.
Within a group the longest matching rule wins, Allow beats Disallow on equal length, and
'*' / '$' wildcards are supported (protego). /robots.txt itself is always allowed.
"""
from __future__ import annotations

import re

from protego import Protego

PARSED = "parsed"
ALLOW_ALL = "allow_all"
DISALLOW_ALL = "disallow_all"
ROBOTS_STATES = (PARSED, ALLOW_ALL, DISALLOW_ALL)

ROBOTS_MAX_BYTES = 500 * 1024       # RFC 9309 2.5: parse at least 500 KiB
ROBOTS_MAX_REDIRECTS = 5            # RFC 9309 2.3.1.2

_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]+")


def product_token(user_agent: str) -> str:
    """'beamcrawl/0.1 (+https://...)' -> 'beamcrawl' (RFC 9309 2.2.1 product token)."""
    m = _TOKEN_RE.match(user_agent.strip())
    if not m:
        raise ValueError(f"user agent {user_agent!r} does not start with a product token")
    return m.group(0).lower()


def decode_robots(body: bytes, truncated: bool = False) -> str:
    """robots.txt bytes -> text (UTF-8, lenient). A truncated body loses its partial last line
    (a cut-off 'Disallow: /private' must not become 'Disallow: /pri' or vanish silently
    into a different rule)."""
    if truncated:
        cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[:cut + 1] if cut >= 0 else b""
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]
    return body.decode("utf-8", errors="replace")


def robots_outcome(status: int) -> str | None:
    """The robots state an HTTP status leads to; None for a redirect to follow."""
    if 200 <= status < 300:
        return PARSED
    if 300 <= status < 400:
        return None
    if status == 429:
        return DISALLOW_ALL
    if 400 <= status < 500:
        return ALLOW_ALL
    return DISALLOW_ALL          # 5xx and anything odd


class RobotsPolicy:
    """The rules of one robots.txt, for one crawler.

    Build from a state ('parsed' | 'allow_all' | 'disallow_all') and, when parsed, the
    robots.txt text. Picklable (the text is reparsed on unpickle).
    """

    def __init__(self, state: str, body: str | None = None):
        if state not in ROBOTS_STATES:
            raise ValueError(f"unknown robots state {state!r}")
        self.state = state
        self.body = body or ""
        self._parser = Protego.parse(self.body) if state == PARSED else None
        self._groups: dict[str, object] = {}

    @classmethod
    def parse(cls, text: str) -> "RobotsPolicy":
        return cls(PARSED, text)

    @classmethod
    def allow_all(cls) -> "RobotsPolicy":
        return cls(ALLOW_ALL)

    @classmethod
    def disallow_all(cls) -> "RobotsPolicy":
        return cls(DISALLOW_ALL)

    def __getstate__(self):
        return {"state": self.state, "body": self.body}

    def __setstate__(self, d):
        self.__init__(d["state"], d["body"])

    def _group(self, user_agent: str):
        token = product_token(user_agent)
        if token not in self._groups:
            groups = getattr(self._parser, "_user_agents", None)
            if groups is None:     # protego internals changed: fall back to its own matching
                self._groups[token] = _ProtegoFallback(self._parser, token)
            else:
                self._groups[token] = groups.get(token) or groups.get("*")
        return self._groups[token]

    def allowed(self, url: str, user_agent: str) -> bool:
        if self.state == ALLOW_ALL:
            return True
        if self.state == DISALLOW_ALL:
            return False
        if _path_of(url) == "/robots.txt":
            return True
        group = self._group(user_agent)
        return True if group is None else bool(group.can_fetch(url))

    def crawl_delay(self, user_agent: str) -> float | None:
        """Crawl-delay of the matching group, or the interval a Request-rate implies
        (whichever is longer); None when neither is given."""
        if self.state != PARSED:
            return None
        group = self._group(user_agent)
        if group is None:
            return None
        delay = group.crawl_delay
        rate = group.request_rate
        if rate is not None and rate.requests:
            implied = rate.seconds / rate.requests
            delay = implied if delay is None else max(delay, implied)
        return delay

    @property
    def sitemaps(self) -> list[str]:
        return list(self._parser.sitemaps) if self._parser is not None else []


class _ProtegoFallback:
    def __init__(self, parser: Protego, token: str):
        self._p, self._t = parser, token

    def can_fetch(self, url):
        return self._p.can_fetch(url, self._t)

    @property
    def crawl_delay(self):
        return self._p.crawl_delay(self._t)

    @property
    def request_rate(self):
        return self._p.request_rate(self._t)


def _path_of(url: str) -> str:
    from urllib.parse import urlsplit
    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return ""
