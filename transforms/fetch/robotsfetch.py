"""robots.txt for one host as the host fetcher gets it: cached in the host state for
--robots_ttl, else fetched (redirects followed, each hop's address guarded) and turned into
the round's policy, crawl delay or block (RFC 9309; the rules are in `robots`).

Unreachable (5xx, 429, a network error): the host waits, round after round, while the host
state keeps the last copy that was reached (`robots_body`) and since when it has been
unreachable (`robots_unreachable_since`). After `ROBOTS_UNREACHABLE_DAYS` days, RFC 9309
2.3.1.4 lets a crawler either take the file as unavailable (allow all) or keep using a
cached copy; this crawler keeps obeying the last copy it reached (and 2.4 lets a copy of an
unreachable file be used past 24 h): a site that disallowed a path before its robots.txt
broke has not allowed it since. With no copy ever reached it is unavailable (2.3.1.3).
That decision is cached for --robots_ttl like a fetched one, and the streak ends when a
fetch reaches the file again.

`RobotsFetching` is a part of `hostfetcher.HostFetcher`: it uses the fetcher's clock,
config, politeness turn (`_wait_turn`), request (`_request`) and bookkeeping (`_record`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from schemas.tables import FORBIDDEN_ADDRESS
from transforms.fetch import robots as robotsmod
from transforms.fetch.connection import Failure, origin_port
from transforms.fetch.records import HostState

ROBOTS_UNREACHABLE_DAYS = 30        # RFC 9309 2.3.1.4's "reasonably long period"

if TYPE_CHECKING:   # the per-host round state lives with the fetcher that owns it
    from transforms.fetch.hostround import HostRound


class RobotsFetching:
    """The robots.txt half of a HostFetcher (sets rnd.policy / rnd.robots_block)."""

    def _robots(self, first_url: str, state: HostState, rnd: HostRound) -> None:
        """Sets rnd.policy (or rnd.robots_block) and the robots fields of `state`."""
        now = self.clock()
        if (state.robots_state in (robotsmod.PARSED, robotsmod.ALLOW_ALL)
                and state.robots_fetched_at is not None
                and now - state.robots_fetched_at < self.config.robots_ttl):
            rnd.policy = state.robots_policy()
        else:
            self._fetch_robots(first_url, state, rnd)
        if rnd.policy is not None:
            rnd.crawl_delay = rnd.policy.crawl_delay(self.config.user_agent)
            if rnd.crawl_delay is not None and rnd.crawl_delay > self.config.max_crawl_delay:
                rnd.robots_block = "crawl_delay_too_long"

    def _fetch_robots(self, first_url: str, state: HostState, rnd: HostRound) -> None:
        scheme, _host, _port = origin_port(first_url)
        parts = urlsplit(first_url)
        url = f"{scheme}://{parts.netloc.rsplit('@', 1)[-1]}/robots.txt"
        headers = {"Accept": "text/plain,*/*;q=0.8"}
        policy = None
        status = None
        block = None
        for _hop in range(robotsmod.ROBOTS_MAX_REDIRECTS + 1):
            self._wait_turn(rnd)
            out = self._request(url, headers, robotsmod.ROBOTS_MAX_BYTES, keep_body=True)
            if isinstance(out, Failure):
                reason = ("robots_forbidden_address" if out.outcome == FORBIDDEN_ADDRESS
                          else f"robots_{out.reason}")
                self._record(state, rnd, out, reason)
                status, block = None, reason
                break
            status = out.status
            kind = robotsmod.robots_outcome(status)
            failed = kind == robotsmod.DISALLOW_ALL
            reason = ("robots_429" if status == 429 else "robots_5xx") if failed else None
            self._record(state, rnd, out, reason)
            if kind is None:
                loc = out.headers.get("Location")
                if not loc:
                    policy = robotsmod.RobotsPolicy.allow_all()
                    break
                url = urljoin(url, loc.strip())
                try:
                    origin_port(url)
                except ValueError:
                    policy = robotsmod.RobotsPolicy.allow_all()
                    break
                continue
            if kind == robotsmod.PARSED:
                policy = robotsmod.RobotsPolicy.parse(robotsmod.decode_robots(out.body, out.truncated))
            elif kind == robotsmod.ALLOW_ALL:
                policy = robotsmod.RobotsPolicy.allow_all()
            else:
                block = reason
            break
        else:
            policy = robotsmod.RobotsPolicy.allow_all()     # > 5 hops: unavailable (RFC 9309)

        now = state.robots_fetched_at = self.clock()
        state.robots_status = status
        if policy is None:                      # unreachable: 5xx, 429, network
            since = state.robots_unreachable_since = state.robots_unreachable_since or now
            if now - since < ROBOTS_UNREACHABLE_DAYS * 86400:
                state.robots_state = robotsmod.DISALLOW_ALL   # (robots_body: the last copy reached)
                rnd.robots_block = block or "robots_error"
                return
            policy = (robotsmod.RobotsPolicy.parse(state.robots_body) if state.robots_body is not None
                      else robotsmod.RobotsPolicy.allow_all())
        else:
            state.robots_unreachable_since = None
        state.robots_state = policy.state
        state.robots_body = policy.body if policy.state == robotsmod.PARSED else None
        state.sitemaps = policy.sitemaps
        state.crawl_delay = policy.crawl_delay(self.config.user_agent)
        rnd.policy = policy
