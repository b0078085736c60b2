"""The state of one host's fetch in one round (pure: no Beam).

`HostRound` is what `HostFetcher.fetch_host` keeps between a host's requests: when the last
response ended (the per-host delay runs from there), a Retry-After pause, consecutive
failures (backoff, then parking), the robots.txt rules and Crawl-delay. With several
connections to the host (`slots.py`) each slot sees it through a `SlotRound`: its own
politeness clock, everything else shared. A host fetched as one of a unit of hosts on one
server (`unitfetch.py`) also waits for its slot's clock (`unit`).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transforms.fetch import robots as robotsmod


class HostRound:
    """One host's state for one fetch_host call: the politeness clock, backoff, pause,
    parking, robots rules (shared by the host's connection slots)."""

    def __init__(self, last_end: float | None):
        self.last_end = last_end if last_end is not None else float("-inf")
        self.not_before = float("-inf")      # Retry-After pause
        self.failures = 0                    # consecutive failures this round
        self.crawl_delay: float | None = None
        self.policy: robotsmod.RobotsPolicy | None = None
        self.robots_block: str | None = None     # reason every remaining URL waits
        self.paused_for: float | None = None     # Retry-After beyond the cap
        self.slow_down = 0.0                     # gap a honoured Retry-After asked for
        self.robots_done = False                 # robots.txt consulted (or not obeyed)
        self.dns_seeded = False                  # the hosts table's DNS answer given to the resolver
        self.looked_up_again = False             # after a failed connection (once a round)
        self.lock = threading.Lock()             # connection slots share this round
        self.unit = None                         # unitfetch.UnitClock: the slot of a unit of hosts

    @classmethod
    def starting(cls, last_fetch_time: float | None, now: float) -> "HostRound":
        """The round of a host last fetched at `last_fetch_time` (None: never), begun at `now`.
        A last fetch "in the future" (clock skew between workers) counts as `now`: it must not
        stall the host for the difference."""
        return cls(None if last_fetch_time is None else min(last_fetch_time, now))


class SlotRound:
    """One connection slot's view of the host's round: its own politeness clock
    (`last_end`), every other field the shared round's."""

    def __init__(self, shared):
        object.__setattr__(self, "_shared", shared)
        object.__setattr__(self, "last_end", shared.last_end)

    def __getattr__(self, name):
        return getattr(self._shared, name)

    def __setattr__(self, name, value):
        if name == "last_end":
            object.__setattr__(self, name, value)
        else:
            setattr(self._shared, name, value)
