"""A few rounds of a small exported web on N dask workers (0: in-process): each round's wall
and the dask tasks a round runs (issue #49: the round's fixed overhead on Dask).

    .venv/bin/python -m benchmarks.dask_rounds --workers 1 --rounds 3 --tag after [--profile]
    REPO=/path/to/other/checkout .venv/bin/python benchmarks/dask_rounds.py ...   # a before/after pair

Crawl directory on local disk under /tmp/i49b/work (one machine: every process reaches it),
nginx on --port; --profile writes the launcher's cProfile there too."""
import json, os, subprocess, sys, time, argparse
from pathlib import Path
REPO = Path(os.environ.get("REPO", Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(REPO))
from benchmarks.bench_dask import crawl_flags, task_stream_summary, _task_stream_client, _round_walls
from benchmarks.realweb.nginx import Nginx
from tests.daskcluster import DaskCluster
ap = argparse.ArgumentParser()
ap.add_argument("--workers", type=int, default=1)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--tag", default="x")
ap.add_argument("--config", default="benchmarks/bench500.json")
ap.add_argument("--port", type=int, default=18410)
ap.add_argument("--round_pages", type=int, default=1000)
ap.add_argument("--fetch_threads", type=int, default=16)
ap.add_argument("--profile", action="store_true")
a = ap.parse_args()
a.inject_args = []
work = Path("/tmp/i49b/work"); work.mkdir(parents=True, exist_ok=True)
export = work / f"export-{Path(a.config).stem}-1-{a.port}"
env = {**os.environ, "PYTHONPATH": str(REPO)}
py = str(REPO / ".venv/bin/python")
if not (export / "manifest.json").exists():
    subprocess.run([py, "-m", "tests.simweb", "static", "--config", a.config, "--seed", "1", "--port", str(a.port), "--out", str(export)], cwd=REPO, env=env, check=True)
d = work / f"crawl-{a.tag}"
subprocess.run(["rm", "-rf", str(d)], check=True)
seeds = (export / "seeds.txt").read_text().split()
subprocess.run([py, "-m", "pipelines.inject", *crawl_flags(a, export, str(d)), *[x for s in seeds for x in ("--seed", s)]], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
cl = DaskCluster(work / f"cluster-{a.tag}", workers=a.workers, python=py) if a.workers else None
try:
    runner = cl.beam_flags() if cl else []
    pre = ["-m", "cProfile", "-o", str(work / f"launcher-{a.tag}.prof")] if a.profile else []
    cmd = [py, *pre, "-m", "pipelines.crawl", "--crawl_dir", str(d), "--rounds", str(a.rounds), *runner]
    sc = _task_stream_client(cl.address) if cl else None
    with Nginx(export, a.port, work / f"nginx-{a.tag}") as ng:
        t0 = time.time()
        r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        wall = time.time() - t0
    if r.returncode:
        print(r.stdout[-3000:], r.stderr[-5000:]); sys.exit(1)
    rounds = _round_walls(str(d), [])
    print(f"{a.tag}: wall {wall:.1f}s rounds {[round(x,1) for x in rounds]} load {os.getloadavg()[0]:.1f}")
    if sc:
        recs = sc.get_task_stream(start=t0)
        s = task_stream_summary(recs, sum(rounds), a.workers)
        print(f"tasks {s['tasks']} ({s['tasks']/len(rounds):.0f}/round) busy {s['busy_share']} transfer {s['transfer_s']}")
        print("compute top:", list(s['compute_s'].items())[:15])
        json.dump(recs, open(work / f"stream-{a.tag}.json", "w"), default=str)
finally:
    if cl: cl.stop()
