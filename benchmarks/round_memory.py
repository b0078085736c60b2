"""Peak memory of one round, per process of its tree (issue #12: memory bounded by a budget),
and with `--cpu` the cores each process used, second by second (both cores busy?).

    .venv/bin/python -m benchmarks.bench_cores --round_pages 16000 --work /tmp/bench_cores16 --pairs 1
    .venv/bin/python -m benchmarks.round_memory --work /tmp/bench_cores16 -- --max_pages 5000 --max_per_host 5000
    .venv/bin/python -m benchmarks.round_memory --work /tmp/bench_cores16 --cpu -- --max_pages 5000 --max_per_host 5000

A round of ~45 000 pages needs a bigger web (bench50k's frontier never offers 18 000 URLs):

    .venv/bin/python -m benchmarks.bench_cores --config bench150k --port 18096 --work /tmp/b150 --round_pages 45000 --pairs 0
    .venv/bin/python -m benchmarks.round_memory --config bench150k --port 18096 --work /tmp/b150 -- --max_pages 45207 --max_per_host 45207

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
    """{pid: [rss, pss, uss] peaks (MB)}, (peak tree PSS, seconds, {pid: PSS then}), and
    the CPU seconds each process had used at each whole second ([(second, {pid: cpu})])."""
    top, peaks, best, t0 = psutil.Process(proc.pid), {}, (0, 0.0, {}), time.time()
    cpu, timeline = {}, []
    while proc.poll() is None:
        try:
            now = {}
            for p in [top] + top.children(recursive=True):
                m = p.memory_full_info()
                r = peaks.setdefault(p.pid, [0, 0, 0])
                r[:] = max(r[0], m.rss >> 20), max(r[1], m.pss >> 20), max(r[2], m.uss >> 20)
                now[p.pid] = m.pss >> 20
                times = p.cpu_times()
                cpu[p.pid] = times.user + times.system
            if sum(now.values()) > best[0]:
                best = (sum(now.values()), round(time.time() - t0, 1), now)
        except psutil.Error:   # a helper ended between listing and reading
            pass
        second = int(time.time() - t0)
        if not timeline or timeline[-1][0] < second:
            timeline.append((second, dict(cpu)))
        time.sleep(every)
    return peaks, best, timeline


def cpu_lines(timeline, round_pid):
    """Per second: the cores each process used (a process ended within the second is
    missing from it), and each process's CPU seconds over the round."""
    lines, last = [], {}
    for second, cpu in timeline:
        used = {pid: c - last.get(pid, 0.0) for pid, c in cpu.items()}
        last = cpu
        parts = " ".join(f"{'round' if pid == round_pid else pid}:{u:.2f}" for pid, u in used.items() if u >= 0.01)
        lines.append(f"  {second:4d} s  {sum(used.values()):.2f} cores  {parts}")
    totals = ", ".join(f"{'round' if pid == round_pid else pid} {c:.2f} s" for pid, c in last.items())
    return lines + [f"CPU seconds per process: {totals}"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_cores"), help="bench_cores' --work")
    ap.add_argument("--config", default="bench50k", help="bench_cores' --config")
    ap.add_argument("--port", type=int, default=18095, help="bench_cores' --port")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cpu", action="store_true", help="also print each process's cores, second by second")
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
        peaks, (tree, when, parts), timeline = sample_tree(proc)
        out, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"error: the round exited {proc.returncode}: {err[-2000:]}")
    print(next((line for line in out.splitlines() if line.startswith("round ")), "")[:120])
    print(f"wall {time.time() - started:.1f} s")
    for pid, (rss, pss, uss) in peaks.items():
        role = "round" if pid == proc.pid else "helper"
        print(f"  {role:6} {pid}: peak RSS {rss} MB, PSS {pss} MB, USS {uss} MB")
    print(f"tree PSS peak {tree} MB at {when} s: " + ", ".join(f"{pid} {v}" for pid, v in parts.items()))
    if a.cpu:
        print("\n".join(cpu_lines(timeline, proc.pid)))


if __name__ == "__main__":
    main()
