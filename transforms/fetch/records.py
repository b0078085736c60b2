"""What goes into and comes out of a fetch: settings, requests, results, host state (pure)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from schemas import tables
from transforms.fetch import robots as robotsmod
from transforms.fetch.netguard import AddressGuard

TRANSIENT = "transient"
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

    def __post_init__(self):
        robotsmod.product_token(self.user_agent)          # fail early on a bad UA
        AddressGuard(self.allow_loopback, tuple(self.deny_addresses))   # and bad CIDRs

    def guard(self) -> AddressGuard:
        return AddressGuard(self.allow_loopback, tuple(self.deny_addresses))

    def resolve_map(self) -> dict[tuple[str, int], str]:
        return {(h.lower(), int(p)): a for h, p, a in self.resolve}


@dataclass
class FetchRequest:
    url: str
    fp: int
    etag: str | None = None
    last_modified: str | None = None


@dataclass
class FetchResult:
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


_HOST_FIELDS = [f.name for f in tables.HOSTS]


@dataclass
class HostState:
    """One row of the HOSTS table (see schemas.tables.HOSTS)."""
    host: str
    robots_status: int | None = None
    robots_state: str | None = None
    robots_body: str | None = None
    robots_fetched_at: float | None = None
    crawl_delay: float | None = None        # as declared by robots.txt (may exceed the cap)
    sitemaps: list[str] = field(default_factory=list)
    address: str | None = None
    fetches: int = 0
    errors: int = 0
    consecutive_failures: int = 0           # cumulative across rounds, reset by a success
    last_error: str | None = None
    last_fetch_time: float | None = None    # end of the last response

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
        for k in ("fetches", "errors", "consecutive_failures"):
            kw[k] = int(kw.get(k) or 0)
        kw["sitemaps"] = list(kw.get("sitemaps") or [])
        return cls(**kw)

    def robots_policy(self) -> robotsmod.RobotsPolicy | None:
        if self.robots_state not in robotsmod.ROBOTS_STATES:
            return None
        return robotsmod.RobotsPolicy(self.robots_state, self.robots_body)
