"""Helper processes of a worker (page workers, the fetch process): how they are started,
and the parent's non-blocking end of their pipes (`Channel`).

They come from one clean fork server (never forked from a process with live threads). The
fork server imports the stage modules they run once (`PRELOAD`), so each helper starts in
milliseconds and shares those pages with its siblings. Neither the fork server nor the
helpers import the crawl's main module: multiprocessing would, to find functions defined
there, and with it Beam and the whole pipeline; a script without a `__main__` guard would
also run again in them.
"""
import collections
import contextlib
import gc
import logging
import multiprocessing
import os
import pickle
import select
import socket
import struct
import sys
import threading

log = logging.getLogger(__name__)

# imported once by the fork server, inherited by every helper (names, not imports: the
# stages depend on this module, not the other way round)
PRELOAD = ["transforms.page.fate", "transforms.page.preload", "transforms.fetch.hostjob"]


# held while `__main__` is hidden: the main module is one per process, and threads start
# helpers at once (the fork server warming in its own thread while a stage starts a fetch
# process); without it one thread put `__file__` back while another was starting a process,
# which then imported the main module (and ran again a script without a `__main__` guard),
# and the second thread "restored" `__spec__` as the None it had found
_MAIN_HIDDEN = threading.RLock()


@contextlib.contextmanager
def main_module_hidden():
    """While processes start: multiprocessing sees no main module to import in them (it
    reads `__main__.__spec__` and `__main__.__file__`; both are restored after). One thread
    at a time (`_MAIN_HIDDEN`)."""
    with _MAIN_HIDDEN:
        main = sys.modules.get("__main__")
        saved = {k: main.__dict__[k] for k in ("__spec__", "__file__") if main is not None and k in main.__dict__}
        try:
            if main is not None:
                main.__spec__ = None
                main.__dict__.pop("__file__", None)
            yield
        finally:
            if main is not None:
                main.__dict__.update(saved)


# rounds of fewer URLs than this start no helper processes (their start-up would cost more
# than the cores they add); the fetch and page steps use it as their `min_pages`
HELPERS_MIN_PAGES = 256


def warm_fork_server() -> threading.Thread:
    """Start the helpers' fork server in the background, so that the first helper of a
    process (a fetch process, at the fetch stage's start) does not wait for it: importing
    `PRELOAD` there takes ~0.35-0.5 s, which the fetch stage of a process's first round
    spent waiting (`FetchFleet.ready` waited 0.348 s). Idempotent (multiprocessing starts one
    fork server per process); a failure is left for the first helper's start to report."""
    def run():
        try:
            with main_module_hidden():
                helper_context()
                from multiprocessing import forkserver
                forkserver.ensure_running()
        except Exception:   # noqa: BLE001, S110 - start_helper tries again and says why
            pass
    thread = threading.Thread(target=run, name="beamcrawl-forkserver", daemon=True)
    thread.start()
    return thread


# a helper count (--page_processes, --fetch_process) of "auto", left to the process that runs
# the step: sized by the cores it may run on there, not by those of the process that built
# the round (a launcher on a laptop, a Dask worker on a machine of its own or pinned to a core)
AUTO = -1


def resolved(count: int, auto) -> int:
    """`count`, or `auto()` (in this process) when it is AUTO."""
    return auto() if count == AUTO else count


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it), at least 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cores or 1


