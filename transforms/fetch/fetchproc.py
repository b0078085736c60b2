"""A worker's fetching in processes of their own (`--fetch_process`; pure: no Beam).

In the round's process the fetch threads share one interpreter lock with the Beam stages
fused behind the fetch (handing pages to the page workers, emitting outputs, parsing the
batches the workers cannot take). Every request of a host's chain waits for that lock
several times, so a big host's one-connection chain ran at the pace of the whole process.
In a process of their own they share it only with each other, and the round uses both cores.

One pipe, one bundle at a time. The parent sends the bundle's jobs one by one, `("job", unit,
[(host, rows, state_row), ...])` (a politeness unit's hosts; longest first, as given),
keeping at most `window(threads)` of them sent and not done, then `("last",)`; the child
fetches them on its threads with `hostjob.fetch_unit` and sends, in the order they happen: `("host", host)` when a host
starts, `("page", host, page)` as each fetch ends, `("done", host, result)` behind a host's
last page, and `("end",)` once the last job is done, several to a pipe message (`Outbox`).
A full pipe makes the fetch threads wait, so memory holds the pages in flight, as in the
round's process; the window keeps the
child from holding the round's whole fetch list (sent at once, it grew the fetch process by
~26 MB in a 16 000-page round).

`FetchFleet` runs several such children (the threads divided among them) on one bundle:
each takes its next job from one shared queue, and the bundle's own thread moves all their
pipes (`fetch_in_children`).

Nothing is lost if the child dies (a crash, the OOM killer): each host without its "done"
gets its rows not yet received as transient results (retried next round) and its old host
row (`lost_host`). Later bundles fetch in the other children or, with none left, in the
parent's process, after one warning.

`BEAMCRAWL_CRASH_AT=fetch` (transforms.faults) kills the round's process, as without a fetch
process: the child does not crash itself, the parent crashes on the host's "done".
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import logging
import os
import queue
import threading
import time

from transforms import faults
from transforms.fetch.hostjob import (as_rows, fetch_pool, fetch_unit, host_row_unchanged,
                                      transient_pages)
from transforms.procs import Helper, usable_cores, wait_any

log = logging.getLogger(__name__)


# ------------------------------------------------------------------ the child

BATCH_BYTES = 1 << 20   # a batch of messages is cut at this many bytes of bodies


def _bytes(message) -> int:
    """The bytes of a message's page body (the rest of a page is small); 0 for other messages."""
    if message[0] != "page":
        return 0
    return len(message[2].get("body") or b"")


class Outbox:
    """The fetch threads' messages to the parent, sent by one thread in batches.

    With every fetch thread sending its own pages under a lock, 32 threads queued for it
    (half their time, by py-spy) and the parent woke once per page: the lock's holder, preempted
    or waiting for the interpreter lock, held up all the others. Here a thread takes a slot
    and queues its message (`queue.SimpleQueue`: no Python-level lock, no wake-up unless the
    sender sleeps); the sender sends whatever is queued as one list, up to `slots` messages
    or `BATCH_BYTES` of bodies. Messages keep their order. At most `slots` messages wait
    (a full pipe makes `put` block), so memory holds about as many pages as before: one per
    fetch thread. If the parent is gone the process exits: nobody would record the pages.
    """

    def __init__(self, conn, slots: int):
        self._conn, self._slots = conn, max(2, slots)
        self._queue, self._free = queue.SimpleQueue(), queue.SimpleQueue()
        for _ in range(self._slots):
            self._free.put(None)
        threading.Thread(target=self._run, name="fetch-outbox", daemon=True).start()

    def put(self, message) -> None:
        self._free.get()
        self._queue.put(message)

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            size = _bytes(batch[0])
            while size < BATCH_BYTES:
                try:
                    message = self._queue.get_nowait()
                except queue.Empty:
                    break
                batch.append(message)
                size += _bytes(message)
            try:
                self._conn.send(batch)
            except (OSError, ValueError):   # the parent is gone
                os._exit(0)
            for _ in batch:
                self._free.put(None)


def serve(conn, config, threads):
    """The child's loop: bundles of jobs in, their pages and results out, until None."""
    if os.environ.get(faults.ENV) == "fetch":
        os.environ.pop(faults.ENV)          # the parent crashes instead (module docstring)
    pool, factory = fetch_pool(config, threads)
    send = Outbox(conn, threads).put

    def one(unit, members):
        for host, _rows, _state in members:
            send(("host", host))
        try:
            results = fetch_unit(factory, members, None, lambda host, page: send(("page", host, page)))
        except BaseException as e:   # noqa: BLE001 - fetch_unit never raises; re-raised by the parent
            results = [RuntimeError(f"fetch process: {type(e).__name__}: {e}")] * len(members)
        for (host, _rows, _state), result in zip(members, results):
            send(("done", host, result))

    try:
        running = set()    # the jobs not done (each removes itself: no scan per job)
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):      # the parent is gone
                os._exit(0)
            if message is None:
                break
            if message[0] == "job":
                future = pool.submit(one, *message[1:])
                running.add(future)
                future.add_done_callback(running.discard)
            else:                            # ("last",): the bundle's jobs are all sent
                cf.wait(list(running))
                send(("end",))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


