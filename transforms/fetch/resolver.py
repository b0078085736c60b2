"""How host names become the addresses the crawler dials, and how long an answer is kept
(pure: no Beam).

`Resolver.resolve(host, port, timeout)` answers, in this order:
1. the overrides ({(host, port): address}: `--resolve`, `--resolve_file`);
2. an IP literal;
3. an answer kept: one the hosts table brought from an earlier round (`remember`, while it
   has not expired) or one looked up by this object;
4. a DNS lookup (`lookup(host, timeout) -> (address, ttl)`: the crawler's is
   `dnslookup.DnsLookup`, bounded by `timeout`, the request's deadline; without one,
   getaddrinfo, unbounded, for tests and tools).
An answer looked up is kept for its TTL, at most `max_ttl` seconds, and for this object's
life at least (one round's fetch: a host is looked up at most once a round however short
its TTL, and again only after `forget`, which the fetcher calls when a connection to the
address failed). A failed lookup is kept for `NEGATIVE_TTL` seconds, so a host whose DNS is
down costs one lookup a round, not one a URL. Thread-safe: a worker's fetchers share one.
"""
from __future__ import annotations

import ipaddress
import socket
import threading
import time
from dataclasses import dataclass

NEGATIVE_TTL = 60.0            # a failed lookup is not repeated for this long
SYSTEM_TTL = 300.0             # an answer of the system resolver (no TTL given) is kept this long
DEFAULT_MAX_TTL = 6 * 3600.0   # --dns_max_ttl


class ResolveError(Exception):
    """A host name could not be resolved (the fetcher reports reason 'dns')."""


@dataclass(frozen=True)
class Answer:
    """A host name's address (None: the lookup failed, `error` says why), kept until
    `expires` (epoch seconds); `looked_up`: by a DNS lookup of this object's."""
    address: str | None
    expires: float
    looked_up: bool = False
    error: str | None = None


class Resolver:
    """host name -> one address (see the module docstring)."""

    def __init__(self, overrides: dict[tuple[str, int], str] | None = None, lookup=None,
                 max_ttl: float = DEFAULT_MAX_TTL, getaddrinfo=None, clock=time.time):
        self._overrides = {(h.lower().rstrip("."), int(p)): a for (h, p), a in (overrides or {}).items()}
        if lookup is None:   # (the crawler's: FetchConfig.resolver, with dnslookup.DnsLookup)
            lookup = _GetAddrInfo(getaddrinfo or socket.getaddrinfo, SYSTEM_TTL)
        self._lookup = lookup
        self.max_ttl = float(max_ttl)
        self.clock = clock
        self._answers: dict[str, Answer] = {}
        self._lock = threading.Lock()
        self.lookups = 0               # DNS lookups made (for tests and the progress figures)

    @staticmethod
    def _name(host: str) -> str:
        return host.lower().strip("[]").rstrip(".")

    def fixed(self, host: str, port: int) -> str | None:
        """The address an override or an IP literal gives (no DNS), else None."""
        name = self._name(host)
        return self._overrides.get((name, int(port))) or ip_literal(name)

    def remember(self, host: str, address: str | None, expires: float | None,
                 error: str | None = None) -> None:
        """An answer found before (the hosts table's, or the round's resolve step's; address
        None: that lookup failed, `error`): used instead of a lookup until it expires."""
        if expires is not None and expires > self.clock() and (address or error):
            with self._lock:
                self._answers.setdefault(self._name(host), Answer(address, float(expires), False, error))

    def forget(self, host: str) -> None:
        """A connection to the host's address failed: look it up again next time."""
        with self._lock:
            self._answers.pop(self._name(host), None)

    def answer(self, host: str) -> Answer | None:
        """The answer kept for `host`, if any."""
        with self._lock:
            return self._answers.get(self._name(host))

    def resolve(self, host: str, port: int, timeout: float | None = None) -> str:
        """The address to dial for `host:port`; ResolveError when there is none."""
        fixed = self.fixed(host, port)
        if fixed is not None:
            return fixed
        name = self._name(host)
        with self._lock:
            kept = self._answers.get(name)
        if kept is None or (not kept.looked_up and kept.expires <= self.clock()):
            kept = self._look_up(name, timeout)
        if kept.address is None:
            raise ResolveError(kept.error or f"{host}: no address")
        return kept.address

    def _look_up(self, name: str, timeout: float | None) -> Answer:
        now = self.clock()
        try:
            address, ttl = self._lookup(name, 30.0 if timeout is None else max(0.001, timeout))
            answer = Answer(address, now + max(0.0, min(float(ttl), self.max_ttl)), True)
        except ResolveError as e:
            answer = Answer(None, now + NEGATIVE_TTL, True, str(e))
        with self._lock:
            self.lookups += 1
            kept = self._answers.get(name)
            if kept is not None and kept.looked_up:   # another fetcher looked it up meanwhile
                return kept
            self._answers[name] = answer
        return answer


class _GetAddrInfo:
    """A lookup through a getaddrinfo function (tests), answers kept `ttl` seconds."""

    def __init__(self, getaddrinfo, ttl):
        self._gai, self._ttl = getaddrinfo, ttl

    def __call__(self, host, timeout):
        try:
            infos = self._gai(host, 80, 0, socket.SOCK_STREAM)
        except (OSError, UnicodeError) as e:
            raise ResolveError(f"{host}: {e}") from None
        for family, _type, _proto, _canon, sockaddr in infos:
            if family in (socket.AF_INET, socket.AF_INET6):
                return sockaddr[0].split("%", 1)[0], self._ttl
        raise ResolveError(f"{host}: no IPv4/IPv6 address")


def ip_literal(host: str) -> str | None:
    """The address a host name that is an IP literal stands for, else None."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None