def helper_context():
    """The multiprocessing context helpers start from (call inside `main_module_hidden`)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)   # ignored once the fork server runs: the same list
    return ctx


def start_helper(target, *args, name):
    """(the parent's end of a pipe, the process) of a helper running `target(its end, *args)`."""
    with main_module_hidden():
        ctx = helper_context()
        parent, child = ctx.Pipe()
        widen(parent)
        widen(child)   # (a socket's options go with it into the helper)
        proc = ctx.Process(target=_helper_main, args=(target, child, *args), name=name, daemon=True)
        proc.start()
    child.close()
    return parent, proc


def _helper_main(target, conn, *args):
    """A helper's first step: what it inherited from the fork server (the preloaded modules,
    ~50 000 objects) leaves the cyclic collector's full passes (`gc.freeze`), then `target`
    runs. A full pass wrote to every inherited object's header and so copied each page the
    helper still shared with the fork server: one such pass took 55-79 ms in each fetch
    process and 161 ms in the page worker of a 16 000-page round (gc callbacks), where the
    helper's own objects are a few thousand. The helper then takes its name in the OS
    (`name_this_process`)."""
    gc.freeze()
    name_this_process(multiprocessing.current_process().name)
    return target(conn, *args)


PR_SET_NAME = 15   # prctl(2)


def name_this_process(name: str) -> bool:
    """Give this process `name` (its first 15 bytes) as the OS shows it (`ps -o comm`, `top`,
    /proc/PID/comm): a helper is then told apart from the fork server and its siblings,
    which share one command line (`beamcrawl-fetch`, `beamcrawl-page`, `beamcrawl-sign`).
    Linux only; elsewhere nothing changes (False)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode("utf-8")[:15]), 0, 0, 0) == 0
    except (OSError, AttributeError, TypeError):   # no libc to load, or no prctl in it
        return False


def answer(conn, fn, *args):
    """A helper's loop: each message read from `conn` is answered with `fn(message, *args)`,
    until None or the parent's end of the pipe is gone."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        conn.send(fn(message, *args))


def stop_helper(conn, proc, kill=False):
    """End a helper: None on its pipe (it ends once it reads it), then wait up to 5 s before
    killing it; with `kill`, at once, before anything is sent (a None sent first could end it
    cleanly in the moment before the kill: what it still had on its pipe is never read)."""
    if kill and proc is not None and proc.is_alive():
        proc.kill()
        proc.join()
    if conn is not None:
        if not kill:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        conn.close()
    if proc is not None:
        if not kill:
            proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join()


class Helper:
    """One helper process started in the background, and why it stopped (`broken`).

    `start(target, *args)` runs `start_helper` on a thread (a helper's start blocks ~0.25 s;
    the caller goes on meanwhile), `ready()` waits for it, `close(kill)` ends it
    (`stop_helper`). `_break(error)` records the first reason it stopped and logs
    `STOPPED % reason` once. The pipe end and process are `_conn` and `_proc`. The fetch
    process (fetchproc.FetchProcess) and the MinHash helper (page.pool.SignPool) are ones."""

    NAME = "beamcrawl-helper"
    STOPPED = "a helper process stopped (%s)"

    def __init__(self):
        self._conn = self._proc = self._starter = self._channel = None
        self.broken = None

    def start(self, target, *args):
        if self._starter is None:
            def run():
                try:
                    self._conn, self._proc = start_helper(target, *args, name=self.NAME)
                except Exception as e:   # noqa: BLE001 - e.g. a daemonic worker (Dask) may not start children
                    self._break(e)
            self._starter = threading.Thread(target=run, name=f"{self.NAME}-start", daemon=True)
            self._starter.start()
        return self

    def starting(self) -> bool:
        """True while the background start is still under way (never blocks)."""
        return self._starter is not None and self._starter.is_alive()

    def ready(self, timeout=None):
        """Wait for the start (at most `timeout` seconds); True if the helper runs."""
        if self._starter is not None:
            self._starter.join(timeout)
        return self.broken is None and self._proc is not None

    def _break(self, error):
        if self.broken is None:
            self.broken = f"{type(error).__name__}: {error}"
            log.warning(self.STOPPED, self.broken)

    def close(self, kill=False):
        """End the helper: once it reads the None sent on its pipe, or at once with `kill`."""
        if self._starter is not None:
            self._starter.join()
        self._stop(kill)

    def channel(self):
        """The helper's pipe as a `Channel` (made on first use; from then on the pipe never
        blocks this end). Only once the helper runs (`ready`)."""
        if self._channel is None:
            self._channel = Channel(self._conn)
        return self._channel

    def _stop(self, kill=False):   # (without waiting for the start: `_break` may run in it)
        channel, self._channel = self._channel, None
        if channel is not None and not kill:   # the None that ends it goes out blocking,
            try:                               # behind nothing half-written
                kill = channel.pending_output()
                os.set_blocking(channel.conn.fileno(), True)
            except (OSError, ValueError):
                kill = True
        conn, proc, self._conn, self._proc = self._conn, self._proc, None, None
        stop_helper(conn, proc, kill)


_HEADER, _BIG = struct.Struct("!i"), struct.Struct("!Q")
PIPE_BUFFER = 4 << 20   # bytes a helper's pipe may hold each way (the OS may cap it lower)


def widen(conn, size=PIPE_BUFFER) -> None:
    """Let `conn`'s socket hold `size` bytes on their way out (Linux caps it at
    net.core.wmem_max, 208 KiB by default on some systems): a batch of pages or of their
    fates (~0.3-0.5 MB) then goes in one write instead of waiting for the reader.
    `start_helper` widens both ends of every helper's pipe. Nothing happens for a
    connection that is not a socket."""
    try:
        with socket.socket(fileno=os.dup(conn.fileno())) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
    except OSError:
        pass


class Channel:
    """The parent's end of a helper's pipe, never blocking the thread that uses it.

    `put(message)` queues a message and writes what the pipe takes now; `take()` writes
    what is queued, then reads what has arrived (at most `max_bytes` in this call, if given;
    the rest stays in the pipe) and returns the messages complete by now;
    `wait_any(channels, timeout)` blocks until one of them can move data either way.
    Messages are framed as `multiprocessing.Connection` frames them, so the helper keeps its
    plain blocking `recv`/`send`. Why: a helper fed through a `ProcessPoolExecutor` depends
    on the executor's feeder and result threads, which in a busy process wait for its
    interpreter lock, so the helper idles while its batches sit in this process. Here the
    thread that produces the work moves the bytes itself, whenever it passes by. A closed
    or failed pipe raises EOFError or OSError from `put` or `take`."""

    def __init__(self, conn):
        self.conn, self._fd = conn, conn.fileno()
        os.set_blocking(self._fd, False)
        self._out, self._in, self._closed = collections.deque(), bytearray(), False

    def put(self, message) -> None:
        data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        n = len(data)
        self._out.append(memoryview(_HEADER.pack(n) if n <= 0x7FFFFFFF else _HEADER.pack(-1) + _BIG.pack(n)))
        self._out.append(memoryview(data))
        self._write()

    def pending_output(self) -> bool:
        return bool(self._out)

    def _write(self) -> None:
        while self._out:
            try:
                n = os.write(self._fd, self._out[0])
            except BlockingIOError:
                return
            if n == len(self._out[0]):
                self._out.popleft()
            else:
                self._out[0] = self._out[0][n:]

    def take(self, max_bytes=None) -> list:
        self._write()
        read = 0
        while not self._closed and (max_bytes is None or read < max_bytes):
            try:
                chunk = os.read(self._fd, 1 << 20 if max_bytes is None else min(1 << 20, max_bytes - read))
            except BlockingIOError:
                break
            if not chunk:
                self._closed = True   # what arrived before the end is still handed out
            self._in += chunk
            read += len(chunk)
        messages = self._messages()
        if self._closed and not messages:
            raise EOFError("the helper closed its pipe")
        return messages

    def _messages(self) -> list:
        out, buf, at = [], self._in, 0
        with memoryview(buf) as view:
            while len(buf) - at >= 4:
                (n,), start = _HEADER.unpack_from(buf, at), at + 4
                if n == -1:
                    if len(buf) - at < 12:
                        break
                    (n,), start = _BIG.unpack_from(buf, at + 4), at + 12
                if len(buf) < start + n:
                    break
                with view[start:start + n] as part:
                    out.append(pickle.loads(part))
                at = start + n
        del buf[:at]   # once, after the views are released
        return out

def wait_any(channels, timeout=None) -> None:
    """Until one of `channels` can move data (or its helper ended), or `timeout` seconds."""
    poller = select.poll()
    for channel in channels:
        poller.register(channel._fd, select.POLLIN | (select.POLLOUT if channel._out else 0))
    poller.poll(None if timeout is None else int(timeout * 1000))
