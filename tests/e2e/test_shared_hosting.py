"""Politeness per server and DNS that lasts, end to end (issue #52).

The simulated web's `shared` config puts ten of its twelve host names on one address (one
shared-hosting server). Crawled with the default --politeness_key ip, that server's log
shows one request at a time and at least --delay_per_host between any two, whichever host
name they were for, while robots.txt and the hosts table stay per host name; with
--politeness_key host the same server is hit by several fetches at once. Resolved through
the simulated web's name server (no --resolve), five rounds look each host up once.
"""
import collections
import time

import pytest

from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from tests.simweb import requestlog
from tests.simweb.dnsserver import SimDns
from tests.simweb.process import SimWebProcess

DELAY = 0.1


@pytest.fixture(scope="module")
def shared_web(tmp_path_factory):
    p = SimWebProcess("shared", seed=1, workdir=tmp_path_factory.mktemp("simweb_shared"))
    try:
        yield p
    finally:
        p.stop()


def _shared_addr(web):
    counts = collections.Counter(h.addr for h in web.web.hosts)
    addr, n = counts.most_common(1)[0]
    assert n == 10
    return addr


def _crawl(web, d, *flags, rounds=2):
    start = time.time()
    crawlstate.start_crawl(web, d, "--delay_per_host", str(DELAY), "--max_pages", "40", *flags)
    crawlstate.run_rounds(d, "--rounds", str(rounds))
    return [r for r in web.requests() if r["start"] >= start]


@pytest.fixture(scope="module")
def ip_crawl(shared_web, tmp_path_factory):
    d = tmp_path_factory.mktemp("shared_ip") / "crawl"
    return d, _crawl(shared_web, d)


def test_the_shared_server_gets_one_request_at_a_time_and_the_delay_between_any_two(ip_crawl, shared_web):
    _, log = ip_crawl
    addr = _shared_addr(shared_web)
    on_shared = [r for r in log if r["addr"] == addr]
    assert len({r["host"] for r in on_shared}) == 10 and len(on_shared) > 20
    assert requestlog.max_concurrency_per_host(log, key="addr")[addr] == 1
    assert requestlog.min_gap_per_host(log, measure="end", key="addr")[addr] >= DELAY - 0.005


def test_robots_and_host_rows_stay_per_host_name(ip_crawl, shared_web):
    d, log = ip_crawl
    robots = collections.Counter(r["host"] for r in log if r["path"] == "/robots.txt")
    assert all(n == 1 for n in robots.values()) and len(robots) == 12
    c = CrawlDir(str(d))
    hosts = c.read_table("hosts", c.last_committed()).to_pylist()
    shared = [h for h in hosts if h["address"] == _shared_addr(shared_web)]
    assert len(shared) == 10 and all(h["robots_state"] for h in shared)


def test_with_politeness_key_host_the_shared_server_is_hit_in_parallel(shared_web, tmp_path):
    log = _crawl(shared_web, tmp_path / "crawl", "--politeness_key", "host", rounds=1)
    addr = _shared_addr(shared_web)
    assert requestlog.max_concurrency_per_host(log, key="addr")[addr] > 1
    assert requestlog.min_gap_per_host(log, measure="start", key="addr")[addr] < DELAY


def test_five_rounds_look_each_host_up_once(shared_web, tmp_path):
    with SimDns.for_hostmap(shared_web.hostmap_file, ttl=3600) as ns:
        d = tmp_path / "crawl"
        args = crawlstate.crawl_args(shared_web, d, "--delay_per_host", "0.02", "--max_pages", "30",
                                     "--dns_servers", ns.address)
        args[args.index("--resolve_file") + 1] = ""          # names through the name server only
        from pipelines import inject
        assert inject.main(args + [a for s in shared_web.seeds for a in ("--seed", s)]) == 0
        reports = crawlstate.run_rounds(d, "--rounds", "5")
        asked = ns.counts()
    assert len(reports) == 5
    c = CrawlDir(str(d))
    hosts = c.read_table("hosts", c.last_committed()).to_pylist()
    assert hosts and all(h["dns_lookups"] == 1 for h in hosts), [(h["host"], h["dns_lookups"]) for h in hosts]
    assert asked and max(asked.values()) <= 2      # one lookup a host (an A query, maybe AAAA too)
