"""A few rounds of an exported web on N dask workers (0: in-process): each round's wall, the
dask tasks a round runs, and the CPU each kind of process used (issue #49: what a Dask round
costs, and what a second worker adds).

    .venv/bin/python -m benchmarks.dask_rounds --workers 1 --rounds 3 --tag after [--profile]
    .venv/bin/python -m benchmarks.dask_rounds --export /tmp/i49/export-bench50k-1-18091 \\
        --port 18091 --round_pages 5000 --fetch_threads 32 --workers 2 --rounds 5 --pin
    REPO=/path/to/other/checkout .venv/bin/python benchmarks/dask_rounds.py ...   # a before/after pair

Crawl directory on local disk under --work (one machine: every process reaches it), nginx
on --port; --profile writes the launcher's cProfile there too. CPU seconds are split by
process: the launcher's tree, the scheduler, each worker's own process and its children
(page workers, fetch processes, their fork server), nginx apart; pages are nginx's requests.
--pin pins as bench_dask's --pin does (benchmarks/bench_dask.py, `pinning`)."""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(os.environ.get("REPO", Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(REPO))
from benchmarks.bench_dask import (TreeCpu, _round_walls, _task_stream_client, crawl_flags,  # noqa: E402
                                   pinning, task_stream_summary)
from benchmarks.realweb.analyse import read_access_log  # noqa: E402
from benchmarks.realweb.nginx import Nginx  # noqa: E402
from tests.daskcluster import DaskCluster  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tag", default="x")
    ap.add_argument("--config", default="benchmarks/bench500.json")
    ap.add_argument("--export", type=Path, help="an export made already (else made under --work)")
    ap.add_argument("--port", type=int, default=18410)
    ap.add_argument("--round_pages", type=int, default=1000)
    ap.add_argument("--fetch_threads", type=int, default=16)
    ap.add_argument("--work", type=Path, default=Path("/tmp/beamcrawl-dask-rounds"))
    ap.add_argument("--pin", action="store_true", help="each worker's process tree on a core of its own")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--inject_args", nargs="*", default=[], help="further flags for inject, e.g. =--page_processes=0")
    a = ap.parse_args()
    a.inject_args = [x.lstrip("=") for x in a.inject_args]
    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    export = a.export or work / f"export-{Path(a.config).stem}-1-{a.port}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    py = str(REPO / ".venv/bin/python")
    if not (export / "manifest.json").exists():
        subprocess.run([py, "-m", "tests.simweb", "static", "--config", a.config, "--seed", "1", "--port",
                        str(a.port), "--out", str(export)], cwd=REPO, env=env, check=True)
    d = work / f"crawl-{a.tag}"
    subprocess.run(["rm", "-rf", str(d)], check=True)
    seeds = (export / "seeds.txt").read_text().split()
    pins = pinning(a.workers) if a.pin else {}
    pin = lambda who: ["taskset", "-c", pins[who]] if who in pins else []   # noqa: E731
    subprocess.run([py, "-m", "pipelines.inject", *crawl_flags(a, export, str(d)),
                    *[x for s in seeds for x in ("--seed", s)]], cwd=work, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    cl = (DaskCluster(work / f"cluster-{a.tag}", workers=a.workers, python=py, cpus=pins)
          if a.workers else None)
    sc = _task_stream_client(cl.address) if cl else None
    try:
        runner = cl.beam_flags() if cl else []
        pre = ["-m", "cProfile", "-o", str(work / f"launcher-{a.tag}.prof")] if a.profile else []
        cmd = [*pin("launcher"), py, *pre, "-m", "pipelines.crawl", "--crawl_dir", str(d),
               "--rounds", str(a.rounds), *runner]
        cpu = TreeCpu()
        if cl:
            cpu.watch("scheduler", cl.procs[0].pid)
            for i, p in cl.workers.items():
                cpu.watch(f"worker-{i}", p.pid)
        with Nginx(export, a.port, work / f"nginx-{a.tag}") as ng:
            t0 = time.time()
            with open(work / f"crawl-{a.tag}.log", "wb") as log:
                p = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
                cpu.watch("launcher", p.pid)
                cpu.start()
                rc = p.wait()
            wall = time.time() - t0
            cpu.stop()
        if rc:
            print((work / f"crawl-{a.tag}.log").read_text()[-5000:])
            sys.exit(1)
        pages = len({(r.host, r.uri) for r in read_access_log(ng.access_log)})
        rounds = _round_walls(str(d), [])
        print(f"{a.tag}: wall {wall:.1f}s rounds {[round(x, 1) for x in rounds]} pages {pages} "
              f"load {os.getloadavg()[0]:.1f}")
        roles = cpu.by_role()
        total = sum(roles.values())
        print(f"CPU {total:.1f} s, {1000 * total / max(1, pages):.2f} ms/page: "
              + ", ".join(f"{k} {v:.1f}" for k, v in sorted(roles.items())))
        if sc:
            recs = sc.get_task_stream(start=t0)
            s = task_stream_summary(recs, sum(rounds), a.workers)
            print(f"tasks {s['tasks']} ({s['tasks'] / len(rounds):.0f}/round) busy {s['busy_share']} "
                  f"transfer {s['transfer_s']}")
            print("compute top:", list(s["compute_s"].items())[:15])
            json.dump(recs, open(work / f"stream-{a.tag}.json", "w"), default=str)
            for server in (False, True):   # the workers' own sampling profiler: task threads, event loop
                prof = sc.profile(start=t0, server=server)
                print(f"{'worker event loop' if server else 'task threads'}: {prof.get('count', 0)} samples; "
                      "most (self) samples: " + ", ".join(f"{n} {f}" for f, n in _self_samples(prof)[:25]))
    finally:
        if sc:
            sc.close()
        if cl:
            cl.stop()


def _self_samples(tree):
    """[(function, samples in it, not in its callees)] of a distributed profile, most first."""
    from collections import Counter
    own, todo = Counter(), [tree]
    while todo:
        node = todo.pop()
        children = node.get("children", {}).values()
        d = node.get("description", {})
        name = f"{Path(d.get('filename', '?')).name}:{d.get('name', '?')}"
        own[name] += node.get("count", 0) - sum(c.get("count", 0) for c in children)
        todo.extend(children)
    return own.most_common()


if __name__ == "__main__":
    main()
