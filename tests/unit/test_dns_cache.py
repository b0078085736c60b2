"""DNS that lasts and counts (issue #52): answers kept with their TTL across rounds (hosts
table), looked up again when expired or after a failed connection, lookups bounded by
--deadline, every address actually dialled checked by the guard."""
import json
import socket
import threading
import time

import pyarrow as pa
import pytest

from pipelines.crawldir import CrawlDir, CrawlStateError
from schemas import tables
from tests.simweb.dnsserver import SimDns
from tests.unit.httpfixtures import LocalServer, loopback_config, page, status
from transforms.fetch import dnslookup
from transforms.fetch.curlsender import CurlSender
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.netguard import ForbiddenAddressError
from transforms.fetch.prepared import prepare_request
from schemas.tables import OK
from transforms.fetch.records import TRANSIENT, FetchRequest, HostState
from transforms.fetch.resolver import ResolveError, Resolver

NO_ROBOTS = {"/robots.txt": status(404)}


class FakeLookup:
    """A DNS lookup answering from a dict, counting calls; the timeout each was given."""

    def __init__(self, answers, ttl=300.0):
        self.answers, self.ttl, self.calls = dict(answers), ttl, []

    def __call__(self, host, timeout):
        self.calls.append((host, timeout))
        if host not in self.answers:
            raise ResolveError(f"{host}: NXDOMAIN")
        return self.answers[host], self.ttl


# ----------------------------------------------------------------- the resolver (pure)

def test_an_answer_is_kept_for_its_ttl_bounded_by_the_flag_and_a_failure_is_kept_too():
    now = [1000.0]
    lookup = FakeLookup({"a.test": "127.0.0.5"}, ttl=86400.0)
    r = Resolver(lookup=lookup, max_ttl=3600.0, clock=lambda: now[0])
    assert r.resolve("a.test", 80, 5.0) == r.resolve("A.test.", 443, 5.0) == "127.0.0.5"
    assert r.answer("a.test").expires == 1000.0 + 3600.0        # the TTL, bounded
    for _ in range(2):
        with pytest.raises(ResolveError):
            r.resolve("gone.test", 80, 5.0)
    assert [h for h, _ in lookup.calls] == ["a.test", "gone.test"]


def test_a_remembered_answer_is_used_until_it_expires_then_looked_up():
    now = [1000.0]
    lookup = FakeLookup({"a.test": "127.0.0.9"})
    r = Resolver(lookup=lookup, clock=lambda: now[0])
    r.remember("a.test", "127.0.0.5", 1500.0)
    assert r.resolve("a.test", 80) == "127.0.0.5" and lookup.calls == []
    r2 = Resolver(lookup=lookup, clock=lambda: now[0])
    r2.remember("a.test", "127.0.0.5", 900.0)                       # expired
    assert r2.resolve("a.test", 80) == "127.0.0.9" and len(lookup.calls) == 1


def test_forget_makes_the_next_dial_look_up_again():
    lookup = FakeLookup({"a.test": "127.0.0.5"})
    r = Resolver(lookup=lookup)
    r.resolve("a.test", 80)
    r.forget("a.test")
    r.resolve("a.test", 80)
    assert len(lookup.calls) == 2


def test_overrides_and_literals_need_no_lookup():
    lookup = FakeLookup({})
    r = Resolver({("over.test", 8080): "127.0.0.5"}, lookup=lookup)
    assert r.resolve("OVER.test", 8080) == "127.0.0.5" and r.resolve("127.0.0.7", 80) == "127.0.0.7"
    assert lookup.calls == []


# ----------------------------------------------------------------- DNS on the wire

def test_dns_lookup_gives_the_address_and_ttl_a_name_server_answers():
    with SimDns({"site.test": "127.0.0.42"}, ttl=1234) as ns:
        look = dnslookup.DnsLookup((ns.address,))
        assert look("site.test", 2.0) == ("127.0.0.42", 1234.0)
        with pytest.raises(ResolveError):
            look("other.test", 2.0)
    assert ns.counts()["site.test"] >= 1


def test_a_stalled_name_server_costs_the_lookup_its_timeout_not_more():
    with SimDns({"site.test": "127.0.0.42"}, stall=True) as ns:
        look = dnslookup.DnsLookup((ns.address,))
        with pytest.raises(ResolveError):
            look("site.test", 0.3)
        assert ns.counts() == {"site.test": ns.counts()["site.test"]}   # it was asked


def test_the_system_lookup_is_given_up_after_its_timeout(monkeypatch):
    released = threading.Event()

    def stalled(*args, **kw):
        released.wait(30)
        raise socket.gaierror("too late")

    monkeypatch.setattr(socket, "getaddrinfo", stalled)
    try:
        with pytest.raises(ResolveError):
            dnslookup._system_lookup("site.test", 0.2)
        assert not released.is_set()          # returned while the resolver still stalls
    finally:
        released.set()


def test_bad_name_servers_are_refused_naming_the_entry():
    for bad in ("not-an-ip", "127.0.0.1:99999", "[::1"):
        with pytest.raises(ValueError, match="--dns_servers"):
            dnslookup.parse_server(bad)
    assert dnslookup.parse_server("[::1]:5353") == ("::1", 5353)


