"""Progress of a worker's fetching while a round runs (pure: no Beam).

A round's fetch can take minutes; without this a user sees nothing until the summary.
`FetchProgress` is updated by the fetch threads (a page at a time, through
`HostFetcher.fetch_host(..., observe=)`) and read by a `ProgressReporter` thread that
prints `progress_line` every few seconds on stderr, or draws a tqdm bar where stderr is a
terminal. The same figures reach the engine's UI as Beam metrics (fetch/step.py).

On a distributed runner each worker reports its own share; `planned` is the whole round's
fetch list, so there "done" counts this worker's pages only (the line says so).
"""
from __future__ import annotations

import threading
import time

from schemas import tables

ERROR_OUTCOMES = (tables.HTTP_ERROR, tables.FAILED, "transient")


class FetchProgress:
    """Thread-safe counters of one worker's fetching."""

    def __init__(self, clock=time.monotonic):
        self._lock = threading.Lock()
        self._clock = clock
        self.started = clock()
        self.planned = 0          # URLs in the round's fetch list (0: not known yet)
        self.done = 0             # URLs with a result (fetched, refused or failed)
        self.bytes = 0            # body bytes received
        self.errors = 0           # http errors and transient failures
        self.active = 0           # hosts being fetched now
        self.hosts_done = 0

    def host_started(self):
        with self._lock:
            self.active += 1

    def host_finished(self):
        with self._lock:
            self.active -= 1
            self.hosts_done += 1

    def page(self, result):
        """One URL's result (a FetchResult, or a page dict as the fetch process hands it)."""
        if isinstance(result, dict):
            body, outcome = result.get("body"), result.get("outcome")
        else:
            body, outcome = getattr(result, "body", None), getattr(result, "outcome", None)
        with self._lock:
            self.done += 1
            self.bytes += len(body) if body else 0
            if outcome in ERROR_OUTCOMES:
                self.errors += 1

    def snapshot(self) -> dict:
        with self._lock:
            elapsed = max(self._clock() - self.started, 1e-9)
            rate = self.done / elapsed
            left = max(self.planned - self.done, 0)
            return {"done": self.done, "planned": self.planned, "bytes": self.bytes,
                    "errors": self.errors, "active_hosts": self.active,
                    "hosts_done": self.hosts_done, "seconds": elapsed, "pages_per_s": rate,
                    "eta_s": (left / rate) if rate > 0 and self.planned else None}


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n} B"


def _duration(s: float | None) -> str:
    if s is None:
        return "?"
    s = round(s)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def progress_line(snap: dict, worker_share: bool = False) -> str:
    """One line: pages done / planned, pages/s, bytes, active hosts, errors, time left."""
    planned = snap["planned"]
    done = f"{snap['done']}/{planned}" if planned else f"{snap['done']}"
    pct = f" ({100.0 * snap['done'] / planned:.0f}%)" if planned and not worker_share else ""
    share = " (this worker)" if worker_share else ""
    return (f"fetch: {done} pages{pct}{share} · {snap['pages_per_s']:.1f} pages/s · "
            f"{_size(snap['bytes'])} · {snap['active_hosts']} hosts active · "
            f"{snap['errors']} errors · ~{_duration(snap['eta_s'])} left")


class ProgressReporter:
    """A daemon thread that shows `progress` every `every` seconds until `stop()`.

    bar=True draws a tqdm bar (for a terminal); otherwise one `progress_line` per tick is
    written to `stream`. Nothing is shown for a fetch shorter than one tick.
    """

    def __init__(self, progress: FetchProgress, every: float, stream, bar: bool = False,
                 worker_share: bool = False):
        self.progress, self.every, self.stream = progress, float(every), stream
        self.bar, self.worker_share = bar, worker_share
        self._stop = threading.Event()
        self._thread = None
        self._tqdm = None
        self.lines = 0

    def start(self):
        if self.every > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="fetch-progress", daemon=True)
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.every):
            self.show()

    def show(self):
        snap = self.progress.snapshot()
        if self.bar:
            self._draw(snap)
        else:
            self.stream.write(progress_line(snap, self.worker_share) + "\n")
            self.stream.flush()
        self.lines += 1

    def _draw(self, snap):
        from tqdm import tqdm  # only where a bar is drawn
        if self._tqdm is None:
            self._tqdm = tqdm(total=snap["planned"] or None, unit="page", desc="fetch",
                              file=self.stream, dynamic_ncols=True, leave=False)
        self._tqdm.total = snap["planned"] or None
        self._tqdm.n = snap["done"]
        self._tqdm.set_postfix_str(f"{_size(snap['bytes'])}, {snap['active_hosts']} hosts, "
                                   f"{snap['errors']} errors", refresh=False)
        self._tqdm.refresh()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
