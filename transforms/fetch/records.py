"""What goes into and comes out of a fetch: settings, requests, results, host state (pure).

Defaults (`FetchConfig`), in line with Nutch / StormCrawler / Heritrix:

| setting                   | default      | meaning                                                         |
| ------------------------- | ------------ | --------------------------------------------------------------- |
| user_agent                | beamcrawl/0.1 (+https://github.com/beamcrawl/beamcrawl) | sent on every request; its product token ('beamcrawl') selects the robots.txt group |
| delay_per_host            | 1.0 s        | minimum gap between two requests to a host, measured from the END of the previous response (conservative: never shorter than a gap measured from its start) |
| connect_timeout           | 10 s         | TCP connect (+ TLS handshake)                                   |
| read_timeout              | 30 s         | longest silence while waiting for bytes                         |
| deadline                  | 60 s         | whole request, connect to last body byte; a server trickling 1 byte/s cannot hold a worker longer (a watchdog shuts the socket down) |
| max_body                  | 10 MiB       | decoded body cap; longer bodies are cut and flagged `truncated` (gzip/deflate/br inflated incrementally, so a bomb inflates at most this much) |
| max_redirects             | 5            | hops the pipeline follows (it counts them: a 3xx is returned as REDIRECT, never followed here); robots.txt follows up to 5 hops itself |
| max_crawl_delay           | 30 s         | a robots Crawl-delay above this defers the host (all URLs TRANSIENT 'crawl_delay_too_long') |
| robots_ttl                | 86400 s      | robots.txt cached in the host state this long                   |
| retry_after_cap           | 120 s        | 429/503 Retry-After up to this: pause the host, retry the URL once, and keep at least that gap (at most max_crawl_delay) between the host's requests for the rest of the round; longer: the host's remaining URLs wait for a later round |
| max_consecutive_failures  | 5            | this many consecutive failed requests in a round park the host (remaining URLs TRANSIENT 'host_parked', no requests) |
| obey_robots               | True         | fetch and obey robots.txt                                       |
| allow_loopback            | False        | let 127.0.0.0/8 and ::1 through the address guard (tests, simulated web) |
| deny_addresses            | ()           | extra CIDRs refused, on top of the built-in private/reserved ranges (even loopback) |
| resolve                   | ()           | (host, port, address) overrides consulted before DNS (`--resolve`, `--resolve_file`) |
| ca_bundle                 | None         | CA bundle file for TLS verification (None: certifi's bundle)    |
| host_budget               | None         | seconds one host may take in a round; after it no new request starts (remaining URLs TRANSIENT 'host_budget'); None = no limit |
| conns_per_host            | 1            | connections to one host at once, each keeping delay_per_host between its requests; a robots Crawl-delay or a Retry-After forces 1 (`slots.py`) |
| keep_http                 | False        | results carry the exchange as sent and received (`exchange.http_exchange`) for the WARC |
| post_hosts                | ()           | hosts (host or host:port) a POST may be sent to (`post.py`); a POST elsewhere ends FAILED 'post_not_allowed' |
| dns_servers               | ()           | name servers asked (ADDR[:PORT]); () = the system's (`dnslookup.py`) |
| dns_max_ttl               | 21600 s      | a DNS answer is kept across rounds (hosts table) for its TTL, at most this long (`resolver.py`) |
| politeness_key            | ip           | what shares one delay and one connection budget: host, ip (hosts on one address) or domain (hosts of one registrable domain) (`politeness.py`) |
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from schemas import tables
from transforms.fetch import robots as robotsmod
from transforms.fetch.dnslookup import DnsLookup
from transforms.fetch.netguard import AddressGuard
from transforms.fetch.resolver import DEFAULT_MAX_TTL, Resolver
from transforms.fetch.renderpolicy import RenderConfig

TRANSIENT = "transient"
POLITENESS_KEYS = ("host", "ip", "domain")
DEFAULT_USER_AGENT = "beamcrawl/0.1 (+https://github.com/beamcrawl/beamcrawl)"
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
READ_CHUNK = 64 * 1024
DRAIN_LIMIT = 64 * 1024          # error/redirect bodies read (and dropped) to keep the connection


@dataclass(frozen=True)
class FetchConfig:
    """Fetch settings; see the module docstring for the table of defaults. Picklable."""
    user_agent: str = DEFAULT_USER_AGENT
    delay_per_host: float = 1.0
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    deadline: float = 60.0
    max_body: int = 10 * 1024 * 1024
    max_redirects: int = 5
    max_crawl_delay: float = 30.0
    robots_ttl: float = 86400.0
    retry_after_cap: float = 120.0
    max_consecutive_failures: int = 5
    obey_robots: bool = True
    allow_loopback: bool = False
    deny_addresses: tuple[str, ...] = ()
    resolve: tuple[tuple[str, int, str], ...] = ()
    ca_bundle: str | None = None
    host_budget: float | None = None
    keep_http: bool = False      # keep each exchange as sent/received for the WARC (exchange.py)
    conns_per_host: int = 1      # connection slots per host (slots.py); Crawl-delay forces 1
    render: RenderConfig = RenderConfig()   # JavaScript rendering (render.py, renderpolicy.py)
    post_hosts: tuple[str, ...] = ()   # --deep_web_post_hosts: who may get a POST (post.py)
    dns_servers: tuple[str, ...] = ()  # () = the system's name servers (dnslookup.py)
    dns_max_ttl: float = DEFAULT_MAX_TTL
    politeness_key: str = "ip"         # host | ip | domain (politeness.py)

    def __post_init__(self):
        robotsmod.product_token(self.user_agent)          # fail early on a bad UA
        AddressGuard(self.allow_loopback, tuple(self.deny_addresses))   # and bad CIDRs
        DnsLookup(tuple(self.dns_servers))                # and bad name servers
        if self.politeness_key not in POLITENESS_KEYS:
            raise ValueError(f"politeness key {self.politeness_key!r}: one of {', '.join(POLITENESS_KEYS)}")

    def guard(self) -> AddressGuard:
        return AddressGuard(self.allow_loopback, tuple(self.deny_addresses))

    def resolve_map(self) -> dict[tuple[str, int], str]:
        return {(h.lower(), int(p)): a for h, p, a in self.resolve}

    def resolver(self) -> Resolver:
        """A new resolver of these settings (a worker's fetchers share one)."""
        return Resolver(self.resolve_map(), DnsLookup(tuple(self.dns_servers)), self.dns_max_ttl)


@dataclass
class FetchRequest:
    url: str
    fp: int
    etag: str | None = None
    last_modified: str | None = None
    method: str | None = None        # "POST" for a deep-web form submission (post.py); None = GET
    body: str | None = None          # its form-encoded body


@dataclass
class FetchResult:
    """One URL's fetch.

    Outcomes are the constants of `schemas.tables`, plus TRANSIENT ('retry in a later
    round'); `reason` says why. Reasons produced:

    - transient: 'dns', 'timeout_connect', 'timeout_read', 'deadline', 'reset' (connection
      reset or closed mid-response; partial body discarded), 'connect_refused',
      'connect_error', 'tls', 'protocol_error', 'http_5xx' codes as 'http_503' etc.,
      'http_408', 'http_429', 'retry_after', 'host_paused', 'host_parked',
      'crawl_delay_too_long', 'host_budget', 'robots_5xx', 'robots_429', 'robots_<network reason>',
      'robots_forbidden_address', 'internal_error: <exception>'
    - HTTP_ERROR: 'http_404', 'http_410', ... , 'redirect_without_location', 'bad_url'
    - FORBIDDEN_ADDRESS: the guard's reason ('private', 'loopback', 'cloud_metadata', ...)
    - ROBOTS_DENIED: 'robots_txt'
    - OK may carry 'body_cap' (truncated), 'decode_error' (truncated at the corrupt point)
      or 'unsupported_encoding:<token>' (raw body kept)
    """
    url: str
    fp: int
    fetch_time: float
    elapsed_ms: float
    outcome: str
    reason: str | None = None
    http_status: int | None = None
    content_type: str | None = None         # media type, lower-case, no parameters
    content_type_header: str | None = None  # raw Content-Type (charset lives here)
    body: bytes = b""
    truncated: bool = False
    redirect_to: str | None = None          # absolute Location of a 3xx
    etag: str | None = None
    last_modified: str | None = None
    retry_after: float | None = None        # seconds the server asked us to wait
    x_robots_tag: str | None = None
    http: dict | None = None                # the exchange for the WARC (keep_http only)
    rendered: bool | None = None            # body is the DOM headless Chromium rendered (render.py)
    render_links: int | None = None         # links the rendered DOM adds over the static HTML


_HOST_FIELDS = [f.name for f in tables.HOSTS]


@dataclass
class HostState:
    """One row of the HOSTS table (see schemas.tables.HOSTS)."""
    host: str
    robots_status: int | None = None
    robots_state: str | None = None
    robots_body: str | None = None
    robots_fetched_at: float | None = None
    robots_unreachable_since: float | None = None   # first failed robots.txt fetch since it was reached
    crawl_delay: float | None = None        # as declared by robots.txt (may exceed the cap)
    sitemaps: list[str] = field(default_factory=list)
    address: str | None = None
    address_expires: float | None = None    # `address` is reused until then (DNS TTL, bounded)
    dns_lookups: int = 0                    # cumulative
    fetches: int = 0
    errors: int = 0
    consecutive_failures: int = 0           # cumulative across rounds, reset by a success
    last_error: str | None = None
    last_fetch_time: float | None = None    # end of the last response
    render_helped: bool | None = None       # --render auto: rendering found more on this host

    def to_row(self) -> dict:
        d = dataclasses.asdict(self)
        d["sitemaps"] = list(self.sitemaps or [])
        return {k: d[k] for k in _HOST_FIELDS}

    @classmethod
    def from_row(cls, row: dict | None, host: str) -> "HostState":
        if not row:
            return cls(host=host)
        kw = {k: row.get(k) for k in _HOST_FIELDS if k in row}
        kw["host"] = row.get("host") or host
        for k in ("fetches", "errors", "consecutive_failures", "dns_lookups"):
            kw[k] = int(kw.get(k) or 0)
        kw["sitemaps"] = list(kw.get("sitemaps") or [])
        return cls(**kw)

    def robots_policy(self) -> robotsmod.RobotsPolicy | None:
        if self.robots_state not in robotsmod.ROBOTS_STATES:
            return None
        return robotsmod.RobotsPolicy(self.robots_state, self.robots_body)
