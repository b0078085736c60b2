"""Peak memory of one round against its page count, and the --memory_mb budget (issue #12).

    .venv/bin/python -m benchmarks.bench_memory --sizes 1000 5000 16000 \
        --budgets default 256 [--before /path/to/other/checkout] [--pages 60000]

Serves the `bighosts` simulated web (4 hosts, ~100 links per page) with `--pages` pages on
loopback, crawls it until the frontier holds more than the largest size (a warm crawl
directory), then for each size N runs ONE round of N pages (`--max_pages N --max_per_host N
--conns_per_host 4 --delay_per_host 0`) in a fresh `python -m pipelines.round` process on a
copy of that directory, once per code version and budget: this checkout at each
`--budgets` value (`default` = the flag not given), and the checkout `--before` names
(e.g. main before the memory budget) without the flag. Prints each round's peak RSS (GNU
time's %M of the round process), wall time and pages/s, and the ratio of the largest round's peak to the
smallest's. "with page workers" sums the round's process tree (sampled every 0.2 s with
psutil; --page_processes parses in worker processes). Rows are run one after another, so pages/s compare within one run. Not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.simweb.process import SimWebProcess

REPO = Path(__file__).resolve().parents[1]
COMMON = ["--conns_per_host", "4", "--progress_seconds", "0"]


def warm_crawl(web, d, largest):
    """Inject the seeds and run rounds until the frontier holds more than `largest` URLs."""
    flags = ["--crawl_dir", str(d), "--resolve_file", str(web.hostmap_file), "--allow_loopback",
             "true", "--delay_per_host", "0", "--politeness_key", "host", "--deny_extensions", "", "--allow_domains",
             "simweb.test", "--sitemaps", "false", "--keep_snapshots", "1"]
    seeds = [a for s in web.seeds for a in ("--seed", s)]
    subprocess.run([sys.executable, "-m", "pipelines.inject", *flags, *seeds], cwd=REPO,
                   check=True, capture_output=True)
    for _ in range(8):
        report = run_round(REPO, d, 1000, [])
        if report["pending"] > largest:
            return report
    raise SystemExit(f"the warm frontier holds only {report['pending']} URLs; raise --pages")


def run_round(code, d, pages, extra):
    """One round of `pages` pages by the code at `code`; its report plus peak RSS and wall."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    # peak RSS from /usr/bin/time: a child's ru_maxrss read here would start at this
    # process's own peak (Linux carries it over fork/vfork + exec), and this one holds the web
    proc = subprocess.Popen(["/usr/bin/time", "-f", "maxrss_kb=%M", sys.executable, "-m",
                             "pipelines.round", "--crawl_dir", str(d), "--max_pages", str(pages),
                             "--max_per_host", str(pages), "--round_growth", "0", *COMMON, *extra],
                            cwd=code, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    tree_peak = 0   # the round and its page-parsing worker processes, sampled
    try:
        import psutil
        top = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                tree_peak = max(tree_peak, sum(c.memory_info().rss for c in top.children(recursive=True)))
            except psutil.Error:
                pass
            time.sleep(0.2)
    except ImportError:
        pass
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"round failed ({code}):\n{out}\n{err[-3000:]}")
    rss_kb = int(err.rsplit("maxrss_kb=", 1)[1].split()[0])
    n = max(int(p.name) for p in (Path(d) / "rounds").iterdir() if (p / "_COMMITTED").exists())
    report = json.loads((Path(d) / "rounds" / f"{n:06d}" / "report.json").read_text())
    fetched = report.get("visited", 0)
    pending = report.get("frontier_size", 0)
    return {"fetched": fetched, "pending": pending, "rss_mb": rss_kb / 1024, "tree_mb": tree_peak / 2**20,
            "wall": wall, "pages_s": fetched / wall if wall else 0.0}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 16000])
    ap.add_argument("--budgets", nargs="+", default=["default", "256"])
    ap.add_argument("--before", default=None, help="another checkout to compare (no --memory_mb)")
    ap.add_argument("--pages", type=int, default=60000, help="pages of the simulated web")
    args = ap.parse_args(argv)
    variants = ([("before", Path(args.before), [])] if args.before else []) + [
        (f"after, --memory_mb {b}", REPO, [] if b == "default" else ["--memory_mb", b])
        for b in args.budgets]
    web = SimWebProcess("bighosts", seed=1, n_pages=args.pages)
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    try:
        warm = tmp / "warm"
        w = warm_crawl(web, warm, max(args.sizes))
        print(f"warm crawl: frontier of {w['pending']} URLs; bighosts web of {args.pages} pages", flush=True)
        print("| pages per round | code | fetched | peak RSS MB | with page workers MB | wall s | pages/s |")
        print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
        peaks = {}
        for size in args.sizes:
            for name, code, extra in variants:
                d = tmp / "run"
                shutil.rmtree(d, ignore_errors=True)
                shutil.copytree(warm, d)
                r = run_round(code, d, size, extra)
                peaks.setdefault(name, {})[size] = r["rss_mb"]
                print(f"| {size} | {name} | {r['fetched']} | {r['rss_mb']:.0f} | {r['tree_mb']:.0f} | {r['wall']:.1f} | "
                      f"{r['pages_s']:.1f} |", flush=True)
        lo, hi = min(args.sizes), max(args.sizes)
        for name, by_size in peaks.items():
            print(f"{name}: peak RSS at {hi} pages / at {lo} pages = {by_size[hi] / by_size[lo]:.2f}")
    finally:
        web.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
