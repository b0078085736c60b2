"""--conns_per_host: several connections to one host, each keeping the per-host delay;
a robots Crawl-delay or a Retry-After forces one."""
import threading
import time

from schemas.tables import OK
from tests.unit.httpfixtures import LocalServer, loopback_config, page, send, status
from transforms.fetch import hostfetcher
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.records import TRANSIENT, FetchRequest



class InFlight:
    """A route that holds each request `hold` seconds and records the most at once, and
    the (start, connection) of every request."""

    def __init__(self, hold=0.05, body=b"<html>ok</html>"):
        self.hold, self.body = hold, body
        self.lock = threading.Lock()
        self.now = self.most = 0
        self.starts = []          # (time, client port) per page request

    def __call__(self, h):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.starts.append((time.monotonic(), h.client_address[1]))
        time.sleep(self.hold)
        with self.lock:
            self.now -= 1
        send(h, 200, self.body, {"Content-Type": "text/html"})


def fetch(srv, n, **cfg):
    host = f"site.test:{srv.port}"
    config = loopback_config({"site.test": srv}, **cfg)
    reqs = [FetchRequest(f"http://{host}/p{i}", i) for i in range(n)]
    with HostFetcher(config) as f:
        return f.fetch_host(host, reqs, None)


def per_connection_gaps(starts):
    by = {}
    for t, port in sorted(starts):
        by.setdefault(port, []).append(t)
    return by, [b - a for ts in by.values() for a, b in zip(ts, ts[1:])]


def test_three_connections_each_keep_the_delay_and_never_more_than_three_at_once():
    route = InFlight(hold=0.05)
    with LocalServer({"/robots.txt": status(404), "*": route}) as srv:
        results, state = fetch(srv, 12, delay_per_host=0.2, conns_per_host=3)
    assert [r.fp for r in results] == list(range(12))               # in request order
    assert [r.outcome for r in results] == [OK] * 12 and state.fetches == 13
    by, gaps = per_connection_gaps(route.starts)
    assert route.most == 3 and len(by) == 3                          # three connections, used
    # the delay runs from the end of a slot's last response: start-to-start >= hold + delay
    assert min(gaps) >= 0.2 + 0.05 - 0.01
    # 12 pages over 3 slots, each slot's requests spaced by the delay: no wall-clock bound
    # here (CI machines are loaded); the three connections in flight at once are the speed-up


def test_one_connection_by_default():
    route = InFlight(hold=0.01)
    with LocalServer({"/robots.txt": status(404), "*": route}) as srv:
        results, _ = fetch(srv, 4, delay_per_host=0.05)
    assert route.most == 1 and len(per_connection_gaps(route.starts)[0]) == 1


def test_a_robots_crawl_delay_forces_one_connection():
    route = InFlight(hold=0.01)
    with LocalServer({"/robots.txt": page(b"User-agent: *\nCrawl-delay: 0.2\n", "text/plain"),
                      "*": route}) as srv:
        results, state = fetch(srv, 4, delay_per_host=0.01, conns_per_host=4)
    by, gaps = per_connection_gaps(route.starts)
    assert route.most == 1 and min(gaps) >= 0.2 - 0.01 and state.crawl_delay == 0.2
    assert [r.outcome for r in results] == [OK] * 4


def test_a_retry_after_pauses_every_slot():
    hits = {"n": 0}
    lock = threading.Lock()
    route = InFlight(hold=0.01)

    def limited(h):
        with lock:
            hits["n"] += 1
            first = hits["n"] == 3
        if first:      # the third request is told to wait a second
            send(h, 503, b"busy", {"Retry-After": "1"})
        else:
            route(h)

    with LocalServer({"/robots.txt": status(404), "*": limited}) as srv:
        results, _ = fetch(srv, 8, delay_per_host=0.01, conns_per_host=4, retry_after_cap=5)
        times = sorted(srv.times())
    assert [r.outcome for r in results] == [OK] * 8
    # after the 503 every slot waited: nothing was requested in the second after it
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) >= 0.9, gaps


def test_a_bug_in_one_slot_loses_no_url_and_repeats_none(monkeypatch):
    route = InFlight(hold=0.01)
    real = hostfetcher.HostFetcher._fetch_page

    def flaky(self, req, state, rnd):
        if req.url.endswith("/p5"):
            raise RuntimeError("boom")
        return real(self, req, state, rnd)

    monkeypatch.setattr(hostfetcher.HostFetcher, "_fetch_page", flaky)
    with LocalServer({"/robots.txt": status(404), "*": route}) as srv:
        results, _ = fetch(srv, 10, delay_per_host=0.01, conns_per_host=3)
    assert [r.fp for r in results] == list(range(10))
    bad = [r for r in results if r.outcome != OK]
    assert bad and all(r.outcome == TRANSIENT and r.reason.startswith("internal_error: RuntimeError")
                       for r in bad)
    assert results[5] in bad
