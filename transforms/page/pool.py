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

A batch holding a page of `INLINE_MAX_BYTES` or more is never parsed in the fetching process
while a worker is up: it waits for a worker to take it. Parsing an HTML page builds a tree of
20-30 times its size (a 3.5 MB highlighted-source page: +100 MB, a 9.5 MB one: +200 MB): on the
Debian-docs web such a page parsed inline made the round's process's peak, 567-591 MB, and
457-479 MB with them sent to the worker (benchmarks/RESULTS.md, fourth sitting), at the same
pages/s or better.
"""
import collections
import logging
import time

import numpy as np

from transforms.contentseen.fingerprints import minhash_signatures
from transforms.page.fate import page_fate
from transforms.procs import Helper, answer, usable_cores, wait_any
from transforms.tableio.pickled import Pickled, encode

log = logging.getLogger(__name__)


INLINE_MAX_BYTES = 1 << 20   # a batch with a page of this many bytes waits for a worker


def _largest_body(pages) -> int:
    return max((len(p.get("body") or b"") for p in pages), default=0)


def auto_processes(cores=None) -> int:
    """`--page_processes auto`: one worker per core but the one the fetch threads use."""
    return max(0, (usable_cores() if cores is None else cores or 1) - 1)


def page_fates(pages, config, pickled_links=False):
    """The fates of a batch of pages, and the seconds they took (runs in a worker). With
    `pickled_links` each fate's link bundles come `Pickled` (for a spill file), not as dicts."""
    started = time.perf_counter()
    fates = [page_fate(p, config) for p in pages]
    if pickled_links:
        for fate in fates:
            fate.links = [Pickled(encode(bundle)) for bundle in fate.links]
    return fates, time.perf_counter() - started


def _fate_loop(conn, config, pickled_links):
    """A page worker: batches of pages in, their (fates, seconds) out, until None or EOF."""
    answer(conn, page_fates, config, pickled_links)


class _PageWorker(Helper):
    """One page worker and the batches it holds (oldest first); the pool reports its end."""

    NAME = "beamcrawl-page"

    def __init__(self):
        super().__init__()
        self.up, self.batches = False, collections.deque()

    def _break(self, error):   # recorded only: FatePool warns once for all its workers
        if self.broken is None:
            self.broken = f"{type(error).__name__}: {error}"


