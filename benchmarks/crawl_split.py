"""Where a whole crawl's wall time goes, stage by stage, with how busy the cores were (#53).

    .venv/bin/python -m benchmarks.crawl_split --config bench50k --port 18090 --work /tmp/bp

Crawls a static export to the end as benchmarks.realweb.run does (same flags; any of its flags
may follow), with `pipelines.crawl` under benchmarks/stagetimer.py (one line per executed
stage of the in-process runner) while the crawl's process tree's CPU is sampled every 50 ms. Prints, over the
whole crawl: the fetch stages (those holding the Fetch transforms), every other stage and the
time between stages (building, translating, committing a round), each with its wall seconds
and the tree's busy cores during it, and of those the crawl's own process's (the stage
timer's CPU of each stage; between stages, the rest of that process's CPU); the tree's CPU by process (the crawl's own, the fetch
processes, page workers, MinHash helpers: each helper names itself in the OS); then the
slowest other stages by the transforms fused into them, summed over the rounds (with
`--all_transforms`, every transform of the stage).
Cores are the crawl's tree's (its own processes, whatever else runs), but other load still
slows it. Nothing is asserted.
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
    """(time, CPU seconds so far) of a process tree every `period` seconds: each process's
    user+system time at its last sample, so a process that ended keeps what it used."""

    def __init__(self, pid, period=0.05):
        super().__init__(daemon=True)
        self.pid, self.period, self.samples, self.stop = pid, period, [], threading.Event()
        self._seen, self._names = {}, {}

    def _cpu(self):
        import psutil
        try:
            root = psutil.Process(self.pid)
            procs = [root] + root.children(recursive=True)
        except psutil.Error:
            procs = []
        for p in procs:
            try:
                key = (p.pid, p.create_time())
                t = p.cpu_times()
                self._seen[key] = t.user + t.system
                self._names[key] = "root" if p.pid == self.pid else p.name()   # (a helper names itself)
            except psutil.Error:
                pass
        return sum(self._seen.values())

    def by_role(self) -> dict:
        """{role: CPU seconds} over the run, by the name each process had at its last sample
        (`role_of`)."""
        out = collections.Counter()
        for key, cpu in self._seen.items():
            out[role_of(self._names.get(key, ""))] += cpu
        return dict(out)

    def run(self):
        while not self.stop.is_set():
            self.samples.append((time.time(), self._cpu()))
            time.sleep(self.period)

    def cpu_at(self, t) -> float:
        """The tree's CPU seconds at time t, interpolated between the samples around it."""
        return cpu_at(self.samples, t)

    def cores(self, t0, t1) -> float:
        """The tree's busy cores between t0 and t1 (epoch seconds). Interpolated, so a stage
        shorter than the sampling period gets the rate around it (not 0, which counted every
        short stage idle) and the parts of a crawl add up to its CPU."""
        if t1 <= t0:
            return 0.0
        return (self.cpu_at(t1) - self.cpu_at(t0)) / (t1 - t0)


ROLES = {"root": "the crawl's process (Beam's stages; pages parsed inline)",
         "beamcrawl-fetch": "fetch processes", "beamcrawl-page": "page workers",
         "beamcrawl-sign": "MinHash helpers"}


def role_of(name: str) -> str:
    """A process's part in the crawl from its OS name: the crawl's own process (`root`) or a
    helper, which names itself (transforms.procs.name_this_process); anything else (the fork
    server, a process not named yet) is "other"."""
    return ROLES.get(name, "other (fork server, ...)")


def cpu_at(samples, t) -> float:
    """Cumulative CPU at time t from sorted (time, cumulative CPU) samples: linear between
    the two around t, the first or last sample's outside them."""
    if not samples:
        return 0.0
    j = bisect.bisect_left(samples, t, key=lambda s: s[0])
    if j == 0:
        return samples[0][1]
    if j == len(samples):
        return samples[-1][1]
    (ta, ca), (tb, cb) = samples[j - 1], samples[j]
    return ca + (cb - ca) * (t - ta) / (tb - ta) if tb > ta else cb


def stage_kind(stage) -> str:
    return "fetch stages" if any(t.startswith("Fetch") for t in stage["transforms"]) else "other stages"


def own_cpu(stages, process_cpu):
    """{part: CPU seconds of the crawl's own process in it}: the stage timer's `cpu` of each
    stage summed by kind, and "between stages" what is left of `process_cpu` (the process's
    whole CPU); None when the stage lines carry no `cpu` (an older stage timer)."""
    if not stages or any("cpu" not in s for s in stages):
        return None
    out = {"fetch stages": 0.0, "other stages": 0.0}
    for s in stages:
        out[stage_kind(s)] += s["cpu"]
    out["between stages"] = max(0.0, process_cpu - out["fetch stages"] - out["other stages"])
    return out


def split(stages, sampler, t_start, t_end, names=4):
    """The fetch stages, the other stages and the gaps between them: seconds and cores."""
    groups = collections.defaultdict(lambda: [0.0, 0.0])    # name -> [seconds, core-seconds]
    by_transforms = collections.defaultdict(lambda: [0.0, 0.0, 0])
    prev_end = t_start
    for s in stages:
        a, b = s["t0"], s["t0"] + s["seconds"]
        kind = stage_kind(s)
        c = sampler.cores(a, b) * s["seconds"]
        groups[kind][0] += s["seconds"]
        groups[kind][1] += c
        if kind == "other stages":
            key = ", ".join(s["transforms"][:names]) or "(unnamed)"
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
    ap.add_argument("--all_transforms", action="store_true", help="name a stage by all its transforms")
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
        t_start = time.time()
        proc = subprocess.Popen(crawl, cwd=opts.repo, env=env, stdout=log, stderr=log)
        sampler = CpuSampler(proc.pid)
        sampler.start()
        if proc.wait():
            raise SystemExit(f"error: the crawl exited {proc.returncode}; see {opts.work / 'crawl_split.log'}")
        t_end = time.time()
        sampler.stop.set()
    lines = [json.loads(x) for x in stages_path.read_text().splitlines()]
    # stagetimer's starts count from its own start, a moment after t_start: anchored on it
    stages = [dict(s, t0=t_start + s["start"]) for s in lines]
    groups, by_t = split(stages, sampler, t_start, t_end, None if a.all_transforms else 4)
    wall = t_end - t_start
    roles = sampler.by_role()
    own = own_cpu(lines, roles.get(ROLES["root"], 0.0))
    print(f"crawl {wall:.1f} s wall, {sampler.cores(t_start, t_end):.2f} cores busy on average (the crawl's tree)")
    print("| part | seconds | share of wall | cores busy | of them the crawl's own process |\n| --- | --- | --- | --- | --- |")
    for k in ("fetch stages", "other stages", "between stages"):
        s, c = groups[k]
        mine = f"{own[k] / s:.2f}" if own and s else "-"
        print(f"| {k} | {s:.1f} | {100 * s / wall:.0f} % | {c / s if s else 0:.2f} | {mine} |")
    total = sum(roles.values()) or 1.0
    print("\n| process | CPU s | share of the tree's CPU |\n| --- | --- | --- |")
    for k, v in sorted(roles.items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {v:.1f} | {100 * v / total:.0f} % |")
    print(f"\nslowest other stages (summed over rounds):\n| transforms | seconds | cores | runs |\n| --- | --- | --- | --- |")
    for k, (s, c, n) in sorted(by_t.items(), key=lambda kv: -kv[1][0])[:a.top]:
        print(f"| {k} | {s:.2f} | {c / s if s else 0:.2f} | {n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
