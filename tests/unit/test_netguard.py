"""Address classification (real addresses as DATA only: nothing here opens a socket),
resolve overrides, and the resolver cache."""
import socket

import pytest

from transforms.fetch.netguard import AddressGuard, ResolveError, Resolver, parse_resolve_entries, parse_resolve_text, read_resolve_file, resolve_tuples

REFUSED_BY_DEFAULT = {
    "127.0.0.1": "loopback",
    "127.255.0.9": "loopback",
    "::1": "loopback",
    "10.0.0.1": "private",
    "10.255.255.255": "private",
    "172.16.0.1": "private",
    "172.31.255.254": "private",
    "192.168.1.1": "private",
    "100.64.0.1": "private",            # CGNAT
    "100.127.255.254": "private",
    "fc00::1": "private",
    "fd12:3456::1": "private",
    "169.254.1.1": "link_local",
    "fe80::1": "link_local",
    "224.0.0.1": "multicast",
    "239.255.255.250": "multicast",
    "ff02::1": "multicast",
    "169.254.169.254": "cloud_metadata",
    "169.254.170.2": "cloud_metadata",
    "fd00:ec2::254": "cloud_metadata",
    "100.100.100.200": "cloud_metadata",
    "168.63.129.16": "cloud_metadata",  # public range, still refused
    "0.0.0.0": "unspecified",
    "0.1.2.3": "unspecified",
    "::": "unspecified",
    "255.255.255.255": "reserved",
    "240.0.0.1": "reserved",
    "192.0.2.10": "reserved",           # documentation
    "198.18.0.1": "reserved",           # benchmarking
    "2001:db8::1": "reserved",
    # IPv6 forms of IPv4 addresses are judged as the IPv4 address
    "::ffff:10.0.0.1": "private",
    "::ffff:127.0.0.1": "loopback",
    "::ffff:169.254.169.254": "cloud_metadata",
    "64:ff9b::a9fe:a9fe": "cloud_metadata",   # NAT64 of 169.254.169.254
    "2002:c0a8:101::1": "private",            # 6to4 of 192.168.1.1
}

PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.215.14", "172.32.0.1", "100.128.0.1",
          "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("addr,reason", sorted(REFUSED_BY_DEFAULT.items()))
def test_non_public_addresses_are_refused_by_default(addr, reason):
    assert AddressGuard().check(addr) == reason


@pytest.mark.parametrize("addr", PUBLIC)
def test_public_addresses_are_allowed(addr):
    assert AddressGuard().check(addr) is None


def test_allow_loopback_allows_loopback_and_nothing_else():
    g = AddressGuard(allow_loopback=True)
    for addr in ("127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"):
        assert g.check(addr) is None, addr
    for addr, reason in REFUSED_BY_DEFAULT.items():
        if reason != "loopback":
            assert g.check(addr) == reason, addr


def test_deny_cidrs_refuse_on_top_even_loopback():
    g = AddressGuard(allow_loopback=True, deny_cidrs=("127.0.0.2/32", "8.8.8.0/24", "2606:4700::/32"))
    assert g.check("127.0.0.2") == "denied_by_flag"
    assert g.check("127.0.0.1") is None
    assert g.check("8.8.8.8") == "denied_by_flag"
    assert g.check("::ffff:8.8.8.8") == "denied_by_flag"
    assert g.check("2606:4700:4700::1111") == "denied_by_flag"
    assert g.check("1.1.1.1") is None


def test_bad_deny_cidr_is_a_clear_error():
    with pytest.raises(ValueError, match="not-a-cidr"):
        AddressGuard(deny_cidrs=("not-a-cidr",))


def test_garbage_address_is_refused():
    assert AddressGuard().check("example.com") == "bad_address"


def test_parse_resolve_entries_curl_syntax():
    m = parse_resolve_entries(["Example.COM:443:127.0.0.1", "v6.test:80:[::1]",
                               "[::1]:8080:127.0.0.2", "multi.test:80:127.0.0.3,127.0.0.4"])
    assert m == {("example.com", 443): "127.0.0.1", ("v6.test", 80): "::1",
                 ("::1", 8080): "127.0.0.2", ("multi.test", 80): "127.0.0.3"}
    assert resolve_tuples(m)[0] == ("::1", 8080, "127.0.0.2")


@pytest.mark.parametrize("bad", ["example.com", "example.com:80", "example.com:http:1.2.3.4",
                                 "example.com:80:not-an-ip", "example.com:0:1.2.3.4",
                                 ":80:1.2.3.4", "[::1:80:1.2.3.4"])
def test_parse_resolve_entries_names_the_bad_entry(bad):
    with pytest.raises(ValueError) as e:
        parse_resolve_entries(["ok.test:80:127.0.0.1", bad])
    assert repr(bad) in str(e.value)


def test_resolve_file_ignores_comments_and_blank_lines(tmp_path):
    p = tmp_path / "resolve.txt"
    p.write_text("# simulated web\n\na.test:80:127.0.0.1  # first\n  b.test:8080:[::1]\n")
    assert read_resolve_file(str(p)) == {("a.test", 80): "127.0.0.1", ("b.test", 8080): "::1"}
    assert parse_resolve_text(p.read_text()) == read_resolve_file(str(p))


def test_resolver_uses_override_first_and_caches_everything():
    calls = []

    def fake_getaddrinfo(host, port, family, type_):
        calls.append(host)
        if host == "broken.test":
            raise socket.gaierror("no such host")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.9", port))]

    r = Resolver({("over.test", 80): "127.0.0.5"}, getaddrinfo=fake_getaddrinfo)
    assert r.resolve("OVER.test", 80) == "127.0.0.5"
    assert r.resolve("dns.test", 80) == "127.0.0.9"
    assert r.resolve("dns.test", 80) == "127.0.0.9"
    for _ in range(3):
        with pytest.raises(ResolveError):
            r.resolve("broken.test", 80)
    assert r.resolve("127.0.0.7", 80) == "127.0.0.7"     # literal: no lookup
    assert calls == ["dns.test", "broken.test"]


def test_remembered_verdicts_belong_to_their_guard_and_stay_bounded():
    lenient, strict = AddressGuard(allow_loopback=True), AddressGuard(deny_cidrs=("203.0.113.0/24",))
    for _ in range(2):   # the second time from memory
        assert lenient.check("127.0.0.1") is None and strict.check("127.0.0.1") == "loopback"
        assert strict.check("203.0.113.9") == "denied_by_flag" and lenient.check("203.0.113.9") == "reserved"
        assert strict.check("not-an-ip") == "bad_address"
    for i in range(5000):
        strict.check(f"10.{i // 256}.{i % 256}.1")
    assert len(strict._verdicts) <= 4096 and strict.check("127.0.0.1") == "loopback"
