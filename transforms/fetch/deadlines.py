"""Whole-request deadlines: a request's socket is shut when its deadline passes.

`Watchdog` guards one request; `Deadlines` is the one thread per worker that fires them
(see its docstring for why not a timer thread per request).
"""
from __future__ import annotations

import collections
import heapq
import itertools
import queue
import socket
import threading
import time


class Deadlines:
    """One thread that fires the deadlines of every request of a worker.

    A timer thread per request costs each request a thread start, which waits for the new
    thread to take the interpreter lock: under a busy round that wait, not the network, set
    the pace of a host's sequential fetch. A shared `threading.Condition` around a heap made
    32 fetch threads queue for it (a third of their time, by py-spy), and waking the thread
    per request costs a context switch per request. Here a request only appends its entry
    to a deque and a cancel only clears it (each one step, atomic under the interpreter
    lock); the thread, which alone owns the heap, takes the new entries every `TICK` seconds
    while any deadline is pending, so a deadline fires at most `TICK` late. With nothing
    pending it sleeps until an `add` wakes it. Cancelled entries are dropped when they surface,
    and the heap is rebuilt every `REBUILD_EVERY` additions so they never pile up.
    The thread starts with the first deadline and stops on `close`.
    """

    TICK = 0.05
    REBUILD_EVERY = 1024

    def __init__(self):
        self._new: collections.deque = collections.deque()
        self._wake = queue.SimpleQueue()    # a token: an entry came while the thread slept
        self._idle = False
        self._heap: list = []
        self._seq = itertools.count()
        self._lock = threading.Lock()       # only to start and stop the thread
        self._thread = None
        self._closed = False

    def add(self, at: float, watchdog) -> list:
        """Fire `watchdog` at monotonic time `at` unless the returned entry is cancelled."""
        entry = [at, next(self._seq), watchdog]
        if self._thread is None or self._closed:
            with self._lock:
                self._closed = False
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="fetch-deadlines",
                                                    daemon=True)
                    self._thread.start()
        self._new.append(entry)
        if self._idle:
            self._idle = False
            self._wake.put(True)
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        entry[2] = None          # one store: atomic under the interpreter lock

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._wake.put(None)

    def _run(self) -> None:
        heap, new, added = self._heap, self._new, 0
        while True:
            while new:
                heapq.heappush(heap, new.popleft())
                added += 1
                if added % self.REBUILD_EVERY == 0:
                    heap[:] = [e for e in heap if e[2] is not None]
                    heapq.heapify(heap)
            now = time.monotonic()
            due = []
            while heap and (heap[0][2] is None or heap[0][0] <= now):
                entry = heapq.heappop(heap)
                watchdog, entry[2] = entry[2], None
                if watchdog is not None:
                    due.append(watchdog)
            for watchdog in due:
                watchdog.fire()
            if heap:
                wait = min(self.TICK, max(0.0, heap[0][0] - time.monotonic()))
            else:
                self._idle = True
                wait = None if not new else 0.0
            try:
                token = self._wake.get(timeout=wait) if wait != 0.0 else self._wake.get_nowait()
            except queue.Empty:
                token = True
            self._idle = False
            if token is None:
                with self._lock:
                    if self._closed:          # else an `add` came after the close: go on
                        self._thread = None
                        return


class Watchdog:
    """Shuts the request's socket down when the whole-request deadline passes, which
    unblocks any read (headers or body) however slowly the server trickles. Fired by the
    worker's `Deadlines` thread, or by a timer thread of its own when it has none."""

    def __init__(self, seconds: float, deadlines: Deadlines | None = None):
        self.fired = False
        self._conn = None
        self._lock = threading.Lock()
        self._deadlines = deadlines
        if deadlines is not None:
            self._entry = deadlines.add(time.monotonic() + max(seconds, 0.0), self)
        else:
            self._timer = threading.Timer(max(seconds, 0.0), self.fire)
            self._timer.daemon = True
            self._timer.start()

    def attach(self, conn) -> None:
        with self._lock:
            self._conn = conn
            fired = self.fired
        if fired:
            self._kill(conn)

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            conn = self._conn
        if conn is not None:
            self._kill(conn)

    @staticmethod
    def _kill(conn) -> None:
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:   # the plain-socket shutdown, also for an SSLSocket (no TLS state touched)
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        if self._deadlines is not None:
            self._deadlines.cancel(self._entry)
        else:
            self._timer.cancel()


class _NeverFires:
    """`Watchdog.NEVER`: a request whose waits are bounded elsewhere (a green fetcher's, by
    the event loop: loopsender) has nothing to shut down."""
    fired = False

    def attach(self, conn) -> None:
        pass

    def cancel(self) -> None:
        pass


Watchdog.NEVER = _NeverFires()
