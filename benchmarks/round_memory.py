"""Peak memory of one round, per process of its tree (issue #12: memory bounded by a budget).

    .venv/bin/python -m benchmarks.bench_cores --round_pages 16000 --work /tmp/bench_cores16 --pairs 1
    .venv/bin/python -m benchmarks.round_memory --work /tmp/bench_cores16 -- --max_pages 5000 --max_per_host 5000

Runs the next round of `bench_cores`' base crawl (kept in `--work`, with the nginx export of
its web) from a fresh copy, with the round flags after `--`, and samples every process of the
round's tree every 0.1 s: the round's process, the fork server and its helpers (the fetch
process, the page workers). Prints each process's peak RSS / PSS / USS (MB), and the peak of
the tree's summed PSS with its parts at that moment (PSS counts a page shared by forked
processes once). Not a test; no figure is asserted.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

from benchmarks.realweb.nginx import Nginx

REPO = Path(__file__).resolve().parents[1]


def sample_tree(proc, every=0.1):
    """{pid: [rss, pss, uss] peaks (MB)} and (peak tree PSS, seconds, {pid: PSS then})."""
    top, peaks, best, t0 = psutil.Process(proc.pid), {}, (0, 0.0, {}), time.time()
    while proc.poll() is None:
        try:
            now = {}
            for p in [top] + top.children(recursive=True):
                m = p.memory_full_info()
                r = peaks.setdefault(p.pid, [0, 0, 0])
                r[:] = max(r[0], m.rss >> 20), max(r[1], m.pss >> 20), max(r[2], m.uss >> 20)
                now[p.pid] = m.pss >> 20
            if sum(now.values()) > best[0]:
                best = (sum(now.values()), round(time.time() - t0, 1), now)
        except psutil.Error:   # a helper ended between listing and reading
            pass
        time.sleep(every)
    return peaks, best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_cores"), help="bench_cores' --work")
    ap.add_argument("--config", default="bench50k", help="bench_cores' --config")
    ap.add_argument("--port", type=int, default=18095, help="bench_cores' --port")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("round_args", nargs="*", help="flags of pipelines.round (after --)")
    a = ap.parse_args(argv)
    export = a.work / f"export-{a.config}-{a.port}"
    if not (a.work / "base").is_dir() or not export.is_dir():
        raise SystemExit(f"error: no base crawl in {a.work}; run benchmarks.bench_cores with --work {a.work} first")
    crawl = a.work / "round-memory"
    shutil.rmtree(crawl, ignore_errors=True)
    shutil.copytree(a.work / "base", crawl)
    with Nginx(export, a.port, a.work / "nginx-memory"):
        started = time.time()
        proc = subprocess.Popen([a.python, "-m", "pipelines.round", "--crawl_dir", str(crawl), *a.round_args],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peaks, (tree, when, parts) = sample_tree(proc)
        out, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"error: the round exited {proc.returncode}: {err[-2000:]}")
    print(next((line for line in out.splitlines() if line.startswith("round ")), "")[:120])
    print(f"wall {time.time() - started:.1f} s")
    for pid, (rss, pss, uss) in peaks.items():
        role = "round" if pid == proc.pid else "helper"
        print(f"  {role:6} {pid}: peak RSS {rss} MB, PSS {pss} MB, USS {uss} MB")
    print(f"tree PSS peak {tree} MB at {when} s: " + ", ".join(f"{pid} {v}" for pid, v in parts.items()))


if __name__ == "__main__":
    main()
