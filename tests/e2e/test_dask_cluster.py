"""A crawl on a dask.distributed cluster as a user runs one, the crawl directory on S3 (#49).

The scheduler and two workers are started with the dask CLI (`dask scheduler`, `dask
worker`, tests/daskcluster.py), each worker in a working directory of its own, and the crawl
directory is `s3://` on moto's server (tests/s3server.py): no process shares a local path with
another. The launcher is `python -m pipelines.crawl ... --runner pipelines.daskrunner.DaskRunner
--dask_client_address ADDR` with the `--s3_*` flags, in a directory of its own too.

- The crawl reaches the state of the same crawl in-process on local disk, each page fetched
  once and one request per host at a time (the simulated web's server log).
- One worker SIGKILLs itself in the middle of a round's fetch (`BEAMCRAWL_CRASH_AT=fetch` in
  that worker's environment only: transforms.faults). The scheduler hands its tasks to the
  other worker and the round completes there; running the same command again (it stops at a
  page budget) changes nothing. The committed state is the uninterrupted crawl's: no page
  lost, none twice; no host had two requests in flight at once.
- A round big enough for fetch processes (HELPERS_MIN_PAGES, the medium web): the killed
  worker's children (fork server, fetch processes, page worker) are gone within 3 s of it, and
  the round completes on the other worker with each URL visited once. (In the small web's
  rounds above no child process starts.)
"""
import os
import subprocess
import sys
import time

import pytest

from pipelines import storage
from pipelines.crawldir import CrawlDir
from pipelines.sweep import unlisted
from tests import s3server
from tests.daskcluster import DaskCluster
from tests.e2e import crawlstate
from tests.simweb import requestlog

# a scheduler, two workers and an S3 server as processes; each test runs 3-4 Dask rounds
pytestmark = [pytest.mark.long, pytest.mark.timeout(1800)]

# round defaults, given to inject; the simulated web's hosts all resolve to 127.0.0.1, so under
# the default --politeness_key ip they are one politeness unit, one fetch task: by host, the
# fetch is spread over both workers (the case "no host hit by two workers at once" is about)
ROUND = ("--strategy", "opic", "--max_pages", "40", "--politeness_key", "host")
BUDGET = ("--max_total_pages", "60")                  # the command stops here: a rerun continues to it


@pytest.fixture(scope="module")
def in_process(simweb_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("in_process") / "crawl"
    crawlstate.start_crawl(simweb_small, d, *ROUND)
    crawlstate.run_rounds(d, *BUDGET)
    storage.use([])
    return crawlstate.state(d), CrawlDir(str(d)).last_committed(), _rounds(CrawlDir(str(d)))


def _crawl_on(cluster, d, s3_flags, workdir):
    """The user's command, run from a directory of its own."""
    workdir.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "pipelines.crawl", "--crawl_dir", d, *BUDGET, *s3_flags,
                           *cluster.beam_flags()],
                          cwd=workdir, env={**os.environ, "PYTHONPATH": str(crawlstate.REPO)},
                          capture_output=True, text=True, timeout=1200)


def _check_server_log(log):
    pages = {}
    for r in log:
        if not r["path"].startswith("/robots"):
            key = (r["host"].lower(), r["path"])
            pages[key] = pages.get(key, 0) + 1
    assert log, "nothing fetched"
    assert max(requestlog.max_concurrency_per_host(log).values()) == 1, "a host had two requests in flight"
    return pages


def _rounds(crawl):
    """Per round: (fetched, visited, duplicates, outcomes): where two crawls parted."""
    out = []
    for n in crawl.committed_rounds():
        r = crawl.read_report(n)
        out.append((n, r.get("fetched"), r.get("visited"), r.get("duplicates"), r.get("outcomes")))
    return out


def _check_committed(d, s3_flags, expected):
    state, last, rounds = expected
    storage.use(s3_flags)
    crawl = CrawlDir(d)
    assert crawl.last_committed() == last, f"rounds on Dask {_rounds(crawl)}, in-process {rounds}"
    crawlstate.assert_same_state(state, crawlstate.state(d))
    assert {n: unlisted(crawl, n) for n in crawl.committed_rounds()} == {n: [] for n in range(last + 1)}


def test_a_crawl_on_a_dask_cluster_with_its_directory_on_s3_reaches_the_in_process_state(
        in_process, simweb_small, s3_server, tmp_path):
    d, flags = f"s3://{s3server.BUCKET}/dask-crawl", s3_server.beam_flags()
    crawlstate.start_crawl(simweb_small, d, *ROUND, *flags)
    with DaskCluster(tmp_path / "cluster", workers=2) as cluster:
        start = time.time()
        done = _crawl_on(cluster, d, flags, tmp_path / "launcher")
        end = time.time()
    assert done.returncode == 0, done.stderr[-4000:]
    pages = _check_server_log([r for r in simweb_small.requests() if start <= r["start"] <= end])
    assert [k for k, n in pages.items() if n > 1] == [], "a page was fetched twice (a recomputed fetch?)"
    _check_committed(d, flags, in_process)


