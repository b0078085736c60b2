"""The simulated web as a subprocess: CLI, fixtures, request log file, clock file, export."""
import json
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from tests.simweb import build_web
from tests.simweb.fixtures import simweb_factory, simweb_small  # noqa: F401  (fixtures)
from tests.simweb.process import REPO_ROOT
from tests.simweb.refcrawl import RefCrawler
from tests.simweb.requestlog import (disallowed_requests, gaps_per_host, max_concurrency_per_host,
                                     min_gap_per_host, read_log)


def test_small_fixture_serves_the_hostmap_and_logs_requests(simweb_small):
    w = simweb_small
    lines = w.hostmap_file.read_text().split()
    assert lines == w.hostmap_lines and len(lines) == len(w.web.hosts)
    assert w.seeds == w.ground_truth["seeds"].column("url").to_pylist()
    assert all(f":{w.port}/" in s for s in w.seeds)
    c = RefCrawler(w.hostmap_lines)
    for s in w.seeds:
        assert c.get(s).status_code == 200
        time.sleep(0.05)
    log = read_log(w.log_path)
    mine = [r for r in log if r["path"] == "/" and r["headers"].get("User-Agent", "").startswith("simweb-refcrawl")]
    assert len(mine) >= len(w.seeds)
    r = mine[-1]
    assert set(r) >= {"host", "path", "method", "status", "start", "end", "headers", "addr"}
    assert r["addr"].startswith("127.") and r["status"] == 200
    assert disallowed_requests(log, w.ground_truth) == []


def test_request_log_helpers():
    recs = [{"host": "a", "path": "/", "start": 0.0, "end": 0.1}, {"host": "a", "path": "/x", "start": 1.0, "end": 1.2},
            {"host": "b", "path": "/", "start": 0.5, "end": 0.6}, {"host": "a", "path": "/y", "start": 1.1, "end": 1.3}]
    assert gaps_per_host(recs)["a"] == pytest.approx([1.0, 0.1])
    assert gaps_per_host(recs, "end")["a"] == pytest.approx([0.9, -0.1])
    assert min_gap_per_host(recs) == pytest.approx({"a": 0.1})
    assert max_concurrency_per_host(recs) == {"a": 2, "b": 1}


def test_sigterm_stops_the_server_cleanly(simweb_factory):
    w = simweb_factory("small", seed=2)
    assert w.proc.poll() is None
    w.proc.send_signal(signal.SIGTERM)
    assert w.proc.wait(10) == 0


def test_clock_file_drives_simulated_time(simweb_factory):
    w = simweb_factory("small", seed=1, clock_file=True)
    web = w.web
    i = next(i for i in range(web.N) if web.kind[i] == 0 and web.change_rate[i] > 0 and web.page_host[i] == 0
             and web.dup_of[i] < 0)
    c = RefCrawler(w.hostmap_lines)
    t0 = web.cfg.sim_start
    w.set_time(t0)
    a = c.get(web.url(i))
    t1 = web.change_times(i, t0, t0 + 1000 / web.change_rate[i])[0] + 1
    w.set_time(t1)
    b = c.get(web.url(i), headers={"If-None-Match": a.headers["ETag"]})
    assert b.status_code == 200 and b.headers["ETag"] != a.headers["ETag"]
    assert b.headers["ETag"] == f'"{i:x}-{web.version(i, t1)[0]:x}"'
    log = w.requests()
    assert log[-1]["sim_time"] == t1


def test_cli_export_writes_one_parquet_file_per_table(tmp_path):
    out = tmp_path / "gt"
    r = subprocess.run([sys.executable, "-m", "tests.simweb", "export", "--config", "small", "--seed", "4",
                        "--port", "8080", "--out", str(out)], cwd=REPO_ROOT, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    gt = build_web("small", seed=4, port=8080).ground_truth()
    for name, t in gt.items():
        assert pq.read_table(out / f"{name}.parquet").equals(t), name
    assert json.loads((out / "config.json").read_text())["seed"] == 4


def test_cli_serve_prints_the_hostmap(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "tests.simweb", "serve", "--config", "small", "--seed", "1",
                          "--port", "0", "--hostmap", str(tmp_path / "h.txt")], cwd=REPO_ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline().strip()
        assert first.startswith("site0.simweb.test:") and first.endswith(":127.77.0.1")
        assert (tmp_path / "h.txt").read_text().splitlines()[0] == first
    finally:
        p.send_signal(signal.SIGINT)
        assert p.wait(10) == 0


def test_factory_accepts_config_overrides(simweb_factory):
    w = simweb_factory("small", seed=1, hostile=True, trickle_seconds=2, n_mirrors=0)
    assert w.web.cfg.trickle_seconds == 2 and not w.web.mirrors
    assert any(l.startswith("hostile.simweb.test:") for l in w.hostmap_lines)
    assert not any(l.startswith("mirror0.") for l in w.hostmap_lines)
    c = RefCrawler(w.hostmap_lines, timeout=5)
    t = time.time()
    r = c.get(f"http://hostile.simweb.test:{w.port}/trickle")
    assert r.content == b"xx" and time.time() - t < 5
