"""Which addresses the crawler may connect to, and how host names become addresses.

A crawler follows links written by strangers, so a page can point it at
`http://169.254.169.254/` (cloud metadata), `http://10.0.0.1/admin` or
`http://localhost:8080/`. The fetcher therefore resolves every host name itself, asks
`AddressGuard.check` about the address, and dials exactly that address (see
`hostfetcher` and `connection`), so a DNS answer cannot change between the check and the connect.

- `parse_resolve_entries` / `read_resolve_file`: curl-style `HOST:PORT:ADDR` overrides
  (`--resolve`, `--resolve_file`), consulted before DNS. Tests and the simulated web use
  them to point invented host names at loopback servers.
- `AddressGuard`: refuses loopback, private, CGNAT, link-local, multicast, cloud metadata,
  unspecified and reserved addresses by default. `allow_loopback=True` lets 127.0.0.0/8 and
  ::1 through (and nothing else); `deny_cidrs` refuse more on top, even loopback.
- `Resolver` (resolver.py, re-exported here): overrides, IP literals, answers kept across
  rounds in the hosts table for their DNS TTL, DNS lookups bounded by the deadline.

`AddressGuard.check` is asked about the address a request is sent to (`hostfetcher._dial`)
and again about every address libcurl opens a socket to (`curlsender`), so nothing the
resolver, a cached answer or libcurl itself comes up with is dialled unchecked.

Pure Python, no Beam import at module level.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterable

from transforms.fetch.resolver import ResolveError, Resolver  # noqa: F401 (re-exported)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class ForbiddenAddressError(Exception):
    """The resolved address is refused by the AddressGuard; `.reason` says why."""

    def __init__(self, host: str, addr: str, reason: str):
        super().__init__(f"{host} resolves to {addr}: refused ({reason})")
        self.host = host
        self.addr = addr
        self.reason = reason


# --------------------------------------------------------------------------- overrides

def _parse_addr(text: str, entry: str) -> str:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValueError(f"bad --resolve entry {entry!r}: {text!r} is not an IP address") from None


def parse_resolve_entry(entry: str) -> tuple[str, int, str]:
    """One curl-style `HOST:PORT:ADDR` entry -> (host lower-case, port, address).

    IPv6 addresses (and IPv6 literal hosts) go in brackets: `example.com:443:[::1]`.
    Like curl, ADDR may be a comma-separated list; the first address is used.
    """
    raw = entry
    entry = entry.strip()
    if not entry:
        raise ValueError(f"bad --resolve entry {raw!r}: empty")
    if entry.startswith("["):
        end = entry.find("]")
        if end < 0:
            raise ValueError(f"bad --resolve entry {raw!r}: unclosed '[' in host")
        host, rest = entry[1:end], entry[end + 1:]
        if not rest.startswith(":"):
            raise ValueError(f"bad --resolve entry {raw!r}: expected HOST:PORT:ADDR")
        rest = rest[1:]
    else:
        host, sep, rest = entry.partition(":")
        if not sep:
            raise ValueError(f"bad --resolve entry {raw!r}: expected HOST:PORT:ADDR")
    port_text, sep, addr_text = rest.partition(":")
    if not sep or not host or not addr_text:
        raise ValueError(f"bad --resolve entry {raw!r}: expected HOST:PORT:ADDR")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"bad --resolve entry {raw!r}: port {port_text!r} is not a number") from None
    if not 0 < port < 65536:
        raise ValueError(f"bad --resolve entry {raw!r}: port {port} out of range")
    first = addr_text.split(",")[0]
    return host.lower().rstrip("."), port, _parse_addr(first, raw)


def parse_resolve_entries(entries: Iterable[str]) -> dict[tuple[str, int], str]:
    """curl `--resolve` entries -> {(host, port): address}. Raises ValueError naming the bad entry."""
    out: dict[tuple[str, int], str] = {}
    for entry in entries:
        host, port, addr = parse_resolve_entry(entry)
        out[(host, port)] = addr
    return out


def parse_resolve_text(text: str) -> dict[tuple[str, int], str]:
    """A resolve file's text: one HOST:PORT:ADDR per line; '#' comments and blank lines ignored."""
    lines = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return parse_resolve_entries(lines)


def read_resolve_file(path: str) -> dict[tuple[str, int], str]:
    """Read a resolve file through Beam's FileSystems, so gs://, s3://, hdfs:// paths work."""
    from apache_beam.io.filesystems import FileSystems  # lazy: keep this module light

    with FileSystems.open(path) as f:
        text = f.read().decode("utf-8")
    return parse_resolve_text(text)


def resolve_tuples(mapping: dict[tuple[str, int], str]) -> tuple[tuple[str, int, str], ...]:
    """{(host, port): addr} -> the picklable tuple form FetchConfig.resolve holds."""
    return tuple(sorted((h, p, a) for (h, p), a in mapping.items()))


# --------------------------------------------------------------------------- the guard

_N = ipaddress.ip_network

