"""Politeness units: which hosts of a round share one delay and one connection budget (pure).

--politeness_key picks the unit a host's fetch belongs to:
- `host`: the host name (with its port) alone;
- `ip` (the default): the address the host name resolves to, so host names on one server
  (shared hosting: 200 blogs on one machine) are fetched as one unit, as Heritrix and Nutch
  can queue by IP; a host whose name does not resolve is a unit of its own (its fetch then
  reports `dns`);
- `domain`: the registrable domain (the Public Suffix List's, private suffixes included:
  a.example.co.uk and b.example.co.uk share one; two blogspot.com blogs do not).

The round groups its hosts by unit before the fetch (`step.Fetch`: GroupByKey on the unit),
so one `process()` call owns a unit and no coordination between fetch processes or workers
is needed; `unitfetch.fetch_unit` then fetches a unit's hosts over one budget. For `ip` the
address must be known before the grouping: the hosts table's answer while it lasts
(`address_expires`), else a lookup here, bounded by --deadline, whose answer goes into the
host's state row so the fetch uses it (and the hosts table keeps it) without a second
lookup.
"""
from __future__ import annotations

import time

from transforms.fetch.resolver import NEGATIVE_TTL, ResolveError, ip_literal

HOST, IP, DOMAIN = "host", "ip", "domain"


def split_host(host: str) -> tuple[str, int | None]:
    """A hosts-table key ('name', 'name:port', '[v6]:port') -> (name, port or None)."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    name, sep, port = host.rpartition(":")
    if sep and port.isdigit() and ":" not in name:
        return name, int(port)
    return host, None


class UnitKeys:
    """The unit of each host of a round (`key`), and the lookups the ip key needs first
    (`needs_lookup`, `looked_up`). One per DoFn instance: holds the resolver and the
    Public Suffix List (built in `setup`, not pickled)."""

    def __init__(self, config, clock=time.time):
        self.config, self.clock = config, clock
        self.policy = config.politeness_key
        self._resolver = self._psl = None

    def setup(self):
        if self.policy == IP:
            self._resolver = self.config.resolver()
        elif self.policy == DOMAIN:
            from publicsuffixlist import PublicSuffixList   # its list ships in the wheel
            self._psl = PublicSuffixList()
        return self

    def _fixed(self, host):
        name, port = split_host(host)
        if port is not None:
            return self._resolver.fixed(name, port)
        return self._resolver.fixed(name, 80) or self._resolver.fixed(name, 443)

    def _kept(self, state_row):
        """(address, True) of a state row whose answer has not expired, else (None, False);
        an unexpired failure is (None, True)."""
        row = state_row or {}
        expires = row.get("address_expires")
        if expires is not None and expires > self.clock():
            return row.get("address"), True
        return None, False

    def needs_lookup(self, host: str, state_row: dict | None) -> bool:
        return (self.policy == IP and self._fixed(host) is None
                and not self._kept(state_row)[1])

    def key(self, host: str, state_row: dict | None) -> str:
        """The unit of `host` (its lookup, if it needed one, already in `state_row`)."""
        if self.policy == IP:
            address = self._fixed(host) or self._kept(state_row)[0]
            return f"ip:{address}" if address else f"host:{host}"
        if self.policy == DOMAIN:
            name = split_host(host)[0].lower().rstrip(".")
            if ip_literal(name) is not None:       # an address has no domain: it is its server
                return f"ip:{ip_literal(name)}"
            return f"domain:{self._psl.privatesuffix(name) or name}"
        return f"host:{host}"

    def looked_up(self, host: str, state_row: dict | None) -> dict:
        """`state_row` (a new dict; {'host': host} for a new host) with the answer of a DNS
        lookup of `host`, bounded by --deadline, counted in its dns_lookups: the fetch uses
        it and the hosts table keeps it."""
        name = split_host(host)[0]
        row = dict(state_row or {"host": host})
        now = self.clock()
        try:
            address = self._resolver.resolve(name, 80, self.config.deadline)
            answer = self._resolver.answer(name)
            row["address"] = address
            row["address_expires"] = answer.expires if answer is not None else None
        except ResolveError:
            row["address_expires"] = now + NEGATIVE_TTL   # the fetch reports 'dns', no second lookup
            row["address"] = None
        row["dns_lookups"] = int(row.get("dns_lookups") or 0) + 1
        return row
