"""Page fates on other processes, so parsing uses the cores the fetch threads leave idle.

A round's fetch is many threads waiting on sockets; its page step is CPU. In one process
they share one interpreter lock: parsing then delays every fetch thread's next request (the
politeness chain of a big host is as slow as the lock lets it be) and the round uses one
core. `FatePool` runs `page_fate` on batches of pages in worker processes started from a
clean fork server (never forked from a process with live threads), so the page step runs
beside the fetch. Pages go in and fates come back pickled; the fates are identical to
computing them inline (`page_fate` is a pure function of page and config).

Neither the fork server nor the workers import the crawl's main module (multiprocessing
would, to find functions defined there; the workers run only `transforms.page`): they stay
small (no Beam, no pipeline) and a script without a `__main__` guard is not run again in
them. If a worker dies (a crash in a parser, the OOM killer), the pages of its batch and every
later batch are parsed in the fetching process instead, with one warning: nothing is lost.

`SignPool` does the same for the MinHash signing of the VISITED batches after the fetch.

Small rounds stay inline: a pool is only started once a bundle has `min_pages` pages, so a
round of a few hundred pages pays no process start-up.
"""
import concurrent.futures as cf
import logging
import threading
import time

import numpy as np

from transforms.contentseen.fingerprints import minhash_signatures
from transforms.page.fate import page_fate
from transforms.procs import Helper, helper_context, main_module_hidden, usable_cores

log = logging.getLogger(__name__)


def auto_processes(cores=None) -> int:
    """`--page_processes auto`: one worker per core but the one the fetch threads use."""
    return max(0, (usable_cores() if cores is None else cores or 1) - 1)


def page_fates(pages, config):
    """The fates of a batch of pages, and the seconds they took (runs in a worker)."""
    started = time.perf_counter()
    fates = [page_fate(p, config) for p in pages]
    return fates, time.perf_counter() - started


