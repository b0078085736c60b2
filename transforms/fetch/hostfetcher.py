"""Fetching one host politely and robustly (pure Python, no Beam).

`HostFetcher.fetch_host(host, requests, state)` fetches one host's URLs of a round, one
request at a time, over keep-alive connections (`curlsender.CurlSender`, libcurl). The round runs many hosts at once
(transforms.fetch.step.FetchHosts, through hostjob.fetch_one_host), each host sequentially.

Settings and their defaults: `records.FetchConfig`.

Outcomes and the reasons produced: `records.FetchResult`.

Address safety: every connection (page, robots, robots redirect hops) dials an address
the fetcher resolved itself (`resolver.Resolver`, overrides first) and checked with
`netguard.AddressGuard`, which libcurl asks again about the address of every socket it
opens; the Host header, TLS SNI and certificate check keep the host name. Proxies from the
environment are ignored.

DNS: a host's address comes from the hosts table while its answer lasts (`address`,
`address_expires`), else from a lookup bounded by --deadline, whose time the URL's request
then has less of (a resolver that stalls holds the fetch for the deadline, no longer). A
lookup is counted in the host's `dns_lookups`; a failed connection to the address has it
looked up again (once a round), and the next round too (`address_expires` cleared).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable
from urllib.parse import urljoin

from schemas.tables import (
    FAILED,
    FORBIDDEN_ADDRESS,
    HTTP_ERROR,
    NOT_MODIFIED,
    OK,
    REDIRECT,
    ROBOTS_DENIED,
)
from transforms.fetch import post
from transforms.fetch import robots as robotsmod
from transforms.fetch.curlsender import CurlSender
from transforms.fetch.connection import (
    Failure,
    Response,
    classify_exception,
    drain,
    media_type,
    origin_port,
    parse_retry_after,
    read_body,
    redirect_target,
)
from transforms.fetch.exchange import http_exchange
from transforms.fetch.hostround import HostRound
from transforms.fetch.httpbody import accept_encoding
from transforms.fetch.netguard import ForbiddenAddressError, ResolveError, Resolver
from transforms.fetch.observed import ObservedResults
from transforms.fetch.records import (
    ACCEPT,
    TRANSIENT,
    FetchConfig,
    FetchRequest,
    FetchResult,
    HostState,
)
from transforms.fetch.robotsfetch import RobotsFetching
from transforms.fetch.prepared import prepare_request
from transforms.fetch.slots import fetch_in_slots

log = logging.getLogger(__name__)

# failures of the connection itself: the address may be stale (looked up again)
CONNECT_FAILURES = frozenset({"connect_refused", "connect_error", "timeout_connect"})
ROBOTS_CONNECT_FAILURES = frozenset(f"robots_{r}" for r in CONNECT_FAILURES)

# ----------------------------------------------------------------- the host fetcher

class HostFetcher(RobotsFetching):
    """Fetches the URLs of one host at a time; see `fetch_host`.

    One instance holds its own keep-alive connections (a `CurlSender`) and must be used by one
    thread at a time. `clock`/`sleep` are injectable for tests; deadlines use time.monotonic.
    libcurl bounds each request by the whole-request deadline itself.
    """

    def __init__(self, config: FetchConfig, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, resolver: Resolver | None = None,
                 renderer=None):
        self.config = config
        self.renderer = renderer            # render.BrowserPool (--render), or None
        self.render_session = None          # this host's browser context (render.py)
        self.clock = clock
        self.sleep = sleep
        self.guard = config.guard()
        self.resolver = resolver or config.resolver()
        self.ua_token = robotsmod.product_token(config.user_agent)
        self._addresses: dict[tuple[str, int], str] = {}
        self._dns_spent = 0.0     # seconds a lookup took, charged to the next request's deadline
        # no proxies or netrc from the environment: every connection dials a guarded address
        self._sender = CurlSender(self._dial, config.ca_bundle or True, self.guard.check)
        self._headers = {"User-Agent": config.user_agent, "Accept": ACCEPT,
                         "Accept-Encoding": accept_encoding()}

    def close(self) -> None:
        if self.render_session is not None:
            self.render_session.close()
        self._sender.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- address

    def _dial(self, host: str, port: int, deadline_at: float | None = None) -> str:
        left = self.config.deadline if deadline_at is None else deadline_at - time.monotonic()
        addr = self.resolver.resolve(host, port, max(0.001, left))
        reason = self.guard.check(addr)
        if reason is not None:
            raise ForbiddenAddressError(host, addr, reason)
        self._addresses[(host.lower(), port)] = addr
        return addr

    def _resolve(self, hostname: str, port: int, state: HostState, rnd: HostRound) -> str:
        """The guarded address of the host's URL: the hosts table's answer while it lasts
        (given to the resolver on the host's first URL), else a lookup within --deadline
        (its time charged to the next request), counted in the host state."""
        if not rnd.dns_seeded:
            rnd.dns_seeded = True
            if state.address_expires is not None:   # (no address: that lookup failed)
                self.resolver.remember(hostname, state.address, state.address_expires,
                                       None if state.address else f"{hostname}: no address (looked up before)")
        before = self.resolver.answer(hostname)
        m0 = time.monotonic()
        try:
            return self._dial(hostname, port, m0 + self.config.deadline)
        finally:
            after = self.resolver.answer(hostname)
            if after is not None and after is not before and after.looked_up:
                self._dns_spent = time.monotonic() - m0
                state.dns_lookups += 1
                state.address_expires = after.expires if after.address else None

    def _connect_failed(self, hostname: str, state: HostState, rnd: HostRound) -> None:
        """No connection to the host's address: look it up again (once a round), and in
        the next round too."""
        state.address_expires = None
        if not rnd.looked_up_again:
            rnd.looked_up_again = True
            self.resolver.forget(hostname)

    # -- politeness

    def _delay(self, rnd: HostRound) -> float:
        base = max(self.config.delay_per_host, rnd.crawl_delay or 0.0, rnd.slow_down)
        if rnd.failures:
            cap = max(base, self.config.max_crawl_delay)
            return min(base * (2 ** rnd.failures), cap)
        return base

    def _wait_turn(self, rnd: HostRound) -> None:
        target = max(rnd.last_end + self._delay(rnd), rnd.not_before)
        unit = rnd.unit
        if unit is not None:   # a unit of hosts on one server (unitfetch.py): its slot's gap too
            gap = self.config.delay_per_host
            if unit.failures:
                gap = min(gap * 2 ** unit.failures, max(gap, self.config.max_crawl_delay))
            target = max(target, unit.last_end + gap)
        now = self.clock()
        if target > now:
            self.sleep(target - now)

    # -- one HTTP exchange

    def _request(self, url: str, headers: dict | None, cap: int, keep_body: bool,
                 method: str = "GET", data: str | None = None) -> Response | Failure:
        cfg = self.config
        if method != "GET":      # a POST on a new connection: a connect error means nothing was sent
            self._sender.clear()
        t0 = self.clock()
        m0 = time.monotonic()
        deadline_at = m0 + max(0.001, cfg.deadline - self._dns_spent)   # DNS counts inside --deadline
        self._dns_spent = 0.0
        resp = None
        try:
            # No redirects followed (the pipeline counts the hops), no cookie jar:
            # the crawler is stateless per request.
            prep = prepare_request(method, url, self._headers, headers,
                                   data.encode("utf-8") if data is not None else None)
            resp = self._sender.send(prep, min(cfg.connect_timeout, cfg.deadline),
                                     min(cfg.read_timeout, cfg.deadline), deadline_at, cap)
            status = resp.status
            kept = [] if cfg.keep_http else None   # the payload as received, for the WARC
            if keep_body and 200 <= status < 300:
                body, truncated, note = read_body(resp, cap, deadline_at, kept)
                cut = truncated
            else:
                body, truncated, note = b"", False, None
                cut = not drain(resp, deadline_at, kept)
        except Exception as e:       # noqa: BLE001 - classified below, unknown re-raised
            if resp is not None:
                resp.close()
            cls = classify_exception(e)
            if cls is None:
                raise
            network = cls[0] != FORBIDDEN_ADDRESS and cls[1] not in ("dns", "bad_url")
            return Failure(cls[0], cls[1], t0, (time.monotonic() - m0) * 1000, network)
        return Response(url=url, status=status, headers=resp.headers, body=body,
                         truncated=truncated, note=note, fetch_time=t0,
                         elapsed_ms=(time.monotonic() - m0) * 1000,
                         http=http_exchange(prep, resp, kept, body, cut, self._addresses) if cfg.keep_http else None)

    # -- bookkeeping

    def _record(self, state: HostState, rnd: HostRound, out: Response | Failure,
                failure_reason: str | None) -> None:
        end = self.clock()
        if isinstance(out, Failure) and not out.network:
            return
        rnd.last_end = end                       # this connection slot's politeness clock
        unit = rnd.unit
        if unit is not None:
            unit.last_end = max(unit.last_end, end)
            unit.failures = unit.failures + 1 if failure_reason is not None else 0
        with rnd.lock:
            state.fetches += 1
            state.last_fetch_time = max(end, state.last_fetch_time or end)
            if failure_reason is not None:
                state.errors += 1
                state.consecutive_failures += 1
                state.last_error = failure_reason
                rnd.failures += 1
            else:
                state.consecutive_failures = 0
                rnd.failures = 0

    # -- robots

    # -- pages

    def _fetch_page(self, req: FetchRequest, state: HostState, rnd: HostRound) -> FetchResult:
        headers = {}
        if req.etag:
            headers["If-None-Match"] = req.etag
        if req.last_modified:
            headers["If-Modified-Since"] = req.last_modified
        method, data = "GET", None
        if post.is_post(req.method):
            method, data, headers = post.POST, req.body or "", post.headers()
        self._wait_turn(rnd)
        out = self._request(req.url, headers or None, self.config.max_body, keep_body=True,
                            method=method, data=data)
        if isinstance(out, Failure):
            self._record(state, rnd, out, out.reason if out.outcome == TRANSIENT else None)
            return FetchResult(url=req.url, fp=req.fp, fetch_time=out.fetch_time,
                               elapsed_ms=out.elapsed_ms, outcome=out.outcome, reason=out.reason)
        h = out.headers
        status = out.status
        ctype = h.get("Content-Type")
        res = FetchResult(url=req.url, fp=req.fp, fetch_time=out.fetch_time,
                          elapsed_ms=out.elapsed_ms, outcome=OK, http_status=status,
                          content_type=media_type(ctype), content_type_header=ctype,
                          etag=h.get("ETag"), last_modified=h.get("Last-Modified"),
                          x_robots_tag=h.get("X-Robots-Tag"), http=out.http)
        failure = None
        if 200 <= status < 300:
            res.body, res.truncated, res.reason = out.body, out.truncated, out.note
        elif status == 304:
            res.outcome = NOT_MODIFIED
            res.etag = res.etag or req.etag
            res.last_modified = res.last_modified or req.last_modified
        elif 300 <= status < 400:
            loc = redirect_target(h)
            if loc:
                res.outcome = REDIRECT
                res.redirect_to = urljoin(req.url, loc.strip())
                res.reason = f"http_{status}"
            else:
                res.outcome, res.reason = HTTP_ERROR, "redirect_without_location"
        elif status in (429, 503) and h.get("Retry-After") is not None:
            res.outcome, res.reason = TRANSIENT, "retry_after"
            res.retry_after = parse_retry_after(h.get("Retry-After"), self.clock())
            if res.retry_after is None:
                res.reason = f"http_{status}"
            failure = res.reason
        elif status in (408, 429) or 500 <= status < 600:
            res.outcome, res.reason = TRANSIENT, f"http_{status}"
            failure = res.reason
        else:   # other 4xx, and nonsense like 999 or 1xx: permanent
            res.outcome, res.reason = HTTP_ERROR, f"http_{status}"
        self._record(state, rnd, out, failure)
        return res

    def _no_request(self, req: FetchRequest, outcome: str, reason: str,
                    retry_after: float | None = None) -> FetchResult:
        return FetchResult(url=req.url, fp=req.fp, fetch_time=self.clock(), elapsed_ms=0.0,
                           outcome=outcome, reason=reason, retry_after=retry_after)

    # -- the host

    def fetch_host(self, host: str, requests: list[FetchRequest],
                   state: HostState | None, observe: Callable | None = None
                   ) -> tuple[list[FetchResult], HostState]:
        """Fetch `requests` (all of one host) in order; results are in the same order.

        Never raises for a request's failure: an unexpected exception turns this and the
        remaining URLs into TRANSIENT 'internal_error: ...' results. `observe(result)` is
        called as each result is recorded (the progress meter, the streaming hand-off); a
        result it returns True for is its own then and not among those returned.
        """
        state = dataclasses.replace(state, sitemaps=list(state.sitemaps or [])) if state else HostState(host)
        results = ObservedResults(observe) if observe else []
        try:
            self._fetch_all(requests, state, results)
        except Exception as e:  # noqa: BLE001 - a bug must not lose the host's other results
            log.exception("fetcher: internal error on host %s", host)
            why = f"internal_error: {type(e).__name__}: {e}"[:500]
            for req in requests[len(results):]:
                results.append(self._no_request(req, TRANSIENT, why))
        return (results.kept if observe else results), state

    def _fetch_all(self, reqs: list[FetchRequest], state: HostState, results: list) -> None:
        cfg = self.config
        start = self.clock()
        rnd = HostRound.starting(state.last_fetch_time, start)
        rnd.robots_done = not cfg.obey_robots
        for i, req in enumerate(reqs):
            results.append(self._fetch_one(req, state, rnd, start))
            if (cfg.conns_per_host > 1 and i + 1 < len(reqs) and rnd.robots_done
                    and not rnd.crawl_delay and not rnd.slow_down):
                # robots.txt is known and asks no Crawl-delay: the rest over parallel slots
                fetch_in_slots(self, reqs[i + 1:], state, rnd, start, results)
                return

    def slot_fetcher(self) -> "HostFetcher":
        """Another connection to the same host (--conns_per_host): its own connections."""
        return HostFetcher(self.config, self.clock, self.sleep, self.resolver, self.renderer)

    def _fetch_one(self, req: FetchRequest, state: HostState, rnd, start: float) -> FetchResult:
        """One URL of the host: the round's pauses and parking, address guard, robots.txt
        (fetched on the first URL that gets that far), then the request itself."""
        cfg = self.config
        if cfg.host_budget is not None and self.clock() - start > cfg.host_budget:
            return self._no_request(req, TRANSIENT, "host_budget")
        if rnd.paused_for is not None:
            return self._no_request(req, TRANSIENT, "host_paused", rnd.paused_for)
        if rnd.failures >= cfg.max_consecutive_failures or (
                rnd.unit is not None and rnd.unit.failures >= cfg.max_consecutive_failures):
            return self._no_request(req, TRANSIENT, "host_parked")
        try:
            _scheme, hostname, port = origin_port(req.url)
        except ValueError:
            return self._no_request(req, HTTP_ERROR, "bad_url")
        is_post = post.is_post(req.method)
        if is_post and not post.allowed(cfg.post_hosts, hostname, port):
            return self._no_request(req, FAILED, "post_not_allowed")
        try:
            state.address = self._resolve(hostname, port, state, rnd)
        except ForbiddenAddressError as e:
            state.address = e.addr
            return self._no_request(req, FORBIDDEN_ADDRESS, e.reason)
        except ResolveError:
            return self._no_request(req, TRANSIENT, "dns")
        if not rnd.robots_done:
            rnd.robots_done = True
            self._robots(req.url, state, rnd)
            if rnd.robots_block in ROBOTS_CONNECT_FAILURES:
                self._connect_failed(hostname, state, rnd)
        if rnd.robots_block is not None:
            return self._no_request(req, TRANSIENT, rnd.robots_block)
        if rnd.policy is not None and not rnd.policy.allowed(req.url, cfg.user_agent):
            return self._no_request(req, ROBOTS_DENIED, "robots_txt")
        res = self._fetch_page(req, state, rnd)
        if res.reason in CONNECT_FAILURES:
            self._connect_failed(hostname, state, rnd)
        if res.reason == "retry_after":
            if res.retry_after <= cfg.retry_after_cap:
                rnd.not_before = self.clock() + res.retry_after
                # the server said we were too fast: not that fast again this round
                rnd.slow_down = max(rnd.slow_down, min(res.retry_after, cfg.max_crawl_delay))
                if is_post:
                    return post.settle(res)                # a POST is never sent twice
                res = self._fetch_page(req, state, rnd)   # once, after the pause
            if res.reason == "retry_after":
                rnd.paused_for = res.retry_after
        if is_post:
            return post.settle(res)   # not rendered either: a browser would GET the URL
        if self.renderer is not None and res.outcome == OK:   # --render: the DOM after scripts
            res = self.renderer.render_result(self, res, state, rnd)
        return res
