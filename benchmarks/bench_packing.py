"""Two crawls one after the other against the same two at once: the CPU a crawl leaves idle (#53).

    .venv/bin/python -m benchmarks.bench_packing --config bench50k --port 18090 --work /tmp/bp [--pairs 2]

A round fetches on both cores (its own process, the fetch processes and page workers keep
the machine busy) and then runs its post-fetch stages on about one. How much faster a crawl could be if
those stages overlapped with the next round's fetch is bounded by how much faster two whole
crawls run side by side than one after the other: the second crawl fills the core the first
leaves idle, at the price of their contention. This measures that bound on this machine.

The simulated web's `--config` (or `--export`) is served by one nginx, as in
benchmarks.realweb.run (same flags; any of its flags may follow). Per pair: both crawls are
injected (not timed), then run one after the other ("sequential") or both at once
("concurrent"), the two modes alternating; each crawl is `pipelines.crawl --until_empty`, in a
crawl directory of its own. Printed per run: wall seconds, pages both crawls visited, pages/s,
CPU seconds of both process trees (sampled, as realweb.run does) and busy cores; then each
pair's concurrent / sequential pages/s. Not a test; nothing is asserted.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.realweb import run as realweb
from benchmarks.realweb.nginx import Nginx

DOWNLOADED = re.compile(r"page sets: downloaded (\d+)")


def parser():
    ap = realweb.parser()
    ap.description = __doc__.split("\n")[0]
    ap.add_argument("--pairs", type=int, default=2, help="sequential/concurrent pairs, alternated")
    return ap


def _downloaded(log: Path) -> int:
    """The crawl's downloaded pages, from the last round's report line."""
    found = DOWNLOADED.findall(log.read_text(errors="replace"))
    if not found:
        raise SystemExit(f"error: no round report in {log}; see it for the crawl's error")
    return int(found[-1])


def run_together(cmds, cwd, env, logs, concurrent: bool) -> dict:
    """Run the crawl commands `cmds` (one list each) one after another or all at once; wall
    seconds and the CPU seconds of every process tree (each process's CPU at its last sample)."""
    import psutil
    cpu_seen = {}
    t0 = time.time()

    def start(cmd, log):
        p = subprocess.Popen(list(map(str, cmd)), cwd=cwd, env=env, stdout=open(log, "wb"),
                             stderr=subprocess.STDOUT)
        return p, psutil.Process(p.pid)

    def wait(running):
        while any(p.poll() is None for p, _ in running):
            for _, root in running:
                realweb._tree_rss(root, cpu_seen)
            time.sleep(0.2)
        for (p, _), log in zip(running, logs):
            if p.returncode != 0:
                raise SystemExit(f"error: {' '.join(map(str, p.args[:4]))} exited {p.returncode}; see {log}")

    if concurrent:
        wait([start(c, log) for c, log in zip(cmds, logs)])
    else:
        for c, log in zip(cmds, logs):
            wait([start(c, log)])
    wall = time.time() - t0
    pages = sum(_downloaded(log) for log in logs)
    cpu = sum(cpu_seen.values())
    return {"wall": wall, "pages": pages, "pages_per_s": pages / wall, "cpu": cpu, "cores": cpu / wall}


def main(argv=None):
    a = parser().parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    export = realweb.ensure_export(a)
    env = {**os.environ, "PYTHONPATH": str(a.repo)}
    rows = []
    with Nginx(export, a.port, a.work / "nginx-packing", workers=a.nginx_workers):
        for i in range(a.pairs):
            pair = {}
            for mode in (("sequential", "concurrent") if i % 2 == 0 else ("concurrent", "sequential")):
                crawls = [realweb.beamcrawl_cmds(a, export, a.work / f"packing-{k}") for k in "ab"]
                for k, (inject, _) in zip("ab", crawls):
                    (a.work / f"packing-{k}").mkdir(exist_ok=True)
                    realweb.measure([inject], a.repo, env, a.work / f"packing-inject-{k}.log")
                logs = [a.work / f"packing-{k}.log" for k in "ab"]
                r = run_together([c for _, c in crawls], a.repo, env, logs, mode == "concurrent")
                pair[mode] = r
                print(f"{time.strftime('%H:%M:%S')} pair {i + 1} {mode}: {r['wall']:.1f} s, {r['pages']} pages, "
                      f"{r['pages_per_s']:.1f} pages/s, CPU {r['cpu']:.1f} s, {r['cores']:.2f} cores", flush=True)
            rows.append(pair)
    ratios = [p["concurrent"]["pages_per_s"] / p["sequential"]["pages_per_s"] for p in rows]
    print("\n| pair | sequential s | concurrent s | sequential cores | concurrent cores | concurrent / sequential pages/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, (p, q) in enumerate(zip(rows, ratios), 1):
        print(f"| {i} | {p['sequential']['wall']:.1f} | {p['concurrent']['wall']:.1f} | "
              f"{p['sequential']['cores']:.2f} | {p['concurrent']['cores']:.2f} | {q:.2f} |")
    print(f"\nmedian concurrent / sequential: {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
