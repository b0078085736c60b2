"""Whole-request deadlines: a request's socket is shut when its deadline passes.

`Watchdog` guards one request; `Deadlines` is the one thread per worker that fires them
(see its docstring for why not a timer thread per request).
"""
from __future__ import annotations

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
    the pace of a host's sequential fetch. Here a request only puts its deadline in an inbox
    (a `queue.SimpleQueue`, which takes no Python-level lock) and a cancel only clears the
    entry: with 32 fetch threads a shared `threading.Condition` around a heap made them
    queue for it (a third of their time, by py-spy), its holder preempted while holding it.
    The thread alone owns the heap; cancelled entries are dropped when they surface, and the
    heap is rebuilt every `REBUILD_EVERY` additions so they never pile up.
    Thread-safe; the thread starts with the first deadline and stops on `close`.
    """

    REBUILD_EVERY = 1024

    def __init__(self):
        self._inbox = queue.SimpleQueue()
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
        self._inbox.put(entry)
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        entry[2] = None          # one store: atomic under the interpreter lock

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._inbox.put(None)

    def _run(self) -> None:
        heap, inbox, added = self._heap, self._inbox, 0
        while True:
            while heap and heap[0][2] is None:
                heapq.heappop(heap)
            try:
                if not heap:
                    item = inbox.get()
                else:
                    wait = heap[0][0] - time.monotonic()
                    item = inbox.get(timeout=wait) if wait > 0 else inbox.get_nowait()
            except queue.Empty:
                item = ()
            if item is None:
                with self._lock:
                    if self._closed:          # else an `add` came after the close: go on
                        self._thread = None
                        return
                continue
            if item:
                heapq.heappush(heap, item)
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
