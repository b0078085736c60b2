"""Politeness per server (issue #52): the hosts of one unit share one delay and one connection
budget (unitfetch), the unit of each host (politeness.UnitKeys), and the fetch step's
grouping (one element per unit)."""
import threading
import time

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.unit.httpfixtures import LocalServer, loopback_config, page, send, status
from transforms.fetch import unitfetch
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.hostjob import FetcherFactory, fetch_unit
from transforms.fetch.politeness import UnitKeys, split_host
from schemas.tables import OK, ROBOTS_DENIED
from transforms.fetch.records import TRANSIENT, FetchRequest
from transforms.fetch.step import PolitenessUnits


class InFlight:
    """A route that serves a page and counts the requests in flight at once (each holds the
    server `hold` seconds, the time a real server works on it)."""

    def __init__(self, body=b"<html>ok</html>", hold=0.03):
        self.body, self.hold = body, hold
        self.now = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, h):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.hold)
        with self.lock:
            self.now -= 1
        send(h, 200, self.body, {"Content-Type": "text/html"})


def _unit(srv, names, per_host, **cfg):
    config = loopback_config({n: srv for n in names}, **cfg)
    jobs = [(f"{n}:{srv.port}", [FetchRequest(f"http://{n}:{srv.port}/p{j}", 100 * i + j)
                                 for j in range(per_host)], None) for i, n in enumerate(names)]
    with HostFetcher(config) as f:
        return unitfetch.fetch_unit(f, jobs)


def _starts(srv):
    return sorted(t for t, _m, path, _h in srv.requests)


def test_the_hosts_of_one_server_get_one_request_at_a_time_and_the_delay_between_any_two():
    route = InFlight()
    with LocalServer({"/robots.txt": status(404), "*": route}) as srv:
        out = _unit(srv, ["a.test", "b.test", "c.test"], 3, delay_per_host=0.1)
        starts = _starts(srv)
        hosts = [h.get("Host", "").split(":")[0] for _t, _m, path, h in srv.requests if path != "/robots.txt"]
    assert [r.outcome for results, _ in out for r in results] == [OK] * 9
    assert route.most == 1
    assert min(b - a for a, b in zip(starts, starts[1:])) >= 0.1
    assert hosts[:3] == ["a.test", "b.test", "c.test"]   # every host gets its turn from the start


def test_a_unit_keeps_at_most_conns_per_host_requests_in_flight():
    route = InFlight()
    with LocalServer({"/robots.txt": status(404), "*": route}) as srv:
        out = _unit(srv, ["a.test", "b.test", "c.test", "d.test"], 3, delay_per_host=0.0,
                    conns_per_host=2)
    assert [r.outcome for results, _ in out for r in results] == [OK] * 12
    assert route.most <= 2


def test_robots_rules_and_host_state_stay_per_host():
    def robots(h):
        if h.headers.get("Host", "").startswith("a.test"):
            send(h, 200, b"User-agent: *\nDisallow: /p1\n", {"Content-Type": "text/plain"})
        else:
            send(h, 404, b"")
    with LocalServer({"/robots.txt": robots, "*": page(b"ok")}) as srv:
        (a, a_state), (b, b_state) = _unit(srv, ["a.test", "b.test"], 2)
    assert [r.outcome for r in a] == [OK, ROBOTS_DENIED] and [r.outcome for r in b] == [OK, OK]
    assert (a_state.robots_state, b_state.robots_state) == ("parsed", "allow_all")
    assert (a_state.fetches, b_state.fetches) == (2, 3)


def test_a_server_failing_every_request_parks_the_whole_unit():
    with LocalServer({"*": status(500)}) as srv:
        out = _unit(srv, [f"h{i}.test" for i in range(5)], 2, max_consecutive_failures=3)
        made = len(srv.requests)
    reasons = [r.reason for results, _ in out for r in results]
    assert made == 3                                   # then no host of the unit is asked again
    assert reasons.count("host_parked") == 10 - 3 and all(r in ("robots_5xx", "host_parked") for r in reasons)


def test_a_unit_is_fetched_and_handed_over_per_host():
    with LocalServer({"/robots.txt": status(404), "*": page(b"ok")}) as srv:
        cfg = loopback_config({"a.test": srv, "b.test": srv})
        members = [(f"{n}:{srv.port}", [{"url": f"http://{n}:{srv.port}/x", "fp": i}], None)
                   for i, n in enumerate(["a.test", "b.test"])]
        streamed = []
        out = fetch_unit(FetcherFactory(cfg), members, None, lambda host, p: streamed.append((host, p["fp"])))
    assert sorted(streamed) == [(f"a.test:{srv.port}", 0), (f"b.test:{srv.port}", 1)]
    assert [row["host"] for _pages, row, _s in out] == [m[0] for m in members]
    assert all(pages == [] and row["fetches"] == 2 for pages, row, _s in out)