# ------------------------------------------------------------------ the parent

def fetch_processes(value: str, cores: int | None = None) -> int:
    """`--fetch_process`: a number of fetch processes, true (1), false (0, the round's own
    process), or auto: 2 where there are 2+ cores (`FetchFleet` says why), else 0. (A
    5 000-page bench50k round: one process used 2.44–2.54 CPU-seconds against 1.70–2.14 for
    two, three or four, and its round was 0.1–0.9 s slower.)"""
    if value == "auto":
        if (usable_cores() if cores is None else cores or 1) < 2:
            return 0
        return 2
    if value in ("true", "false"):
        return int(value == "true")
    return int(value)


def window(threads):
    """Jobs sent to the child and not done, at most: enough to keep its threads busy."""
    return 4 * max(1, threads)


def lost_host(host, rows, state_row, received, reason):
    """`fetch_one_host`'s result for a host the fetch process died on (or never sent to it):
    every row whose page was not `received` comes back transient, the host row unchanged,
    no sitemaps."""
    left = [r for r in as_rows(rows) if r["fp"] not in received]
    return (transient_pages(left, f"internal_error: fetch process died: {reason}"),
            host_row_unchanged(host, state_row), None)


class FetchProcess(Helper):
    """The child process and its pipe, for one DoFn instance (started once, many bundles).
    `broken` says why it stopped: bundles then fetch in the other children or in-process."""

    NAME = "beamcrawl-fetch"
    STOPPED = ("a fetch process stopped (%s); the other fetch processes, or with none left the "
               "round's process, fetch from now on (--fetch_process false fetches in the "
               "round's process from the start).")

    def __init__(self, config, threads):
        super().__init__()
        self.config, self.threads = config, threads

    def start(self):
        """Start the child in a background thread (the DoFn keeps receiving its hosts)."""
        return super().start(serve, self.config, self.threads)

    def fetch(self, jobs, max_ready=256):
        """Fetch a bundle's jobs in the child. Yields `("host", host)`, `("page", host, page)`
        and `("done", host, result)` as they happen; every job gets its "done", also when the
        child dies on the way (then from `lost_host`). `max_ready`: as `fetch_in_children`'s."""
        yield from fetch_in_children([self], jobs, max_ready)


class _ChildRun:
    """One fetch process's part of a bundle: jobs out (at most `window` of them not done,
    the next taken from the deque the bundle's children share), its messages in, and its
    hosts `lost_host` if it dies (the jobs it did not take stay for the others)."""

    def __init__(self, child, unsent):
        self.child, self.unsent, self.channel = child, unsent, child.channel()
        self.by_host = {}                # the hosts sent and not done
        self.unit_of, self.open_units = {}, {}   # host -> its unit; unit -> its hosts not done
        self.received = collections.defaultdict(set)
        self.last_sent = self.finished = False

    def begin_one(self):
        """One more job (or "last") if the window has room."""
        if not self.last_sent and len(self.open_units) < window(self.child.threads):
            self._send_next()

    def _send_next(self):   # the next job, or ("last",) once they are all sent
        try:
            unit, members = self.unsent.popleft()
        except IndexError:
            unit = None
        if unit is not None:   # as Python lists (HostRows), converted here: the child only
            # loads them (a 35-row host: 13.5 us, where a 30-row Arrow table took 225 us to pickle
            # and load, and converting it takes 72 us)
            for host, rows, state_row in members:
                self.by_host[host] = (rows, state_row)
                self.unit_of[host] = unit
            self.open_units[unit] = len(members)
            self.channel.put(("job", unit, [(h, as_rows(rows), st) for h, rows, st in members]))
        elif not self.last_sent:
            self.last_sent = True
            self.channel.put(("last",))

    def take(self, max_bytes=None) -> list:
        """The messages arrived by now (the child sends them in lists; `max_bytes` as
        `Channel.take`'s)."""
        out = []
        for batch in self.channel.take(max_bytes):
            for message in batch:
                kind = message[0]
                if kind == "end":       # the bundle's last message from this child
                    self.finished = True
                    return out
                if kind == "page":
                    self.received[message[1]].add(message[2]["fp"])
                elif kind == "done":   # a done host's pages are no longer needed for
                    del self.by_host[message[1]]   # `lost`: only hosts in flight are held
                    self.received.pop(message[1], None)
                    unit = self.unit_of.pop(message[1])
                    self.open_units[unit] -= 1
                    try:
                        if not self.open_units[unit]:   # the unit is done: the next job
                            del self.open_units[unit]
                            self._send_next()   # before the host's outputs go downstream
                    except (OSError, ValueError):   # the child is gone: these messages still
                        pass   # go out, and the next take() ends in EOFError (then `lost`)
                out.append(message)
        return out

    def lost(self, error) -> list:
        self.finished = True
        self.child._break(error)
        self.child.close(kill=True)
        return [("done", host, lost_host(host, rows, state_row, self.received[host], self.child.broken))
                for host, (rows, state_row) in self.by_host.items()]


