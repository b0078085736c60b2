"""Helper processes of a worker (page workers, the fetch process): how they are started.

They come from one clean fork server (never forked from a process with live threads). The
fork server imports the stage modules they run once (`PRELOAD`), so each helper starts in
milliseconds and shares those pages with its siblings. Neither the fork server nor the
helpers import the crawl's main module: multiprocessing would, to find functions defined
there, and with it Beam and the whole pipeline; a script without a `__main__` guard would
also run again in them.
"""
import contextlib
import logging
import multiprocessing
import os
import sys
import threading

log = logging.getLogger(__name__)

# imported once by the fork server, inherited by every helper (names, not imports: the
# stages depend on this module, not the other way round)
PRELOAD = ["transforms.page.fate", "transforms.fetch.hostjob"]


@contextlib.contextmanager
def main_module_hidden():
    """While processes start: multiprocessing sees no main module to import in them (it
    reads `__main__.__spec__` and `__main__.__file__`; both are restored after)."""
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
        proc = ctx.Process(target=target, args=(child, *args), name=name, daemon=True)
        proc.start()
    child.close()
    return parent, proc


def stop_helper(conn, proc, kill=False):
    """End a helper: None on its pipe (it ends once it reads it), then wait up to 5 s before
    killing it; with `kill`, at once."""
    if conn is not None:
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
        self._conn = self._proc = self._starter = None
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

    def ready(self):
        """Wait for the start; True if the helper runs."""
        if self._starter is not None:
            self._starter.join()
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

    def _stop(self, kill=False):   # (without waiting for the start: `_break` may run in it)
        conn, proc, self._conn, self._proc = self._conn, self._proc, None, None
        stop_helper(conn, proc, kill)
