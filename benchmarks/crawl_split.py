"""Where a whole crawl's wall time goes, stage by stage, with how busy the cores were (#53).

    .venv/bin/python -m benchmarks.crawl_split --config bench50k --port 18090 --work /tmp/bp

Crawls a static export to the end as benchmarks.realweb.run does (same flags; any of its flags
may follow), with `pipelines.crawl` under benchmarks/stagetimer.py (one line per executed
stage of the in-process runner) while /proc/stat is sampled every 50 ms. Prints, over the
whole crawl: the fetch stages (those holding the Fetch transforms), every other stage and the
time between stages (building, translating, committing a round), each with its wall seconds
and the machine's busy cores during it; then the slowest other stages by the transforms fused
into them, summed over the rounds. The machine's cores, not the crawl's tree: run it on an
otherwise idle machine. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.realweb import run as realweb
from benchmarks.realweb.nginx import Nginx

HERE = Path(__file__).resolve().parent


class CpuSampler(threading.Thread):
    """(time, busy jiffies) of the whole machine every `period` seconds."""

    def __init__(self, period=0.05):
        super().__init__(daemon=True)
        self.period, self.samples, self.stop = period, [], threading.Event()

    @staticmethod
    def _busy():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v) - v[3] - v[4]     # all but idle and iowait

    def run(self):
        while not self.stop.is_set():
            self.samples.append((time.time(), self._busy()))
            time.sleep(self.period)

    def cores(self, t0, t1) -> float:
        """Busy cores between t0 and t1 (epoch seconds), from the nearest samples."""
        ts = [s[0] for s in self.samples]
        i, j = bisect.bisect_left(ts, t0), bisect.bisect_right(ts, t1) - 1
        if j <= i:
            return 0.0
        hz = os.sysconf("SC_CLK_TCK")
        return (self.samples[j][1] - self.samples[i][1]) / hz / (ts[j] - ts[i])


def split(stages, sampler, t_start, t_end):
    """The fetch stages, the other stages and the gaps between them: seconds and cores."""
    groups = collections.defaultdict(lambda: [0.0, 0.0])    # name -> [seconds, core-seconds]
    by_transforms = collections.defaultdict(lambda: [0.0, 0.0, 0])
    prev_end = t_start
    for s in stages:
        a, b = s["t0"], s["t0"] + s["seconds"]
        kind = "fetch stages" if any(t.startswith("Fetch") for t in s["transforms"]) else "other stages"
        c = sampler.cores(a, b) * s["seconds"]
        groups[kind][0] += s["seconds"]
        groups[kind][1] += c
        if kind == "other stages":
            key = ", ".join(s["transforms"][:4]) or "(unnamed)"
            by_transforms[key][0] += s["seconds"]
            by_transforms[key][1] += c
            by_transforms[key][2] += 1
        gap = a - prev_end
        if gap > 0:
            groups["between stages"][0] += gap
            groups["between stages"][1] += sampler.cores(prev_end, a) * gap
        prev_end = max(prev_end, b)
    tail = t_end - prev_end
    if tail > 0:
        groups["between stages"][0] += tail
        groups["between stages"][1] += sampler.cores(prev_end, t_end) * tail
    return groups, by_transforms


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.crawl_split", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=15, help="slowest other stages to list")
    a, rest = ap.parse_known_args(argv)
    opts = realweb.parser().parse_args(rest)
    opts.work.mkdir(parents=True, exist_ok=True)
    export = realweb.ensure_export(opts)
    inject, crawl = realweb.beamcrawl_cmds(opts, export, opts.work)
    stages_path = opts.work / "crawl_split.jsonl"
    crawl = [crawl[0], str(HERE / "stagetimer.py"), str(stages_path), "--module", *map(str, crawl[2:])]
    env = {**os.environ, "PYTHONPATH": str(opts.repo)}
    log = open(opts.work / "crawl_split.log", "w")   # noqa: SIM115
    with Nginx(export, opts.port, opts.work / "nginx-split", workers=opts.nginx_workers):
        subprocess.run(list(map(str, inject)), cwd=opts.repo, env=env, stdout=log, stderr=log, check=True)
        sampler = CpuSampler()
        sampler.start()
        t_start = time.time()
        subprocess.run(crawl, cwd=opts.repo, env=env, stdout=log, stderr=log, check=True)
        t_end = time.time()
        sampler.stop.set()
    lines = [json.loads(x) for x in stages_path.read_text().splitlines()]
    # stagetimer's starts count from its own start, a moment after t_start: anchored on it
    stages = [dict(s, t0=t_start + s["start"]) for s in lines]
    groups, by_t = split(stages, sampler, t_start, t_end)
    wall = t_end - t_start
    print(f"crawl {wall:.1f} s wall, machine {sampler.cores(t_start, t_end):.2f} cores busy on average")
    print("| part | seconds | share of wall | cores busy |\n| --- | --- | --- | --- |")
    for k in ("fetch stages", "other stages", "between stages"):
        s, c = groups[k]
        print(f"| {k} | {s:.1f} | {100 * s / wall:.0f} % | {c / s if s else 0:.2f} |")
    print(f"\nslowest other stages (summed over rounds):\n| transforms | seconds | cores | runs |\n| --- | --- | --- | --- |")
    for k, (s, c, n) in sorted(by_t.items(), key=lambda kv: -kv[1][0])[:a.top]:
        print(f"| {k} | {s:.2f} | {c / s if s else 0:.2f} | {n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
