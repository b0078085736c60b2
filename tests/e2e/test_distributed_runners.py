"""The same rounds on real distributed engines reach the in-process runner's state (issue #15).

- Dask: a `dask.distributed` cluster (scheduler + two worker processes on 127.0.0.1, started
  by `dask scheduler` / `dask worker`) running pipelines.daskrunner.DaskRunner, through
  scripts/dask_local.sh, the script a user runs (the S3 cluster crawl and the worker-kill
  test: test_dask_cluster.py).
- Beam's Fn API with separate SDK workers: the PortableRunner with `--environment_type
  EXTERNAL` against `python -m apache_beam.runners.worker.worker_pool_main` (what Flink,
  Spark and Dataflow workers run).
Both crawl the small simulated web for ROUNDS rounds with a whole-frontier strategy (opic).
"""
import collections
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.e2e import crawlstate
from tests.simweb import requestlog

pytestmark = pytest.mark.long   # not in the default suite: make test-long (.ci/run runs it)

ROUNDS = 3
STRATEGY = ("--strategy", "opic")
SCRIPT = crawlstate.REPO / "scripts" / "dask_local.sh"


@pytest.fixture(scope="module")
def in_process(simweb_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("in_process") / "crawl"
    crawlstate.start_crawl(simweb_small, d, *STRATEGY)
    crawlstate.run_rounds(d, "--rounds", str(ROUNDS))
    return d


def _env():
    # worker_pool_main starts each SDK worker as `python`: this interpreter's, first on PATH
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    return {**os.environ, "PYTHONPATH": str(crawlstate.REPO), "PYTHON": sys.executable, "PATH": path}


def _requests_between(web, start, end):
    return [r for r in web.requests() if start <= r["start"] <= end]


def _each_page_once_one_at_a_time(log):
    pages = collections.Counter((r["host"].lower(), r["path"]) for r in log if not r["path"].startswith("/robots"))
    assert [k for k, n in pages.items() if n > 1] == [], "a page was fetched twice (a recomputed fetch?)"
    assert max(requestlog.max_concurrency_per_host(log).values()) == 1


@pytest.mark.slow
def test_dask_cluster_reaches_the_in_process_state(in_process, simweb_small, tmp_path):
    d = tmp_path / "dask"
    crawlstate.start_crawl(simweb_small, d, *STRATEGY)
    start = time.time()
    proc = subprocess.run(["bash", str(SCRIPT), "crawl", "--crawl_dir", str(d), "--rounds", str(ROUNDS)],
                          cwd=crawlstate.REPO, env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "2 workers" in proc.stderr
    crawlstate.assert_same_state(crawlstate.state(in_process, ROUNDS), crawlstate.state(d, ROUNDS))
    _each_page_once_one_at_a_time(_requests_between(simweb_small, start, time.time()))


def test_dask_script_refuses_a_bad_command(tmp_path):
    proc = subprocess.run(["bash", str(SCRIPT), "fetch", "--crawl_dir", str(tmp_path)], cwd=crawlstate.REPO,
                          env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: usage:")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_listening(proc, port, timeout=120):
    """The worker pool imports Beam before it listens: a round started before that was
    refused (a CI run on a busy machine failed so, before pipelines.endpoints waited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the worker pool exited with status {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"the worker pool did not listen on port {port} within {timeout} s")


@pytest.mark.slow
def test_portable_runner_with_external_sdk_workers_reaches_the_in_process_state(in_process, simweb_small,
                                                                                 tmp_path):
    port = _free_port()
    pool = subprocess.Popen([sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                             f"--service_port={port}"], cwd=crawlstate.REPO, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_until_listening(pool, port)
        d = tmp_path / "external"
        crawlstate.start_crawl(simweb_small, d, *STRATEGY)
        start = time.time()
        crawlstate.run_rounds(d, "--rounds", str(ROUNDS), "--runner=PortableRunner", "--job_endpoint=embed",
                              "--environment_type=EXTERNAL", f"--environment_config=127.0.0.1:{port}")
        crawlstate.assert_same_state(crawlstate.state(in_process, ROUNDS), crawlstate.state(d, ROUNDS))
        _each_page_once_one_at_a_time(_requests_between(simweb_small, start, time.time()))
    finally:
        pool.terminate()
        pool.wait(timeout=30)