# ----------------------------------------------------------------- the unit of a host

def test_split_host():
    assert split_host("a.test") == ("a.test", None) and split_host("a.test:8080") == ("a.test", 8080)
    assert split_host("[::1]:8080") == ("::1", 8080)


def _keys(policy, **cfg):
    return UnitKeys(loopback_config({}, politeness_key=policy, **cfg)).setup()


def test_domain_units_follow_the_public_suffix_list():
    keys = _keys("domain")
    assert keys.key("a.example.co.uk", None) == keys.key("b.example.co.uk:8080", None) == "domain:example.co.uk"
    assert keys.key("one.blogspot.com", None) != keys.key("two.blogspot.com", None)


def test_ip_units_join_the_names_of_one_address_and_need_no_lookup_for_a_kept_answer():
    keys = _keys("ip", resolve=(("a.test", 80, "127.0.0.5"), ("b.test", 8080, "127.0.0.5"),
                                ("c.test", 80, "127.0.0.6")))
    assert keys.key("a.test", None) == keys.key("b.test:8080", None) == "ip:127.0.0.5"
    assert keys.key("c.test", None) == "ip:127.0.0.6"
    kept = {"address": "127.0.0.9", "address_expires": time.time() + 60}
    assert not keys.needs_lookup("d.test", kept) and keys.key("d.test", kept) == "ip:127.0.0.9"
    assert keys.needs_lookup("d.test", {"address": "127.0.0.9", "address_expires": time.time() - 1})
    assert keys.needs_lookup("d.test", None)


def test_a_lookup_before_the_grouping_goes_into_the_state_row(monkeypatch):
    keys = _keys("ip")
    monkeypatch.setattr(keys._resolver, "_lookup", lambda host, timeout: ("127.0.0.8", 600.0))
    row = keys.looked_up("d.test", {"host": "d.test", "dns_lookups": 2})
    assert row["address"] == "127.0.0.8" and row["dns_lookups"] == 3 and row["address_expires"] > time.time()
    assert keys.key("d.test", row) == "ip:127.0.0.8"
    failed = _keys("ip")
    monkeypatch.setattr(failed._resolver, "_lookup", lambda host, timeout: (_ for _ in ()).throw(
        __import__("transforms.fetch.resolver", fromlist=["ResolveError"]).ResolveError("nx")))
    row = failed.looked_up("e.test", None)
    assert row["address"] is None and row["dns_lookups"] == 1 and failed.key("e.test", row) == "host:e.test"


@pytest.mark.parametrize("policy,expected", [
    ("ip", [("ip:127.0.0.5", ["a.test", "b.test"]), ("ip:127.0.0.6", ["c.test"])]),
    ("host", [("a.test", ["a.test"]), ("b.test", ["b.test"]), ("c.test", ["c.test"])]),
])
def test_the_fetch_step_groups_its_hosts_by_unit(policy, expected):
    cfg = loopback_config({}, politeness_key=policy, resolve=(
        ("a.test", 80, "127.0.0.5"), ("b.test", 80, "127.0.0.5"), ("c.test", 80, "127.0.0.6")))
    rows = pa.table({"url": ["http://x/"], "fp": [1]})
    with beam.Pipeline(runner="FnApiRunner") as p:
        units = (p | beam.Create([(h, {"urls": [rows], "state": []}) for h in ("c.test", "b.test", "a.test")])
                 | PolitenessUnits(cfg, threads=2)
                 | beam.MapTuple(lambda unit, hosts: (unit, [h for h, _ in hosts])))
        assert_that(units, equal_to(expected))


def test_a_fetch_process_fetches_a_unit_and_reports_each_of_its_hosts():
    from transforms.fetch.fetchproc import FetchProcess
    route = InFlight()
    with LocalServer({"/robots.txt": status(404), "*": route}) as srv:
        cfg = loopback_config({"a.test": srv, "b.test": srv}, delay_per_host=0.02)
        hosts = [f"{n}:{srv.port}" for n in ("a.test", "b.test")]
        unit = ("ip:127.0.0.1", [(h, [{"url": f"http://{h}/{j}", "fp": 10 * i + j} for j in range(3)], None)
                                 for i, h in enumerate(hosts)])
        proc = FetchProcess(cfg, 2).start()
        assert proc.ready()
        try:
            messages = list(proc.fetch([unit]))
        finally:
            proc.close()
    assert sorted(m[1] for m in messages if m[0] == "done") == hosts
    assert sorted(m[2]["fp"] for m in messages if m[0] == "page") == [0, 1, 2, 10, 11, 12]
    assert route.most == 1
