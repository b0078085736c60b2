"""Page fates on other processes, so parsing uses the cores the fetch threads leave idle.

A round's fetch is many threads waiting on sockets; its page step is CPU. In one process
they share one interpreter lock: parsing then delays every fetch thread's next request (the
politeness chain of a big host is as slow as the lock lets it be) and the round uses one
core. `FatePool` runs `page_fate` on batches of pages in worker processes started from a
clean fork server (never forked from a process with live threads), so the page step runs
beside the fetch. Pages go in and fates come back pickled; the fates are identical to
computing them inline (`page_fate` is a pure function of page and config).

Small rounds stay inline: a pool is only started once a bundle has `min_pages` pages, so a
round of a few hundred pages pays no process start-up.
"""
import concurrent.futures as cf
import multiprocessing
import os
import time

from transforms.page.fate import page_fate

PRELOAD = ["transforms.page.fate"]   # imported once by the fork server, inherited by workers


def auto_processes(cores=None) -> int:
    """`--page_processes auto`: one worker per core but the one the fetch threads use."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(0, (cores or 1) - 1)


def page_fates(pages, config):
    """The fates of a batch of pages, and the seconds they took (runs in a worker)."""
    started = time.perf_counter()
    fates = [page_fate(p, config) for p in pages]
    return fates, time.perf_counter() - started


class FatePool:
    """Batches of pages -> their fates, computed by `processes` worker processes.

    `submit` queues pages and returns the batches already done; `drain` waits for the rest.
    At most `inflight` batches are outstanding: `submit` blocks on the oldest beyond that,
    so a fast fetch never piles its bodies up in memory ahead of the parse.
    """

    def __init__(self, config, processes, batch=16, inflight=None):
        self.config, self.processes, self.batch = config, processes, batch
        self.inflight = inflight or 4 * processes
        self._queue, self._pending, self._executor = [], set(), None

    def _start(self):
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        self._executor = cf.ProcessPoolExecutor(self.processes, mp_context=ctx)

    def submit(self, page):
        self._queue.append(page)
        if len(self._queue) < self.batch:
            return []
        return self._send()

    def _send(self):
        if self._executor is None:
            self._start()
        batch, self._queue = self._queue, []
        self._pending.add(self._executor.submit(page_fates, batch, self.config))
        block = len(self._pending) >= self.inflight
        done, self._pending = cf.wait(self._pending, timeout=None if block else 0,
                                      return_when=cf.FIRST_COMPLETED)
        return [f.result() for f in done]

    def drain(self):
        """Every outstanding batch's (fates, seconds), as each completes."""
        if self._queue:
            yield from self._send()
        pending, self._pending = self._pending, set()
        for f in cf.as_completed(pending):
            yield f.result()

    def close(self):
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