class FatePool:
    """Batches of pages -> their fates, computed by `processes` worker processes.

    `submit` queues pages and returns the batches already done; `drain` waits for the rest.
    At most `inflight` batches are outstanding (at least 4 per worker; `inflight_pages`, the
    memory budget's share, may allow more): beyond that the calling process parses the
    batch itself, so all cores parse when parsing is the bottleneck, and a fast fetch never
    piles its bodies up in memory ahead of the parse. Each batch the fetching process parses
    holds its interpreter lock from every fetch thread, so the more the workers take, the
    less the hosts' request chains wait.

    Batches go down each worker's pipe, and fates come back, through `procs.Channel`, moved
    by the calling thread whenever it submits a page: no feeder or result thread here.
    Through a `ProcessPoolExecutor` (before) those threads had to win this busy process's
    interpreter lock for every batch each way; one 5 000-page bench50k round, alternating
    x3: CPU 6.94 / 6.88 / 6.96 -> 5.91 / 6.54 / 6.31 s, wall 9.41 / 8.81 / 8.95 -> 7.95 /
    8.82 / 7.92 s. (On 2 cores the fetch processes, this process and the worker still share
    the CPU, so this process parses a quarter to a third of the batches itself.)
    """

    def __init__(self, config, processes, batch=16, inflight=None, inflight_pages=0, pickled_links=False,
                 inline_max_bytes=INLINE_MAX_BYTES):
        self.config, self.processes, self.batch = config, processes, batch
        self.inline_max_bytes = inline_max_bytes   # a batch with a page this big waits for a worker
        self.pickled_links = pickled_links   # the workers' fates carry `Pickled` link bundles
        self.inflight = inflight or max(4 * processes, int(inflight_pages) // batch)
        self._queue, self._workers = [], []
        self.broken = None   # why the workers stopped, once one died: batches then run here
        self.sent = 0        # batches handed to the workers

    def _up(self):
        """The workers ready to take batches (all are started, in the background, on the
        first call; the fetching process parses inline meanwhile); [] once the pool broke."""
        if self.broken is not None:
            return []
        if not self._workers:
            self._workers = [_PageWorker().start(_fate_loop, self.config, self.pickled_links)
                             for _ in range(self.processes)]
        for w in self._workers:
            if not w.up and not w.starting():
                if not w.ready():   # no worker here (a daemonic process may not start children)
                    self._fail(w.broken or "page worker did not start")
                    return []
                w.up = True
        return [w for w in self._workers if w.up]

    def _break(self, error):
        if self.broken is None:
            self.broken = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
            log.warning("page worker processes stopped (%s); parsing in the fetching process from "
                        "now on (--page_processes 0 does so from the start).", self.broken)

    def _fail(self, error):
        """A worker died or could not start: every batch the workers hold is parsed here."""
        self._break(error)
        done = []
        for w in self._workers:
            done += [page_fates(b, self.config, self.pickled_links) for b in w.batches]
            w.batches.clear()
            w.close(kill=True)
        return done

    def submit(self, page):
        self._queue.append(page)
        done = self._collect()   # first: a batch back frees its worker for the next
        if len(self._queue) >= self.batch:
            done += self._send()
        return done

    def _send(self):
        batch, self._queue = self._queue, []
        up, done = self._up(), []
        if up and not self._room(up) and _largest_body(batch) >= self.inline_max_bytes:
            done, up = self._wait_for_room()   # not parsed here: its tree would be this process's peak
        if up and self._room(up):
            worker = min(up, key=lambda w: len(w.batches))
            worker.batches.append(batch)
            try:
                worker.channel().put(batch)
            except (OSError, ValueError) as e:   # the worker is gone: its batches run here
                return done + self._fail(e)
            self.sent += 1
            return done
        # the workers are busy, starting or gone: parsed here (bundles stay dicts, which the
        # spill pickles as it writes them)
        return done + [page_fates(batch, self.config)]

    def _room(self, up) -> bool:
        return sum(len(w.batches) for w in up) < self.inflight

    def _wait_for_room(self):
        """(batches done meanwhile, the workers up) once the workers may take a batch, or
        once none is left (then the batch is parsed here after all)."""
        done, up = [], self._up()
        while up and not self._room(up):
            done += self._wait_any()
            done += self._collect()
            up = self._up()   # (none once a worker failed)
        return done, up

    def _wait_any(self):
        """Wait up to 50 ms for a busy worker's answer: [], or the batches parsed here because
        a worker failed."""
        try:
            wait_any([w.channel() for w in self._workers if w.batches], 0.05)
        except (OSError, ValueError) as e:
            return self._fail(e)
        return []

    def _collect(self):
        done = []
        for w in self._workers:
            if not w.batches:
                continue
            try:
                results = w.channel().take()
            except (OSError, EOFError) as e:
                return done + self._fail(e)
            for result in results:
                w.batches.popleft()
                done.append(result)
        return done

    def drain(self):
        """Every outstanding batch's (fates, seconds), as each completes."""
        if self._queue:
            yield from self._send()
        while True:
            yield from self._collect()
            if not any(w.batches for w in self._workers):
                return
            yield from self._wait_any()

    def wait_started(self):
        """Block until the workers are up or failed to start (tests; a crawl never waits)."""
        self._up()
        for w in self._workers:
            w.ready()
        self._up()

    def close(self):
        for w in self._workers:
            w.close(kill=bool(w.batches))   # batches still out: the bundle failed, nobody waits
        self._workers = []


def _sign_loop(conn):
    """The MinHash helper: batches of texts in, their signatures out, until None or EOF."""
    answer(conn, minhash_signatures)


class SignPool(Helper):
    """MinHash signatures of VISITED batches, a share of each big batch on a helper process.

    After the fetch stage the round signs every page's text (`minhash_signatures`) in one
    process while the other core idles: ~1.1 s of a 16 000-page round. Here a batch of at
    least `min_texts` texts sends its first `share` to one helper process (started from the
    fork server in the background by `start`) and signs the rest meanwhile; the signatures
    are the same. The share goes over a plain pipe from the signing thread itself: through
    a ProcessPoolExecutor, its feeder and result threads waited for the interpreter lock
    this thread held while signing, and the helper's half came back later than this one's.
    `share` starts at half and moves by 0.05 a batch towards keeping both busy: up when the
    helper had finished before its answer was needed, down when it had not (with `begin`
    and `end` apart, the helper signs while this process prepares the next batch, so it
    takes more than half). Until the helper is up, or once it died, batches are signed here
    alone (one warning)."""

    MIN_TEXTS = 256
    WAIT_START = 0.05   # seconds a big batch waits for the helper's start, at most
    MIN_SHARE, MAX_SHARE = 0.5, 0.9
    NAME = "beamcrawl-sign"
    STOPPED = "the MinHash helper process stopped (%s); signing in the round's process."

    def __init__(self, min_texts=MIN_TEXTS):
        super().__init__()
        self.min_texts = min_texts
        self.sent = 0        # batch shares the helper signed
        self.share = 0.5     # of a batch's texts the helper signs (adapted between the bounds)
        self._out = collections.deque()   # batches begun with a share out, oldest first

    def start(self):
        return super().start(_sign_loop)

    def _break(self, error):
        super()._break(error)
        self._out.clear()   # their shares are signed here (`end`)
        self._stop(kill=True)

    def sign(self, texts):
        """(uint32[n, NUM_PERM] signatures, bool[n] has) of texts, as `minhash_signatures`."""
        return self.end(self.begin(texts))

    def begin(self, texts):
        """Start signing a batch: the helper is sent its share of the texts (the first
        `share` of them) and this process signs the rest now; `end` returns the whole
        batch's signatures. Batches may be begun before the last one ended (ended in order):
        the helper then signs one while this process prepares the next (VisitedTables)."""
        if self._conn is None and self.broken is None and len(texts) >= self.min_texts:
            # a warm fork server starts the helper in ~3 ms: the first batch waits for it
            # rather than sign alone (~0.1 s for 900 texts); a cold one may take 0.3 s
            self.ready(self.WAIT_START)
        conn = self._conn if self.broken is None else None
        if conn is None or len(texts) < self.min_texts:
            return _Signing(texts, 0, minhash_signatures(texts))
        cut = int(len(texts) * self.share)
        try:
            conn.send(texts[:cut])
        except (OSError, ValueError) as e:
            self._break(e)
            return _Signing(texts, 0, minhash_signatures(texts))
        signing = _Signing(texts, cut, minhash_signatures(texts[cut:]))
        self._out.append(signing)
        return signing

    def end(self, signing):
        """(signatures, has) of a batch `begin` started, its helper share waited for."""
        if not signing.cut:
            return signing.mine
        if signing in self._out and self._out[0] is not signing:
            # the helper answers in order: taking this one's share now would hand it the answer
            # of an earlier batch (and every later batch the wrong one)
            raise ValueError("SignPool.end: batches must be ended in the order they were begun")
        if self._out and self._out[0] is signing:   # (a broken helper's batches left `_out`)
            self._out.popleft()
            try:
                # the helper done before it was asked for: give it more next time, else less
                idle = self._conn.poll(0)
                theirs = self._conn.recv()
                self.sent += 1
                self.share = min(self.MAX_SHARE, max(self.MIN_SHARE, self.share + (0.05 if idle else -0.05)))
            except (EOFError, OSError) as e:
                self._break(e)
                theirs = minhash_signatures(signing.texts[:signing.cut])
        else:   # the helper died with it: its share signed here
            theirs = minhash_signatures(signing.texts[:signing.cut])
        return (np.concatenate([theirs[0], signing.mine[0]]),
                np.concatenate([theirs[1], signing.mine[1]]))


class _Signing:
    """A batch `SignPool.begin` started: its texts, how many went to the helper, the rest's
    signatures."""

    __slots__ = ("texts", "cut", "mine")

    def __init__(self, texts, cut, mine):
        self.texts, self.cut, self.mine = texts, cut, mine
