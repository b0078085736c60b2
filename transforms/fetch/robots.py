"""robots.txt rules (RFC 9309): which group applies to the crawler, and its rules.

Fetch semantics (carried out by `robotsfetch.RobotsFetching`, decided by `robots_outcome` here):

| robots.txt fetch            | state          | meaning this round                                  |
| --------------------------- | -------------- | --------------------------------------------------- |
| 2xx                         | parsed         | rules apply; only the first 500 KiB is parsed       |
| 3xx                         | (follow)       | up to 5 hops, each hop's address guarded            |
| more than 5 hops            | allow_all      | RFC 9309 2.3.1.2: treat as unavailable              |
| 4xx (incl. 401, 403, 429*)  | allow_all      | RFC 9309 2.3.1.3                                    |
| 5xx, timeout, network error | disallow_all   | host skipped this round, retried next round; after 30 days unreachable the last good copy is obeyed, or with none the file is taken as unavailable (`robotsfetch`, RFC 9309 2.3.1.4) |

(*) 429 is treated like a 5xx (the server asks us to slow down), as Google does.

A parsed/allow_all result is cached in the host state for `robots_ttl` (24 h by default);
disallow_all is never cached past the round.

Groups (`parse_groups`), as Google's reference parser reads them where RFC 9309 leaves
room: lines end at CR, LF or CRLF; a line is read up to `ROBOTS_MAX_LINE` bytes (longer
ones are cut there); a missing colon is accepted ("Disallow /x"), and the usual misspellings
of the field names. A group is one or more User-agent lines and the lines after them up to
the next User-agent line that follows another field (Sitemap lines stand outside groups;
any other field, known or not, ends the User-agent list, as protego reads it); lines before
the first User-agent line are ignored.

A User-agent line names a product token: the value up to its first character that cannot
be in one ("Foo Bar" and "Foo/1.2" name Foo), compared case-insensitively; "*" (alone or
followed by a space) is the global group. The crawler's own token is `product_token` of its
User-Agent header. The groups naming the crawler's token apply (merged); with none, those
naming the most specific of its family (`names`: 'beamcrawl' for 'beamcrawl-news', as a
Googlebot-News falls back to a googlebot group); with none, every global group; with no
global group nothing is disallowed. Within the groups that apply the longest matching rule
wins, Allow beats Disallow on equal length, and '*' / '$' wildcards and percent-encoding are
protego's. /robots.txt itself is always allowed. `benchmarks/robots_conformance.py` measures
these decisions against Google's and protego's test suites.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from protego import Protego

PARSED = "parsed"
ALLOW_ALL = "allow_all"
DISALLOW_ALL = "disallow_all"
ROBOTS_STATES = (PARSED, ALLOW_ALL, DISALLOW_ALL)

ROBOTS_MAX_BYTES = 500 * 1024       # RFC 9309 2.5: parse at least 500 KiB
ROBOTS_MAX_REDIRECTS = 5            # RFC 9309 2.3.1.2
ROBOTS_MAX_LINE = 2083 * 8 - 1      # bytes of a line read (Google's parser: 8 maximal URLs)

# A product token's characters (RFC 9309 2.2.1 allows letters, '-' and '_'; digits and
# letters beyond ASCII are read too: 'MJ12bot', 'Львів-bot'); '*' inside a name is dropped.
_TOKEN_RE = re.compile(r"[\w-]+")
_COMPATIBLE_RE = re.compile(r"^mozilla/\S*\s*\(compatible;\s*([\w-]+)", re.I)

USER_AGENT = "user-agent"
_FIELDS = {
    "user-agent": USER_AGENT, "useragent": USER_AGENT, "user agent": USER_AGENT,
    "allow": "allow",
    "disallow": "disallow", "dissallow": "disallow", "dissalow": "disallow",
    "disalow": "disallow", "diasllow": "disallow", "disallaw": "disallow",
    "sitemap": "sitemap", "sitemaps": "sitemap", "site-map": "sitemap",
    "crawl-delay": "crawl-delay", "crawl delay": "crawl-delay",
    "request-rate": "request-rate", "request rate": "request-rate",
}
_OUTSIDE_GROUPS = ("sitemap",)      # fields that neither belong to a group nor end one


def product_token(user_agent: str) -> str:
    """The robots.txt name of a crawler sending `user_agent`, lower-case: the header's first
    product token ('beamcrawl/0.1 (+https://...)' -> 'beamcrawl'), or the bot a
    'Mozilla/5.0 (compatible; NAME/1.0; ...)' header names. ValueError if there is none."""
    token = agent_token(user_agent)
    if not token:
        raise ValueError(f"user agent {user_agent!r} does not start with a product token")
    return token


def agent_token(agent: str) -> str:
    """`product_token`, or '' when `agent` has none (then only global groups apply)."""
    text = str(agent or "").strip().replace("*", "")
    m = _COMPATIBLE_RE.match(text) or _TOKEN_RE.match(text)
    return m.group(1 if m.re is _COMPATIBLE_RE else 0).lower() if m else ""


@dataclass
class Group:
    """One group of a robots.txt: the tokens its User-agent lines name (`everyone`: it
    has a '*' line) and its other lines as (field, value)."""
    tokens: set = field(default_factory=set)
    everyone: bool = False
    lines: list = field(default_factory=list)


def names(name: str, token: str) -> bool:
    """Does a group naming `name` name the crawler whose token is `token`? When it is the
    token, or the token's family: the token starts with it and goes on with no letter
    ('foobot' names 'foobot-news' and 'foobot2', as Googlebot-News falls back to a googlebot
    group; 'beam' does not name 'beamcrawl')."""
    return bool(token) and (token == name or (token.startswith(name) and not token[len(name)].isalpha()))


def _lines(text: str):
    """The lines of `text` (CR, LF or CRLF), each cut at ROBOTS_MAX_LINE bytes, without
    comments and surrounding blanks; empty lines left out."""
    for line in re.split(r"\r\n|\r|\n", text):
        if len(line) > ROBOTS_MAX_LINE // 4 and len(line.encode("utf-8", "surrogatepass")) > ROBOTS_MAX_LINE:
            line = line.encode("utf-8", "surrogatepass")[:ROBOTS_MAX_LINE].decode("utf-8", "ignore")
        line = line.split("#", 1)[0].strip()
        if line:
            yield line


def _directive(line: str) -> tuple[str, str] | None:
    """(field, value) of a line, the field lower-case and canonical when it is a known
    one (or a misspelling of one); None for a line that is no directive."""
    name, colon, value = line.partition(":")
    key = " ".join(name.lower().split())
    if colon and (key in _FIELDS or not value or value[0].isspace()):
        return _FIELDS.get(key, key), value.strip()
    words = line.split()
    for n in (1, 2):   # "Disallow /x", "User agent foo", "Sitemap https://..."
        key = " ".join(words[:n]).lower()
        if key in _FIELDS:
            return _FIELDS[key], " ".join(words[n:])
    return (key, value.strip()) if colon else None


def parse_groups(text: str) -> tuple[list[Group], list[str]]:
    """(the groups of a robots.txt, its sitemaps)."""
    groups, sitemaps = [], []
    current, last_field = None, None
    for line in _lines(text):
        parsed = _directive(line)
        if parsed is None:
            continue
        name, value = parsed
        if name in _OUTSIDE_GROUPS:
            if value:
                sitemaps.append(value)
            continue
        if name == USER_AGENT:
            if current is None or last_field != USER_AGENT:
                current = Group()
                groups.append(current)
            if value == "*" or value.startswith(("* ", "*\t")):
                current.everyone = True
            elif token := agent_token(value):
                current.tokens.add(token)
        elif current is not None:
            current.lines.append((name, value))
        last_field = name
    return groups, sitemaps


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
        self._groups, self._sitemaps = parse_groups(self.body) if state == PARSED else ([], [])
        self._rules: dict[str, Protego | None] = {}

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

    def rules_for(self, token: str) -> Protego | None:
        """The rules that apply to product token `token` (lower-case; '' = none: the global
        groups), as one protego group; None when no group applies."""
        if token not in self._rules:
            name = max((n for g in self._groups for n in g.tokens if names(n, token)),
                       key=len, default=None)
            groups = [g for g in self._groups if name in g.tokens] if name else \
                [g for g in self._groups if g.everyone]
            lines = "".join(f"{name}: {value}\n" for g in groups for name, value in g.lines
                            if value and "\n" not in value)
            self._rules[token] = Protego.parse("user-agent: *\n" + lines) if groups else None
        return self._rules[token]

    def allowed(self, url: str, user_agent: str) -> bool:
        """May a crawler sending User-Agent `user_agent` fetch `url`?"""
        if self.state == ALLOW_ALL:
            return True
        if self.state == DISALLOW_ALL:
            return False
        if _ROBOTS_PATH in url and _path_of(url) == _ROBOTS_PATH:   # (urlsplit only when it may be)
            return True
        rules = self.rules_for(agent_token(user_agent))
        return True if rules is None else bool(rules.can_fetch(url, "*"))

    def crawl_delay(self, user_agent: str) -> float | None:
        """Crawl-delay of the matching group, or the interval a Request-rate implies
        (whichever is longer); None when neither is given."""
        if self.state != PARSED:
            return None
        rules = self.rules_for(agent_token(user_agent))
        if rules is None:
            return None
        delay = rules.crawl_delay("*")
        rate = rules.request_rate("*")
        if rate is not None and rate.requests:
            implied = rate.seconds / rate.requests
            delay = implied if delay is None else max(delay, implied)
        return delay

    @property
    def sitemaps(self) -> list[str]:
        return list(self._sitemaps)


_ROBOTS_PATH = "/robots.txt"


def _path_of(url: str) -> str:
    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return ""
