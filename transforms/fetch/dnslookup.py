"""DNS lookups that say how long their answer lasts (pure: no Beam).

`DnsLookup(servers)(host, timeout) -> (address, ttl)`: an IPv4 address (else IPv6) of `host`
and the seconds its DNS answer may be kept (the record's TTL), within `timeout` seconds
whatever the name servers do: a server that never answers costs the timeout, not a fetch
slot held past the request's deadline. Raises `resolver.ResolveError`.

- `servers` given (`--dns_servers ADDR[:PORT],...`): those name servers are asked (dnspython's
  stub resolver, UDP with TCP on truncation, the servers in turn).
- none given: names in the system's hosts file (/etc/hosts) are answered from it (they do
  not expire: reused for `--dns_max_ttl`); others are asked of the system's name servers
  (/etc/resolv.conf). A system without one there is asked through its own resolver
  (getaddrinfo, in a thread given up after `timeout`), whose answers carry no TTL:
  `SYSTEM_TTL`.

Why dnspython: getaddrinfo gives no TTL and cannot be bounded in time; dnspython is the
maintained DNS library of Python and a hand-written DNS client would be worse.
"""
from __future__ import annotations

import ipaddress
import socket
import threading

import dns.exception
import dns.inet
import dns.resolver

from transforms.fetch.resolver import SYSTEM_TTL, ResolveError

STATIC_TTL = float("inf")   # a hosts-file entry (bounded by --dns_max_ttl)
HOSTS_FILE = "/etc/hosts"


def parse_server(entry: str) -> tuple[str, int]:
    """'ADDR', 'ADDR:PORT' or '[V6]:PORT' -> (address, port); ValueError names the entry."""
    text = entry.strip()
    host, port = text, 53
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        if not closed:
            port = -1
        elif rest:
            port = int(rest.lstrip(":")) if rest.startswith(":") and rest[1:].isdigit() else -1
    elif text.count(":") == 1:
        host, _, p = text.partition(":")
        port = int(p) if p.isdigit() else -1
    try:
        host = str(ipaddress.ip_address(host))
    except ValueError:
        raise ValueError(f"bad --dns_servers entry {entry!r}: not an IP address") from None
    if not 0 < port < 65536:
        raise ValueError(f"bad --dns_servers entry {entry!r}: expected ADDR or ADDR:PORT")
    return host, port


def read_hosts_file(path: str = HOSTS_FILE) -> dict[str, str]:
    """name -> the first address the hosts file gives it (empty if there is no file)."""
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return out
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        try:
            addr = str(ipaddress.ip_address(fields[0].split("%", 1)[0]))
        except ValueError:
            continue
        for name in fields[1:]:
            out.setdefault(name.lower().rstrip("."), addr)
    return out


class DnsLookup:
    """A worker's DNS lookups (`__call__`); thread-safe; picklable (built again on load)."""

    def __init__(self, servers: tuple[str, ...] = ()):
        self.servers = tuple(servers)
        for s in self.servers:
            parse_server(s)            # a bad entry fails here, before any round runs
        self._setup()

    def __getstate__(self):
        return {"servers": self.servers}

    def __setstate__(self, state):
        self.__init__(state["servers"])

    def _setup(self):
        self._hosts = {} if self.servers else read_hosts_file()
        try:
            resolver = dns.resolver.Resolver(configure=not self.servers)
        except dns.resolver.NoResolverConfiguration:
            resolver = None
        if resolver is not None and self.servers:
            pairs = [parse_server(s) for s in self.servers]
            resolver.nameservers = [a for a, _ in pairs]
            resolver.nameserver_ports = {a: p for a, p in pairs}
        if resolver is not None:
            resolver.cache = None      # the crawl keeps answers itself (resolver.Resolver)
            resolver.retry_servfail = False
        self._resolver = resolver

    def __call__(self, host: str, timeout: float) -> tuple[str, float]:
        name = host.lower().rstrip(".")
        if name in self._hosts:
            return self._hosts[name], STATIC_TTL
        if self._resolver is None:
            return _system_lookup(name, timeout), SYSTEM_TTL
        failure = None
        for rdtype in ("A", "AAAA"):
            try:
                answer = self._resolver.resolve(name + ".", rdtype, search=False,
                                                lifetime=max(0.001, timeout))
            except (dns.resolver.NoAnswer, dns.resolver.NXDOMAIN) as e:
                failure = e
                if isinstance(e, dns.resolver.NXDOMAIN):
                    break
                continue
            except (dns.exception.DNSException, OSError, ValueError) as e:
                raise ResolveError(f"{host}: {type(e).__name__}: {e}") from None
            for rr in answer:
                return rr.address, float(answer.rrset.ttl)
        raise ResolveError(f"{host}: {type(failure).__name__ if failure else 'no address'}")


def _system_lookup(host: str, timeout: float) -> str:
    """getaddrinfo's first TCP address for `host`, given up after `timeout` seconds (the
    lookup's thread is left to end on its own)."""
    box: list = []

    def run():
        try:
            box.append(socket.getaddrinfo(host, 80, 0, socket.SOCK_STREAM))
        except (OSError, UnicodeError) as e:
            box.append(e)

    t = threading.Thread(target=run, name="dns-lookup", daemon=True)
    t.start()
    t.join(timeout)
    if not box:
        raise ResolveError(f"{host}: no answer within {timeout:.3g} s")
    if isinstance(box[0], BaseException):
        raise ResolveError(f"{host}: {box[0]}")
    for family, _type, _proto, _canon, sockaddr in box[0]:
        if family in (socket.AF_INET, socket.AF_INET6) and dns.inet.is_address(sockaddr[0].split("%")[0]):
            return sockaddr[0].split("%", 1)[0]
    raise ResolveError(f"{host}: no IPv4/IPv6 address")
