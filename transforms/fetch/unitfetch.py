"""The hosts of one server fetched as one politeness unit (pure: no Beam).

With --politeness_key ip (or domain) the hosts whose address (or registrable domain) is the
same arrive together (`politeness.py`, grouped before the fetch), and `fetch_unit` fetches
them over one connection budget: min(--conns_per_host, hosts) connection slots, each a
`HostFetcher` of its own with a clock of its own (`UnitClock`). The hosts are dealt to the
slots (the most URLs first, each to the least loaded slot) and a slot fetches its hosts'
URLs in turn, one URL of each host after another, so every host of the unit gets its share
of the round. A request waits for what its host asks (--delay_per_host, its Crawl-delay, a
Retry-After, the backoff after failures, from the host's own last request) and for
--delay_per_host since the slot's last request to any host of the unit, doubled after each
consecutive failure there; that many consecutive failed requests park the slot's hosts
(the server is down). So the server sees at most --conns_per_host requests at once and at
most that many per delay, whatever its host names.

Per host stay per host: robots.txt (fetched on the host's first URL), its Crawl-delay and
block, --host_budget (counted from the unit's start), parking after its own failures, the
host state and results.
"""
from __future__ import annotations

import dataclasses
import functools
import logging

from transforms.fetch.hostround import HostRound
from transforms.fetch.observed import ObservedResults
from transforms.fetch.records import TRANSIENT, HostState
from transforms.fetch.slots import run_concurrently

log = logging.getLogger(__name__)


class UnitClock:
    """One connection slot of a unit: when its last request ended, and its consecutive
    failed requests (any host's)."""

    def __init__(self):
        self.last_end = float("-inf")
        self.failures = 0


class _Turns:
    """One host of a unit: its requests, the next one's index, its state, results and round."""

    def __init__(self, host, requests, state, observe, start, obey_robots):
        self.host, self.requests, self.next = host, requests, 0
        self.state = (dataclasses.replace(state, sitemaps=list(state.sitemaps or [])) if state
                      else HostState(host))
        self.results = ObservedResults(observe) if observe else []
        self.round = HostRound.starting(self.state.last_fetch_time, start)
        self.round.robots_done = not obey_robots
        self.render_session = None     # --render: this host's browser context (render.py)

    @property
    def left(self) -> int:
        return len(self.requests) - self.next


def deal(turns, slots: int) -> list[list]:
    """The hosts dealt to `slots` slots: the most URLs first, each to the least loaded."""
    out = [[] for _ in range(max(1, slots))]
    load = [0] * len(out)
    for t in sorted(turns, key=lambda t: -len(t.requests)):
        i = load.index(min(load))
        out[i].append(t)
        load[i] += len(t.requests)
    return out


def fetch_unit(fetcher, jobs, observers=None):
    """Fetch `jobs` [(host, requests, HostState or None)] of one unit; [(results, state)] in
    the jobs' order, each host's results in its requests' order. `observers`: one observe
    callable (or None) per job, as `HostFetcher.fetch_host` takes. Never raises for a host:
    an unexpected error turns that host's remaining URLs into TRANSIENT internal errors."""
    cfg = fetcher.config
    start = fetcher.clock()
    observers = observers or [None] * len(jobs)
    turns = [_Turns(h, reqs, st, obs, start, cfg.obey_robots)
             for (h, reqs, st), obs in zip(jobs, observers)]
    dealt = [s for s in deal(turns, min(int(cfg.conns_per_host), len(turns))) if s]
    extra = [fetcher.slot_fetcher() for _ in dealt[1:]]
    try:
        run_concurrently([functools.partial(_run_slot, f, slot, start)
                          for f, slot in zip([fetcher, *extra], dealt)])
    finally:
        for f in extra:
            f.close()
    return [(t.results.kept if observers[i] else t.results, t.state) for i, t in enumerate(turns)]


def _run_slot(fetcher, turns, start) -> None:
    """One slot: its hosts' URLs in turn, on one clock, until none is left. With --render
    each host keeps a browser context of its own (`render_session`), as a host alone does."""
    clock = UnitClock()
    for t in turns:
        t.round.unit = clock
    active = [t for t in turns if t.left]
    try:
        while active:
            for t in list(active):
                fetcher.render_session = t.render_session
                try:
                    _fetch_next(fetcher, t, start)
                finally:
                    t.render_session = fetcher.render_session
                if not t.left:
                    active.remove(t)
    finally:
        fetcher.render_session = None
        for t in turns:
            if t.render_session is not None:
                t.render_session.close()
                t.render_session = None


def _fetch_next(fetcher, t, start) -> None:
    """The next URL of host `t`."""
    req = t.requests[t.next]
    try:
        res = fetcher._fetch_one(req, t.state, t.round, start)
    except Exception as e:  # noqa: BLE001 - a bug must not lose the host's other results
        log.exception("fetcher: internal error on host %s", t.host)
        why = f"internal_error: {type(e).__name__}: {e}"[:500]
        for r in t.requests[t.next:]:
            t.results.append(fetcher._no_request(r, TRANSIENT, why))
        t.next = len(t.requests)
    else:
        t.results.append(res)
        t.next += 1
