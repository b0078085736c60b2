"""A host's fetch results as they are recorded, for an observer (pure: no Beam).

The progress meter counts each result and the streaming hand-off (`hostjob.fetch_one_host`)
turns it into its page at once; `HostFetcher.fetch_host` returns only the results nobody took.
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class ObservedResults:
    """Results shown to an observer as each is recorded; one it took (returned True: the
    streaming hand-off owns its page) is counted, not kept (kept to the host's end, ~0.5 KB
    each with the body gone: ~8 MB for a 15 000-URL host in a fetch process)."""

    def __init__(self, observe):
        self.observe, self.kept, self.count = observe, [], 0

    def __len__(self):   # results recorded, taken or kept (the requests done)
        return self.count

    def show(self, result) -> bool:   # True if the observer took `result`
        try:
            return bool(self.observe(result))
        except Exception:   # noqa: BLE001 - a progress meter must never fail a fetch
            log.debug("fetch progress observer failed", exc_info=True)
            return False

    def record(self, result, taken: bool) -> None:
        self.count += 1
        if not taken:
            self.kept.append(result)

    def append(self, result) -> None:   # shown, then recorded
        self.record(result, self.show(result))
