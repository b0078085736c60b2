"""Whole-request deadlines: a request's socket is shut when its deadline passes.

`Watchdog` guards one request; `Deadlines` is the one thread per worker that fires them
(see its docstring for why not a timer thread per request).
"""
from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time


class Deadlines:
    """One thread that fires the deadlines of every request of a worker.

    A timer thread per request costs each request a thread start, which waits for the new
    thread to take the interpreter lock: under a busy round that wait, not the network, set
    the pace of a host's sequential fetch. Here a request only pushes its deadline on a heap
    (cancelled entries are dropped lazily, and the heap is rebuilt when they dominate).
    Thread-safe; the thread starts with the first deadline and stops on `close`.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._heap: list = []
        self._seq = itertools.count()
        self._cancelled = 0
        self._thread = None
        self._closed = False

    def add(self, at: float, watchdog) -> list:
        """Fire `watchdog` at monotonic time `at` unless the returned entry is cancelled."""
        entry = [at, next(self._seq), watchdog]
        with self._cond:
            if self._thread is None or not self._thread.is_alive():
                self._closed = False
                self._thread = threading.Thread(target=self._run, name="fetch-deadlines", daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify()
        return entry

    def cancel(self, entry: list) -> None:
        with self._cond:
            if entry[2] is None:
                return
            entry[2] = None
            self._cancelled += 1
            if self._cancelled > 1024 and self._cancelled * 2 > len(self._heap):
                self._heap = [e for e in self._heap if e[2] is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            due = []
            with self._cond:
                while not due:
                    if self._closed:
                        return
                    while self._heap and self._heap[0][2] is None:
                        heapq.heappop(self._heap)
                        self._cancelled -= 1
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait > 0:
                        self._cond.wait(wait)
                        continue
                    while self._heap and (self._heap[0][2] is None or self._heap[0][0] <= time.monotonic()):
                        entry = heapq.heappop(self._heap)
                        if entry[2] is None:
                            self._cancelled -= 1
                        else:
                            due.append(entry[2])
                            entry[2] = None
            for watchdog in due:
                watchdog.fire()


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
