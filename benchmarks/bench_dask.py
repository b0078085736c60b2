"""Whole crawls in-process and on a dask.distributed cluster of 1 and 2 workers (issue #49).

    .venv/bin/python -m benchmarks.bench_dask --config bench50k --repeats 2      # the issue's table
    nice -n 19 .venv/bin/python -m benchmarks.bench_dask --config benchmarks/bench500.json --round_pages 1000

A simulated web exported as static files is served by nginx on 127.0.0.1 (benchmarks/realweb,
one fresh nginx and access log per crawl), the crawl directory is on moto's S3 server
(tests/s3server.py; `--storage local` puts it on local disk), and each crawl runs to the end
(`pipelines.crawl --until_empty`). Modes: `inprocess` (Beam's default runner), `daskN` (a
scheduler and N workers started with the dask CLI, one thread each, each in its own working
directory: tests/daskcluster.py; `--runner pipelines.daskrunner.DaskRunner`). Repeats run the
modes in turn (A B C, then C B A, ...) so a drift in the machine's load hits each alike.

Per crawl: wall seconds, distinct pages fetched (nginx's log), pages/s, CPU ms per page over the
whole process tree (the launcher and its children, the dask scheduler and workers and their
children, sampled every 0.25 s from psutil; the S3 server's CPU is given apart), coverage of
the pages reachable from the seeds, duplicate fetches, most connections to one host at once,
rounds and their mean wall time. On Dask, where a round's time goes: the scheduler's task
stream, summed per task group (a group is a Beam step: daskfix names tasks after its label),
and how much of the rounds' wall time the workers spent computing. Ends with the table
(median over repeats) and the ratios the issue sets targets for, and each crawl's CPU by
process (launcher, scheduler, workers apart from their page workers and fetch processes).

`--pin` (taskset; see `pinning`) gives each crawling process tree a core of its own: the
in-process crawl on core 0, dask worker i on core i-1, the scheduler, S3 server and nginx on
any core. Unpinned, every process may run on every core: on a 2-core machine one worker
already uses both (its fetch processes and page workers), so "2 workers >= 1.6x one worker
when each has a core" can only be shown pinned; pinned, "dask1 / inprocess" compares one
core with one core.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.realweb.analyse import RobotsRules, analyse, read_access_log
from benchmarks.realweb.nginx import Nginx

REPO = Path(__file__).resolve().parents[1]


class TreeCpu:
    """User+system CPU seconds of process trees, sampled in a thread (a process that ends
    between two samples loses at most one period)."""

    def __init__(self, period=0.25):
        self.period, self.roots, self.seen, self.base = period, {}, {}, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def watch(self, group, pid):
        import psutil
        self.roots.setdefault(group, []).append(psutil.Process(pid))
        self._sample_group(group, self.base)   # CPU already used (a cluster's start) is not the crawl's

    def _sample_group(self, group, into):
        import psutil
        for root in self.roots[group]:
            try:
                procs = [root] + root.children(recursive=True)
            except psutil.Error:
                continue
            for p in procs:
                try:
                    t = p.cpu_times()
                    into[(group, p.pid, p.create_time())] = t.user + t.system
                except psutil.Error:
                    pass

    def _run(self):
        while not self._stop.wait(self.period):
            for group in list(self.roots):
                self._sample_group(group, self.seen)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()
        for group in list(self.roots):
            self._sample_group(group, self.seen)
        out = defaultdict(float)
        for key, cpu in self.seen.items():
            out[key[0]] += cpu - self.base.get(key, 0.0)
        return dict(out)

    def by_role(self):
        """After `stop`: {group: CPU of its root processes, group + "+children": of the rest}
        (a dask worker apart from its page workers and fetch processes)."""
        roots = {(g, p.pid) for g, procs in self.roots.items() for p in procs}
        out = defaultdict(float)
        for (group, pid, ctime), cpu in self.seen.items():
            role = group if (group, pid) in roots else group + "+children"
            out[role] += cpu - self.base.get((group, pid, ctime), 0.0)
        return dict(out)


def crawl_flags(a, export: Path, crawl_dir: str) -> list[str]:
    """The benchmark's crawl settings (those of benchmarks/realweb/run.py's beamcrawl), and
    politeness by host: the export's hosts all resolve to 127.0.0.1 (one nginx stands in for
    hundreds of servers), which --politeness_key ip would make one unit fetched by one task."""
    return ["--crawl_dir", crawl_dir, "--resolve_file", str(export / "hostmap.txt"), "--politeness_key", "host",
            "--allow_loopback", "true", "--allow_domains", "simweb.test", "--deny_extensions", "",
            "--sitemaps", "false", "--delay_per_host", "0", "--expand_duplicates", "true",
            "--max_pages", str(a.round_pages), "--max_per_host", str(a.round_pages), "--store", "none",
            "--fetch_threads", str(a.fetch_threads), "--progress_seconds", "0", *a.inject_args]


def pinning(workers, cores=None):
    """`--pin`: the cores each crawling process tree may run on, as `taskset -c` takes them.
    In-process (0 workers) the launcher, where the whole crawl runs, gets core 0; with N
    workers, worker i gets core (i-1) mod cores and the launcher is not pinned (it only
    builds and submits each round's graph). Not pinned in either case, so free to run on any
    core beside the workers: the dask scheduler, the S3 server and nginx (stand-ins for other
    machines). Children inherit their parent's affinity, and a worker sizes its page workers
    and fetch processes by it (transforms.procs.usable_cores), so a pinned worker is a
    one-core machine."""
    cores = cores or len(os.sched_getaffinity(0))
    if not workers:
        return {"launcher": "0"}
    return {i: str((i - 1) % cores) for i in range(1, workers + 1)}


def task_stream_summary(records, rounds_wall, workers):
    """{group: compute seconds} and the workers' busy share of the rounds' wall time."""
    from distributed.utils import key_split
    compute, transfer = defaultdict(float), 0.0
    for r in records:
        for ss in r.get("startstops", ()):
            secs = ss["stop"] - ss["start"]
            if ss["action"] == "compute":
                compute[key_split(r["key"])] += secs
            elif ss["action"] == "transfer":
                transfer += secs
    busy = sum(compute.values())
    return {"tasks": len(records),
            "compute_s": {k: round(v, 2) for k, v in sorted(compute.items(), key=lambda kv: -kv[1])},
            "transfer_s": round(transfer, 2), "busy_share": round(busy / max(1e-9, rounds_wall * workers), 3)}


def run_one(a, mode, rep, export, reachable, robots, s3):
    from tests.daskcluster import DaskCluster
    workers = int(mode[4:]) if mode.startswith("dask") else 0
    work = a.work / f"{mode}-{rep}"
    work.mkdir(parents=True, exist_ok=True)
    if s3 is not None:
        crawl_dir, storage_flags = f"s3://bench/{mode}-{rep}-{int(time.time())}", s3.beam_flags()
    else:
        crawl_dir, storage_flags = str(work / "crawl"), []
        subprocess.run(["rm", "-rf", crawl_dir], check=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    seeds = (export / "seeds.txt").read_text().split()
    inject = [a.python, "-m", "pipelines.inject", *crawl_flags(a, export, crawl_dir), *storage_flags,
              *[x for s in seeds for x in ("--seed", s)]]
    subprocess.run(inject, cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
    pins = pinning(workers) if a.pin else {}
    cluster = DaskCluster(work / "cluster", workers=workers, python=a.python, cpus=pins) if workers else None
    try:
        runner = cluster.beam_flags() if cluster else []
        launcher_pin = ["taskset", "-c", pins["launcher"]] if "launcher" in pins else []
        cmd = [*launcher_pin, a.python, "-m", "pipelines.crawl", "--crawl_dir", crawl_dir, "--until_empty", "true",
               *storage_flags, *runner]
        cpu = TreeCpu()
        if cluster:
            cpu.watch("scheduler", cluster.procs[0].pid)
            for proc in cluster.workers.values():
                cpu.watch("workers", proc.pid)   # (+children: their page workers, fetch processes)
            stream_client = _task_stream_client(cluster.address)
        if s3 is not None:
            cpu.watch("s3", s3.proc.pid)
        with Nginx(export, a.port, work / "nginx", workers=a.nginx_workers) as ng:
            t0 = time.time()
            with open(work / "crawl.log", "wb") as log:
                p = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
                cpu.watch("launcher", p.pid)
                cpu.start()
                rc = p.wait()
            wall = time.time() - t0
            used = cpu.stop()
        if rc != 0:
            raise SystemExit(f"error: {mode} crawl exited {rc}; see {work / 'crawl.log'}")
        res = analyse(read_access_log(ng.access_log), reachable, robots, a.port)
        res.update(mode=mode, repeat=rep, pinned=bool(a.pin), pins={str(k): v for k, v in pins.items()}, wall=wall, cpu=used.get("launcher", 0) + used.get("scheduler", 0) + used.get("workers", 0),
                   cpu_s3=used.get("s3", 0.0))
        res["pages_per_s"] = res["pages"] / wall
        res["cpu_ms_per_page"] = 1000 * res["cpu"] / max(1, res["pages"])
        res["rounds"] = _round_walls(crawl_dir, storage_flags)
        res["cpu_by_process"] = {k: round(v, 2) for k, v in sorted(cpu.by_role().items())}
        if cluster:
            records = stream_client.get_task_stream(start=t0)
            stream_client.close()
            res["dask"] = task_stream_summary(records, sum(res["rounds"]), workers)
        return res
    finally:
        if cluster:
            cluster.stop()


def _task_stream_client(address):
    from distributed import Client
    c = Client(address, timeout=60)
    c.get_task_stream(count=0)   # the scheduler records task streams from now on
    return c


def _round_walls(crawl_dir, storage_flags):
    from pipelines import storage
    from pipelines.crawldir import CrawlDir
    storage.use(storage_flags)
    crawl = CrawlDir(crawl_dir)
    return [crawl.read_report(n)["wall_seconds"] for n in crawl.committed_rounds() if n > 0]


def fmt_table(rows, pinned=False):
    by_mode = defaultdict(list)
    for r in rows:
        by_mode[r["mode"]].append(r)
    cols = ["mode", "repeats", "wall s", "pages", "pages/s", "CPU ms/page", "S3 CPU ms/page", "coverage",
            "duplicate fetches", "max conns/host", "rounds", "mean round s"]
    out = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    med = {}
    for mode, rs in by_mode.items():
        m = {k: statistics.median(r[k] for r in rs) for k in ("wall", "pages", "pages_per_s", "cpu_ms_per_page",
                                                              "cpu_s3", "coverage")}
        med[mode] = m
        rounds = [len(r["rounds"]) for r in rs]
        mean_round = statistics.median(statistics.mean(r["rounds"]) for r in rs if r["rounds"])
        each = ", ".join(f"{r['pages_per_s']:.1f}" for r in rs)
        out.append(f"| {mode} | {len(rs)} | {m['wall']:.1f} | {m['pages']:.0f} | {m['pages_per_s']:.1f} "
                   f"({each}) | {m['cpu_ms_per_page']:.2f} | "
                   f"{1000 * m['cpu_s3'] / max(1, m['pages']):.2f} | {100 * m['coverage']:.2f} % | "
                   f"{max(r['duplicate_fetches'] for r in rs)} | {max(r['max_conns_per_host'] for r in rs)} | "
                   f"{'/'.join(map(str, sorted(set(rounds))))} | {mean_round:.1f} |")
    out.append("")
    ratio = lambda a, b: med[a]["pages_per_s"] / med[b]["pages_per_s"]   # noqa: E731
    if pinned:   # (pinning: in-process on core 0, worker i on core i-1)
        if "inprocess" in med and "dask1" in med:
            out.append(f"pinned: dask1 / inprocess pages/s: {ratio('dask1', 'inprocess'):.2f}x "
                       "(each crawl on one core; scheduler, S3 server and nginx on any core)")
        if "dask1" in med and "dask2" in med:
            out.append(f"pinned: dask2 / dask1 pages/s: {ratio('dask2', 'dask1'):.2f}x (target >= 1.6x when each "
                       "worker has a core: here each worker's tree on a core of its own; scheduler, launcher, "
                       "S3 server and nginx on any core, beside them)")
    else:
        if "inprocess" in med and "dask2" in med:
            out.append(f"dask2 / inprocess pages/s: {ratio('dask2', 'inprocess'):.2f}x "
                       f"(target >= 0.7x on the same cores)")
        if "dask1" in med and "dask2" in med:
            out.append(f"dask2 / dask1 pages/s: {ratio('dask2', 'dask1'):.2f}x (unpinned: both on the same 2 cores; "
                       f"the target >= 1.6x is for each worker on a core of its own: --pin)")
    for r in rows:
        if "dask" in r:
            d = r["dask"]
            top = ", ".join(f"{k} {v:.1f}" for k, v in list(d["compute_s"].items())[:8])
            out.append(f"{r['mode']} #{r['repeat']}: {d['tasks']} dask tasks in {len(r['rounds'])} rounds; "
                       f"workers busy {100 * d['busy_share']:.0f} % of the rounds' wall; compute s by step: {top}; "
                       f"transfers {d['transfer_s']:.1f} s")
    for r in rows:
        if "cpu_by_process" in r:
            out.append(f"{r['mode']} #{r['repeat']} CPU s by process: "
                       + ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_by_process"].items()))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_dask", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="bench50k",
                    help="bench5k | bench50k (tests/simweb/static.py) or a JSON web config (tests/simweb/config.py)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18080, help="nginx port (also in the exported URLs)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/beamcrawl-bench-dask"))
    ap.add_argument("--python", default=str(REPO / ".venv/bin/python"))
    ap.add_argument("--modes", default="inprocess,dask1,dask2", help="comma list of inprocess, daskN")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--round_pages", type=int, default=5000, help="--max_pages and --max_per_host")
    ap.add_argument("--fetch_threads", type=int, default=32)
    ap.add_argument("--storage", choices=("s3", "local"), default="s3")
    ap.add_argument("--nginx_workers", type=int, default=1)
    ap.add_argument("--pin", action="store_true",
                    help="pin each crawling process tree to a core of its own with taskset (children inherit it, "
                         "and size their helper processes by it): inprocess: the launcher on core 0; daskN: worker "
                         "i on core i-1 (mod cores), the launcher not pinned. Never pinned: the dask scheduler, "
                         "the S3 server, nginx (they run on any core, beside the crawl). Shows 'each worker has a "
                         "core' on a machine with as many cores as workers; unpinned, every process may use every core")
    ap.add_argument("--inject_args", nargs=argparse.REMAINDER, default=[], help="further flags for inject (last)")
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    bad = [m for m in modes if m != "inprocess" and not (m.startswith("dask") and m[4:].isdigit() and int(m[4:]) > 0)]
    if bad:
        raise SystemExit(f"error: --modes: unknown mode {bad[0]!r}; use inprocess or daskN (N workers)")
    a.work.mkdir(parents=True, exist_ok=True)
    export = a.work / f"export-{Path(a.config).stem}-{a.seed}-{a.port}"
    if not (export / "manifest.json").exists():
        subprocess.run([sys.executable, "-m", "tests.simweb", "static", "--config", a.config, "--seed", str(a.seed),
                        "--port", str(a.port), "--out", str(export)],
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    manifest = json.loads((export / "manifest.json").read_text())
    reachable = set((export / "reachable.txt").read_text().split())
    robots = RobotsRules.from_export(export)
    commit = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"],
                            capture_output=True, text=True).stdout.strip()
    print(f"# web {a.config} seed {a.seed}: {manifest['n_pages']} pages on {manifest['n_hosts']} hosts, "
          f"{len(reachable)} reachable; storage {a.storage}; {os.cpu_count()} cores; at {commit[:70]}", flush=True)
    s3 = None
    if a.storage == "s3":
        from tests.s3server import S3Server
        s3 = S3Server(a.work, buckets=("bench",))
    rows = []
    try:
        for rep in range(a.repeats):
            for mode in (modes if rep % 2 == 0 else modes[::-1]):
                print(f"{time.strftime('%H:%M:%S')} {mode} #{rep}: crawling (load {os.getloadavg()[0]:.1f})",
                      flush=True)
                res = run_one(a, mode, rep, export, reachable, robots, s3)
                rows.append(res)
                print(f"{time.strftime('%H:%M:%S')} {mode} #{rep}: "
                      f"{json.dumps({k: v for k, v in res.items() if k != 'violation_examples'})}", flush=True)
                (a.work / "results.json").write_text(json.dumps(rows, indent=1))
    finally:
        if s3 is not None:
            s3.stop()
    print(fmt_table(rows, pinned=a.pin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