# ----------------------------------------------------------------- the fetcher

def _fetch(srv, paths, state=None, lookup=None, **cfg):
    config = loopback_config({}, **cfg)
    resolver = Resolver(lookup=lookup, max_ttl=config.dns_max_ttl)
    host = f"site.test:{srv.port}"
    with HostFetcher(config, resolver=resolver) as f:
        reqs = [FetchRequest(f"http://{host}{p}", i) for i, p in enumerate(paths)]
        return f.fetch_host(host, reqs, state)


def test_a_host_is_looked_up_once_and_its_answer_kept_in_the_host_state():
    lookup = FakeLookup({"site.test": "127.0.0.1"}, ttl=600.0)
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        t0 = time.time()
        results, state = _fetch(srv, ["/a", "/b"], lookup=lookup)
    assert [r.outcome for r in results] == [OK, OK]
    assert len(lookup.calls) == 1 and state.dns_lookups == 1 and state.address == "127.0.0.1"
    assert t0 + 600.0 <= state.address_expires <= time.time() + 600.0


def test_the_next_round_uses_the_kept_answer_without_a_lookup():
    lookup = FakeLookup({"site.test": "127.0.0.9"})
    kept = HostState("x", address="127.0.0.1", address_expires=time.time() + 3600, dns_lookups=1)
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        results, state = _fetch(srv, ["/a"], state=kept, lookup=lookup)
    assert results[0].outcome == OK and lookup.calls == [] and state.dns_lookups == 1


def test_an_expired_answer_is_looked_up_again():
    lookup = FakeLookup({"site.test": "127.0.0.1"})
    old = HostState("x", address="127.0.0.9", address_expires=time.time() - 1, dns_lookups=3)
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        results, state = _fetch(srv, ["/a"], state=old, lookup=lookup)
    assert results[0].outcome == OK and len(lookup.calls) == 1
    assert state.dns_lookups == 4 and state.address == "127.0.0.1"


def test_a_failed_connection_to_the_kept_address_looks_the_host_up_again():
    # the host moved: nothing listens on the kept address any more, DNS gives the new one
    lookup = FakeLookup({"site.test": "127.0.0.1"})
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        moved = HostState("x", address="127.0.0.3", address_expires=time.time() + 3600,
                          robots_state="allow_all", robots_fetched_at=time.time())
        results, state = _fetch(srv, ["/a", "/b"], state=moved, lookup=lookup)
    assert results[0].reason == "connect_refused" and results[1].outcome == OK
    assert len(lookup.calls) == 1 and state.address == "127.0.0.1" and state.dns_lookups == 1


def test_dns_time_counts_inside_the_deadline_with_a_stalled_name_server():
    with SimDns({"site.test": "127.0.0.1"}, stall=True) as ns, \
            LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        results, state = _fetch(srv, ["/a", "/b"], lookup=dnslookup.DnsLookup((ns.address,)),
                                deadline=0.5)
        asked = ns.counts().get("site.test", 0)
    assert [r.reason for r in results] == ["dns", "dns"]
    assert asked >= 1 and srv.paths() == []
    assert state.dns_lookups == 1                 # the failure is kept: one lookup for both URLs


def test_the_lookup_of_a_url_gets_at_most_its_deadline():
    lookup = FakeLookup({"site.test": "127.0.0.1"})
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        _fetch(srv, ["/a"], lookup=lookup, deadline=0.7)
    assert 0 < lookup.calls[0][1] <= 0.7


# ----------------------------------------------------------------- every address dialled

def test_libcurl_asks_the_guard_about_every_socket_it_opens():
    with LocalServer({"*": page(b"ok")}) as srv:
        sender = CurlSender(lambda host, port, deadline=None: "127.0.0.1", True,
                            guard=lambda addr: "loopback")
        prep = prepare_request("GET", f"http://a.test:{srv.port}/", {}, None, None)
        with pytest.raises(ForbiddenAddressError) as e:
            sender.send(prep, 2.0, 2.0, time.monotonic() + 5)
        sender.close()
        assert srv.connections == 0 and e.value.reason == "loopback"


# ----------------------------------------------------------------- hosts tables of version 1

def test_a_version_1_crawl_and_its_hosts_table_are_read(tmp_path):
    (tmp_path / "crawl.json").write_text(json.dumps({"schema_version": 1}))
    assert CrawlDir(str(tmp_path)).read_config()["schema_version"] == 1
    (tmp_path / "crawl.json").write_text(json.dumps({"schema_version": tables.SCHEMA_VERSION + 1}))
    with pytest.raises(CrawlStateError, match="schema_version"):
        CrawlDir(str(tmp_path)).read_config()
    v1 = pa.table({"host": ["a.test"], "address": ["127.0.0.1"], "fetches": pa.array([3], pa.int64())})
    row = tables.conform(v1, tables.HOSTS).to_pylist()[0]
    assert row["address_expires"] is None and row["dns_lookups"] is None
    state = HostState.from_row(row, "a.test")
    assert state.dns_lookups == 0 and state.address_expires is None and state.fetches == 3
    assert set(tables.LATER_COLUMNS["hosts"]) >= {"address_expires", "dns_lookups",
                                                   "robots_unreachable_since"}