# Checked first: a metadata endpoint is refused with its own reason, even where the range
# it sits in (link-local, private, CGNAT, or public like Azure's wireserver) has another.
CLOUD_METADATA = tuple(ipaddress.ip_address(a) for a in (
    "169.254.169.254",   # AWS, GCP, Azure, OpenStack, DigitalOcean, ... instance metadata
    "169.254.170.2",     # AWS ECS task metadata
    "169.254.169.123",   # AWS time sync
    "169.254.169.253",   # AWS VPC DNS
    "fd00:ec2::254",     # AWS IMDS over IPv6
    "fd00:ec2::23",      # AWS DNS over IPv6
    "100.100.100.200",   # Alibaba Cloud metadata
    "192.0.0.192",       # Oracle Cloud metadata
    "168.63.129.16",     # Azure wireserver (a public address!)
))

LOOPBACK = (_N("127.0.0.0/8"), _N("::1/128"))
UNSPECIFIED = (_N("0.0.0.0/8"), _N("::/128"))   # 0.x.x.x reaches localhost on Linux
PRIVATE = (_N("10.0.0.0/8"), _N("172.16.0.0/12"), _N("192.168.0.0/16"),
           _N("100.64.0.0/10"),                  # CGNAT (RFC 6598)
           _N("fc00::/7"),                       # unique local
           _N("fec0::/10"))                      # deprecated site-local
LINK_LOCAL = (_N("169.254.0.0/16"), _N("fe80::/10"))
MULTICAST = (_N("224.0.0.0/4"), _N("ff00::/8"))
RESERVED = (_N("240.0.0.0/4"),                   # includes 255.255.255.255 broadcast
            _N("192.0.0.0/24"), _N("192.0.2.0/24"), _N("198.51.100.0/24"),
            _N("203.0.113.0/24"), _N("198.18.0.0/15"), _N("192.88.99.0/24"),
            _N("2001:db8::/32"), _N("100::/64"), _N("2001::/23"))

NAT64 = _N("64:ff9b::/96")


def _in(addr: IPAddress, nets) -> bool:
    return any(addr.version == n.version and addr in n for n in nets)


def _embedded_v4(addr: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, 6to4, NAT64, compatible)."""
    if addr.version != 6:
        return None
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr in NAT64:
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    # deprecated IPv4-compatible ::a.b.c.d (but not :: and ::1)
    if int(addr) >> 32 == 0 and int(addr) > 1:
        return ipaddress.IPv4Address(int(addr))
    return None


def _classify(addr: IPAddress) -> str | None:
    """Category of a non-public address, or None for a public one."""
    if addr in CLOUD_METADATA:
        return "cloud_metadata"
    for category, networks in (("unspecified", UNSPECIFIED), ("loopback", LOOPBACK),
                               ("link_local", LINK_LOCAL), ("multicast", MULTICAST),
                               ("private", PRIVATE), ("reserved", RESERVED)):
        if _in(addr, networks):
            return category
    return None if addr.is_global else "reserved"


@dataclass(frozen=True)
class AddressGuard:
    """Decides whether the crawler may connect to an address.

    `check(addr)` returns None when allowed, else the reason: 'denied_by_flag',
    'cloud_metadata', 'unspecified', 'loopback', 'link_local', 'multicast', 'private',
    'reserved', or 'bad_address'. IPv6 addresses that embed an IPv4 one (mapped
    ::ffff:a.b.c.d, 6to4, NAT64 64:ff9b::/96) are judged by both.
    """
    allow_loopback: bool = False
    deny_cidrs: tuple[str, ...] = ()

    def __post_init__(self):
        nets = []
        for c in self.deny_cidrs:
            try:
                nets.append(ipaddress.ip_network(c.strip(), strict=False))
            except ValueError:
                raise ValueError(f"bad --deny_addresses entry {c!r}: not an address or CIDR") from None
        object.__setattr__(self, "_deny", tuple(nets))
        object.__setattr__(self, "_verdicts", {})   # addr -> check(addr): a host dials one address

    def check(self, addr: str) -> str | None:
        """The verdict on `addr`, remembered (a host's every URL dials the same address)."""
        try:
            return self._verdicts[addr]
        except KeyError:
            pass
        reason = self._check(addr)
        if len(self._verdicts) >= 4096:
            self._verdicts.clear()
        self._verdicts[addr] = reason
        return reason

    def _check(self, addr: str) -> str | None:
        try:
            ip = ipaddress.ip_address(addr.strip().strip("[]").split("%", 1)[0])
        except ValueError:
            return "bad_address"
        candidates = [ip]
        v4 = _embedded_v4(ip)
        if v4 is not None:
            candidates.append(v4)
        for a in candidates:
            if _in(a, self._deny):
                return "denied_by_flag"
        # an address embedding an IPv4 one is where that IPv4 address is
        reason = _classify(v4 if v4 is not None else ip)
        if reason == "loopback" and self.allow_loopback:
            return None
        return reason
