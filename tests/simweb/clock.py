"""Injectable clocks. A clock is any zero-argument callable returning epoch seconds."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path


class RealClock:
    def __call__(self) -> float:
        return time.time()

    def __repr__(self):
        return "RealClock()"


class SimClock:
    """Simulated time that tests advance explicitly (thread-safe)."""

    def __init__(self, start: float):
        self._t = float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._t

    def set(self, t: float) -> None:
        with self._lock:
            self._t = float(t)

    def advance(self, dt: float) -> float:
        with self._lock:
            self._t += float(dt)
            return self._t

    def __repr__(self):
        return f"SimClock({self._t})"


class FileClock:
    """Simulated time read from a text file holding epoch seconds (re-read when it changes).

    Used by the subprocess server (``--clock-file FILE``): a test writes a new number into
    the file (write a temp file and rename it, see :func:`set_file_clock`) to advance time.
    A missing or unreadable file means ``default``.
    """

    def __init__(self, path: "str | Path", default: float):
        self.path = Path(path)
        self.default = float(default)
        self._cache = (None, self.default)

    def __call__(self) -> float:
        try:
            st = os.stat(self.path)
        except OSError:
            return self.default
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if self._cache[0] == key:
            return self._cache[1]
        try:
            t = float(self.path.read_text().strip())
        except (OSError, ValueError):
            return self._cache[1]
        self._cache = (key, t)
        return t


def set_file_clock(path: "str | Path", t: float) -> None:
    """Atomically write simulated time ``t`` into a clock file."""
    path = Path(path)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(repr(float(t)))
    os.replace(tmp, path)