def test_a_worker_killed_mid_fetch_costs_no_page_and_rerunning_changes_nothing(
        in_process, simweb_small, s3_server, tmp_path):
    d, flags = f"s3://{s3server.BUCKET}/dask-worker-killed", s3_server.beam_flags()
    crawlstate.start_crawl(simweb_small, d, *ROUND, *flags)
    with DaskCluster(tmp_path / "cluster", workers=2, worker_env={1: {"BEAMCRAWL_CRASH_AT": "fetch"}}) as cluster:
        start = time.time()
        killed_run = _crawl_on(cluster, d, flags, tmp_path / "launcher")
        assert cluster.workers[1].poll() == -9, "worker 1 was not killed in the fetch"
        assert cluster.workers[2].poll() is None
        assert killed_run.returncode == 0, killed_run.stderr[-4000:]   # finished on worker 2
        again = _crawl_on(cluster, d, flags, tmp_path / "launcher")
        end = time.time()
    assert again.returncode == 0, again.stderr[-4000:]
    assert again.stdout.strip().endswith("0 rounds run"), again.stdout[-2000:]   # the budget was reached
    _check_server_log([r for r in simweb_small.requests() if start <= r["start"] <= end])
    _check_committed(d, flags, in_process)


def _pending(crawl):
    return int(crawl.read_report(crawl.last_committed()).get("page_sets", {}).get("pending") or 0)


class _Descendants:
    """Every process under `pid` seen while it lived (sampled every 20 ms in a thread)."""

    def __init__(self, pid):
        import threading
        self.pid, self.seen, self._stop = pid, {}, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        import psutil
        try:
            top = psutil.Process(self.pid)
            while not self._stop.is_set() and top.is_running():
                for p in top.children(recursive=True):
                    self.seen.setdefault(p.pid, p)
                self._stop.wait(0.02)
        except psutil.Error:
            pass

    def stop(self):
        self._stop.set()
        self._thread.join()
        return list(self.seen.values())


def test_a_killed_workers_fetch_processes_stop_with_it(simweb_factory, s3_server, tmp_path):
    """A round of HELPERS_MIN_PAGES pages or more fetches in child processes of each worker
    (transforms.fetch.fetchproc). When the worker is SIGKILLed mid-fetch its children lose
    their parent's pipe and must stop at once: one that went on fetching its hosts (for
    seconds: 0.2 s between a host's requests here) would hit them beside the worker that
    takes over the lost task, and record nothing."""
    import psutil

    from transforms.procs import HELPERS_MIN_PAGES
    web = simweb_factory("medium", seed=1)
    d, flags = f"s3://{s3server.BUCKET}/dask-worker-killed-with-helpers", s3_server.beam_flags()
    crawlstate.start_crawl(web, d, "--max_pages", "600", "--max_per_host", "100", "--delay_per_host", "0.2",
                           "--politeness_key", "host", *flags)
    storage.use(flags)
    crawl = CrawlDir(d)
    for _ in range(6):   # small rounds in-process until the next one plans enough pages
        if _pending(crawl) >= HELPERS_MIN_PAGES:
            break
        crawlstate.run_rounds(d, "--rounds", "1", "--delay_per_host", "0", *flags)
    assert _pending(crawl) >= HELPERS_MIN_PAGES, "the medium web never offered a round with fetch processes"
    before = crawl.last_committed()
    with DaskCluster(tmp_path / "cluster", workers=2, worker_env={1: {"BEAMCRAWL_CRASH_AT": "fetch"}}) as cluster:
        under = _Descendants(cluster.workers[1].pid)
        (tmp_path / "launcher").mkdir()
        run = subprocess.Popen([sys.executable, "-m", "pipelines.crawl", "--crawl_dir", d, "--rounds", "1", *flags,
                                *cluster.beam_flags()],
                               cwd=tmp_path / "launcher", env={**os.environ, "PYTHONPATH": str(crawlstate.REPO)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert cluster.workers[1].wait(timeout=600) == -9, "worker 1 was not killed in the fetch"
        children = under.stop()
        gone, alive = psutil.wait_procs(children, timeout=3)
        out, err = run.communicate(timeout=1200)
    assert not alive, f"{len(alive)} of worker 1's {len(children)} processes outlived it by 3 s (pids {[p.pid for p in alive]})"
    assert len(children) >= 2, f"worker 1 started no fetch processes ({children})"
    assert run.returncode == 0, err[-4000:]   # finished on worker 2
    storage.use(flags)
    assert crawl.last_committed() == before + 1
    visited = crawl.read_table("visited", before + 1).column("url").to_pylist()
    assert len(visited) >= HELPERS_MIN_PAGES and len(visited) == len(set(visited))