TAKE_SECONDS = 0.005   # while a bundle's messages go downstream, the pipes are read this often
TAKE_BYTES = 4 << 20   # at most about this much is read from one pipe at a time


def _take_all(runs) -> list:
    """The messages every unfinished run has by now (a dead child's hosts come back lost)."""
    out = []
    for run in runs:
        if not run.finished:
            try:
                out += run.take(TAKE_BYTES)
            except (EOFError, OSError, ValueError) as e:
                out += run.lost(e)
    return out


def fetch_in_children(children, jobs, max_ready=256):
    """A bundle's jobs fetched by running fetch processes that share them (`FetchProcess.fetch`'s
    messages and guarantees). One thread, the bundle's own, moves every pipe (`procs.Channel`)
    and waits on all of them at once when none has anything: no reader thread per child, whose
    hand-offs through this busy process's interpreter lock held the children's pages back
    (their outboxes full, their fetch threads waiting). Jobs no child was left to take come
    back lost.

    While messages go downstream (each page through the fused page step), the pipes are read
    again every `TAKE_SECONDS` as long as fewer than `max_ready` messages wait here, at most
    `TAKE_BYTES` from a pipe at a time, and a host's "done" sends its child the next job at
    once; beyond that the pipes fill and the children wait. (Read only once all that was
    read had gone downstream, a take brought up to ~1 500 pages that kept this thread
    0.5-0.75 s, while each child finished its whole window of jobs and waited for more:
    one 5 000-page bench50k round took 11 takes in all.)"""
    unsent = collections.deque(jobs)
    runs = [_ChildRun(child, unsent) for child in children]
    completed = False
    try:
        ready = collections.deque()
        # the first windows dealt in turn: the longest hosts (first in `jobs`) go to every
        # child, not all to the first one (whose chains then ran on one core at the end)
        for _ in range(max((window(run.child.threads) for run in runs), default=0) + 1):
            for run in runs:
                if not run.finished:
                    try:
                        run.begin_one()
                    except (OSError, ValueError) as e:
                        ready += run.lost(e)
        while True:
            taken = time.perf_counter()
            while ready:
                message = ready.popleft()
                yield message
                if message[0] == "done":
                    faults.crash_point("fetch")
                if len(ready) < max_ready and time.perf_counter() - taken >= TAKE_SECONDS:
                    ready += _take_all(runs)
                    taken = time.perf_counter()
            active = [run for run in runs if not run.finished]
            if not active:
                break
            ready += _take_all(active)
            if not ready:
                try:
                    wait_any([run.channel for run in active if not run.finished], 0.5)
                except (OSError, ValueError):   # a pipe closed meanwhile: its take() says so
                    pass
        reason = "; ".join(c.broken for c in children if c.broken) or "no fetch process left"
        while unsent:   # every child died before taking these
            _unit, members = unsent.popleft()
            for host, rows, state_row in members:
                yield "done", host, lost_host(host, rows, state_row, (), reason)
        completed = True
    finally:
        if not completed:   # the bundle stopped reading (it failed downstream): the rest of
            for child in children:   # its messages must not reach the next bundle
                child.close(kill=True)


class FetchFleet:
    """`processes` fetch processes sharing a bundle's jobs (`--fetch_process N`).

    One process's fetch threads share one interpreter lock: with 32 threads on a fast web the
    fetch process spends its time handing that lock around, and one host alone fetched faster
    than 32 together. Split over several processes (the threads divided among them) the
    hand-offs fall and the cores left idle fetch. Each child takes its next job from one
    deque, longest first as given (`fetch_in_children`); a slow reader still stops the
    children (their pipes fill). A child that dies leaves its lost hosts (`lost_host`) and
    the jobs it did not take to the others; jobs no child was left to take come back lost too.
    """

    def __init__(self, config, threads, processes):
        n = max(1, int(processes))
        self.children = [FetchProcess(config, max(1, int(threads) // n)) for _ in range(n)]

    def start(self):
        for child in self.children:
            child.start()
        return self

    def ready(self):
        """Wait for the starts; True if any child runs (else fetch in-process)."""
        return any([child.ready() for child in self.children])

    def fetch(self, jobs, max_ready=256):
        """`FetchProcess.fetch` over the running children: same messages, same guarantees."""
        yield from fetch_in_children([child for child in self.children if child.ready()], jobs, max_ready)

    @property
    def broken(self):
        """Why children stopped (None while all run)."""
        return "; ".join(c.broken for c in self.children if c.broken) or None

    def close(self, kill=False):
        for child in self.children:
            child.close(kill=kill)