class FatePool:
    """Batches of pages -> their fates, computed by `processes` worker processes.

    `submit` queues pages and returns the batches already done; `drain` waits for the rest.
    At most `inflight` batches are outstanding (at least 4 per worker; `inflight_pages`, the
    memory budget's share, may allow more): beyond that the calling process parses the
    batch itself, so all cores parse when parsing is the bottleneck, and a fast fetch never
    piles its bodies up in memory ahead of the parse. Each batch the fetching process parses
    holds its interpreter lock from every fetch thread, so the more the workers take, the
    less the hosts' request chains wait.
    """

    def __init__(self, config, processes, batch=16, inflight=None, inflight_pages=0):
        self.config, self.processes, self.batch = config, processes, batch
        self.inflight = inflight or max(4 * processes, int(inflight_pages) // batch)
        self._queue, self._pending, self._batches, self._executor = [], set(), {}, None
        self._starter = None  # the thread starting the workers (their start blocks ~0.25 s)
        self.broken = None   # why the pool stopped, once a worker died: batches then run here
        self.sent = 0        # batches handed to the workers

    def _start(self):
        """In a background thread: start the fork server and the workers (a first, empty
        batch makes the executor spawn them), then publish the executor. The fetching
        process parses inline meanwhile, so its fetch threads never wait on the start."""
        try:
            with main_module_hidden():
                executor = cf.ProcessPoolExecutor(self.processes, mp_context=helper_context())
                executor.submit(page_fates, [], self.config)
            self._executor = executor
        except Exception as e:   # noqa: BLE001 - no pool here (a daemonic worker process may
            self._break(e)       # not start children, e.g. a Dask worker): parse inline

    def _workers(self):
        """The executor once the workers are up, else None (and their start begun)."""
        if self._executor is None and self._starter is None:
            self._starter = threading.Thread(target=self._start, name="page-pool-start", daemon=True)
            self._starter.start()
        return self._executor

    def _break(self, error):
        if self.broken is None:
            self.broken = f"{type(error).__name__}: {error}"
            log.warning("page worker processes stopped (%s); parsing in the fetching process from "
                        "now on (--page_processes 0 does so from the start).", self.broken)

    def _result(self, fut):
        """A batch's (fates, seconds); a batch whose worker died is computed here instead."""
        batch = self._batches.pop(fut)
        try:
            return fut.result()
        except cf.process.BrokenProcessPool as e:
            self._break(e)
            return page_fates(batch, self.config)

    def submit(self, page):
        self._queue.append(page)
        if len(self._queue) < self.batch:
            return []
        return self._send()

    def _send(self):
        batch, self._queue = self._queue, []
        done_here = []
        executor = self._workers() if self.broken is None else None
        if executor is not None and len(self._pending) < self.inflight:
            try:
                fut = executor.submit(page_fates, batch, self.config)
                self._batches[fut] = batch
                self._pending.add(fut)
                self.sent += 1
                batch = None
            except Exception as e:   # noqa: BLE001 - a pool broken since: parse inline
                self._break(e)
        if batch is not None:   # the workers are busy, starting or gone: this process parses it
            done_here.append(page_fates(batch, self.config))
        done, self._pending = cf.wait(self._pending, timeout=0, return_when=cf.FIRST_COMPLETED)
        return done_here + [self._result(f) for f in done]

    def drain(self):
        """Every outstanding batch's (fates, seconds), as each completes."""
        if self._queue:
            yield from self._send()
        pending, self._pending = self._pending, set()
        for f in cf.as_completed(pending):
            yield self._result(f)

    def wait_started(self):
        """Block until the workers are up or failed to start (tests; a crawl never waits)."""
        self._workers()
        self._starter.join()

    def close(self):
        if self._starter is not None:
            self._starter.join()
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


def _sign_loop(conn):
    """The MinHash helper: batches of texts in, their signatures out, until None or EOF."""
    while True:
        try:
            texts = conn.recv()
        except (EOFError, OSError):
            return
        if texts is None:
            return
        conn.send(minhash_signatures(texts))


class SignPool(Helper):
    """MinHash signatures of VISITED batches, half of each big batch on a helper process.

    After the fetch stage the round signs every page's text (`minhash_signatures`) in one
    process while the other core idles: ~1.1 s of a 16 000-page round. Here a batch of at
    least `min_texts` texts sends its first half to one helper process (started from the
    fork server in the background by `start`) and signs the second half meanwhile; the
    signatures are the same. The half goes over a plain pipe from the signing thread itself:
    through a ProcessPoolExecutor, its feeder and result threads waited for the interpreter
    lock this thread held while signing, and the helper's half came back later than this
    one's. Until the helper is up, or once it died, batches are signed here alone (one
    warning)."""

    MIN_TEXTS = 256
    NAME = "beamcrawl-sign"
    STOPPED = "the MinHash helper process stopped (%s); signing in the round's process."

    def __init__(self, min_texts=MIN_TEXTS):
        super().__init__()
        self.min_texts = min_texts
        self.sent = 0        # half-batches the helper signed

    def start(self):
        return super().start(_sign_loop)

    def _break(self, error):
        super()._break(error)
        self._stop(kill=True)

    def sign(self, texts):
        """(uint32[n, NUM_PERM] signatures, bool[n] has) of texts, as `minhash_signatures`."""
        conn = self._conn if self.broken is None else None
        if conn is None or len(texts) < self.min_texts:
            return minhash_signatures(texts)
        half = len(texts) // 2
        try:
            conn.send(texts[:half])
        except (OSError, ValueError) as e:
            self._break(e)
            return minhash_signatures(texts)
        mine = minhash_signatures(texts[half:])
        try:
            first = conn.recv()
            self.sent += 1
        except (EOFError, OSError) as e:
            self._break(e)
            first = minhash_signatures(texts[:half])
        return np.concatenate([first[0], mine[0]]), np.concatenate([first[1], mine[1]])
