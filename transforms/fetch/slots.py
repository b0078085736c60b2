"""Several connections to one host at once (--conns_per_host), politely (pure: no Beam).

For one's own sites a crawler may open a few connections per host (Scrapy's
CONCURRENT_REQUESTS_PER_DOMAIN). Each connection slot keeps the per-host delay between its
own requests, so the host sees at most `conns_per_host` requests in flight and at most
`conns_per_host` per delay. A robots.txt Crawl-delay (or a Retry-After the server sent)
forces one connection: `HostFetcher._fetch_all` goes parallel only after robots.txt is
known and asks none. Everything else of the host's round is shared by the slots: a
Retry-After pause, the consecutive-failure backoff and parking, robots rules, the host's
state (counted under the round's lock).
"""
from __future__ import annotations

import functools
import logging
import threading

from transforms.fetch.hostround import SlotRound
from transforms.fetch.records import TRANSIENT

log = logging.getLogger(__name__)

TAKEN = object()   # in place of a result the observer took


def fetch_in_slots(fetcher, reqs, state, rnd, start, results) -> None:
    """Fetch `reqs` over min(conns_per_host, len(reqs)) slots: `fetcher` and new slot
    fetchers (own sessions), each taking the next URL when its last is done. Results are
    appended to `results` in request order; an observer on `results` (`ObservedResults`) sees each as
    it comes, and one it took is only counted (it is not held to the end of the host)."""
    k = max(1, min(int(fetcher.config.conns_per_host), len(reqs)))
    out = [None] * len(reqs)
    nxt = iter(range(len(reqs)))
    lock = threading.Lock()
    show = getattr(results, "show", None)
    errors = []

    def run(f):
        view = SlotRound(rnd)
        try:
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                out[i] = f._fetch_one(reqs[i], state, view, start)
                if show is not None and show(out[i]):
                    out[i] = TAKEN
        except BaseException as e:   # noqa: BLE001 - reported below; the host's other results stand
            errors.append(e)

    extra = [fetcher.slot_fetcher() for _ in range(k - 1)]
    try:
        run_concurrently([functools.partial(run, f) for f in [fetcher, *extra]])
    finally:
        for f in extra:
            f.close()
    if errors:   # a bug in one slot: its URL and the ones nobody reached wait for a retry
        log.error("fetcher: internal error in a connection slot", exc_info=errors[0])
        why = f"internal_error: {type(errors[0]).__name__}: {errors[0]}"[:500]
        for i, r in enumerate(out):
            if r is None:
                out[i] = fetcher._no_request(reqs[i], TRANSIENT, why)
                if show is not None and show(out[i]):
                    out[i] = TAKEN
    if show is None:
        results.extend(out)
    else:                                  # each already shown to the observer
        for r in out:
            results.record(r, r is TAKEN)


def run_concurrently(calls) -> None:
    """Call each of `calls` (no arguments) at once, the first in this thread, the others in
    threads of their own, and return when all are done. Exceptions are the callers' to catch
    inside each call."""
    threads = [threading.Thread(target=c, name="fetch-slot", daemon=True) for c in calls[1:]]
    for t in threads:
        t.start()
    if calls:
        calls[0]()
    for t in threads:
        t.join()
