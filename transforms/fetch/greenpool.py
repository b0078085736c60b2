"""Host fetches as greenlets on one event loop (`--fetch_engine loop`; pure: no Beam).

With 16 fetch threads in a process, every request hands the interpreter lock over several
times (send, headers, each body read): `HostFetcher` against nginx (scratch benchmark, 8 000
pages) cost 0.33 ms of CPU a page on 16 threads, 0.62 ms on 128; as greenlets of one loop
sending through aiohttp (loopsender.py), 0.19 and 0.33 ms.

The host fetcher's code stays as it is, synchronous: `GreenPool.submit(fn, *args)` runs `fn`
in a greenlet on the pool's event-loop thread, and where that code would block (a request, a
body read, a politeness pause, a DNS lookup) it calls `await_only(awaitable)`, which switches
to the loop until the awaitable is done. So a host's logic (politeness, robots, retries,
classification) is written once and runs either on threads or on the loop.

`GreenPool` has the part of `ThreadPoolExecutor`'s interface the fetch step uses (`submit`
returning a `concurrent.futures.Future`, `shutdown`); at most `max_workers` jobs run at once,
started in the order submitted. A job that blocks without `await_only` (a full page queue,
say) holds up the whole loop: that is the back-pressure the thread pool had too.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading

import greenlet


class _Green(greenlet.greenlet):
    """A pool job's greenlet: `await_only` may switch out of it."""


def in_green() -> bool:
    """True when running in a `GreenPool` job (blocking must go through `await_only`)."""
    return isinstance(greenlet.getcurrent(), _Green)


def await_only(awaitable):
    """From synchronous code in a pool job: the result of `awaitable`, awaited on the loop
    (its exception raised here)."""
    current = greenlet.getcurrent()
    if not isinstance(current, _Green):
        raise RuntimeError("await_only called outside a GreenPool job")
    return current.parent.switch(awaitable)


async def run_green(fn, *args):
    """`fn(*args)` in a greenlet of its own; each `await_only` inside it is awaited here."""
    job = _Green(fn, parent=greenlet.getcurrent())
    pending = job.switch(*args)
    while not job.dead:
        try:
            value = await pending
        except BaseException as e:   # noqa: BLE001 - raised inside the job, where it was awaited
            pending = job.throw(e)
        else:
            pending = job.switch(value)
    return pending


def run_concurrently(calls) -> None:
    """Call each of `calls` (no arguments) at the same time and return when all are done:
    as greenlets of the current pool job's loop, or as threads outside a pool. Exceptions
    are the callers' to catch inside each call."""
    if in_green():
        async def gather():
            await asyncio.gather(*(run_green(c) for c in calls))
        await_only(gather())
        return
    threads = [threading.Thread(target=c, name="fetch-slot", daemon=True) for c in calls[1:]]
    for t in threads:
        t.start()
    if calls:
        calls[0]()
    for t in threads:
        t.join()


class GreenPool:
    """Runs submitted jobs as greenlets on an event loop in a thread of its own."""

    def __init__(self, max_workers: int, name: str = "fetch-loop"):
        self._loop = asyncio.new_event_loop()
        self._slots = asyncio.Semaphore(max(1, int(max_workers)))
        self._tasks: set[asyncio.Task] = set()      # submitted, not done
        self._running: set[asyncio.Task] = set()    # ... and holding a slot
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    def submit(self, fn, *args) -> cf.Future:
        if self._closed:
            raise RuntimeError("cannot submit to a GreenPool after shutdown")
        return asyncio.run_coroutine_threadsafe(self._job(fn, args), self._loop)

    async def _job(self, fn, args):
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            async with self._slots:
                self._running.add(task)
                return await run_green(fn, *args)
        finally:
            self._tasks.discard(task)
            self._running.discard(task)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Stop the loop once its jobs are done (with `cancel_futures`, jobs not started yet
        are cancelled; running ones finish, as in a thread pool)."""
        if self._closed:
            return
        self._closed = True

        async def stop():
            if cancel_futures:
                for t in self._tasks - self._running:
                    t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._loop.stop()

        asyncio.run_coroutine_threadsafe(stop(), self._loop)
        if wait:
            self._thread.join()
            self._loop.close()
