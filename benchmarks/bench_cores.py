"""One big round on one process against the same round on several (issue #12: both cores).

    .venv/bin/python -m benchmarks.bench_cores [--config bench50k] [--round_pages 5000] [--pairs 3]

The simulated web's `--config` is exported as static files and served by nginx on loopback
(benchmarks/realweb). A crawl is injected and run until its frontier offers `--round_pages`
URLs; that crawl directory is kept. Then the same next round is run from a fresh copy of it,
A B A B ...: A with the flags `--a_args`, B with `--b_args` (by default A is the defaults,
which parse a big round's pages on `--page_processes auto` worker processes, and B parses
in the fetching process; `--a_args "--direct_running_mode multi_processing
--direct_num_workers 2"` tries Beam's own worker processes). Per run: wall seconds, pages fetched,
pages/s, CPU seconds (user+sys of the round and every process it waited for; page
worker processes started by a fork server are not among those: their parse seconds are in
the report's time split), peak RSS of
the largest process; then the median of the pairwise ratios A/B. Also a check that both
commit the same state (visited URLs and frontier fps). Not a test; no figure is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from benchmarks.realweb.nginx import Nginx
from pipelines.crawldir import CrawlDir
from tests.simweb.static import export_config


def _run(cmd, log):
    """Wall seconds, CPU seconds and peak RSS (MB) of `cmd` itself (wait4: this child's own
    rusage; RUSAGE_CHILDREN's ru_maxrss would be the largest of every child so far)."""
    t = time.perf_counter()
    with open(log, "ab") as f:
        p = subprocess.Popen([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise SystemExit(f"error: {' '.join(map(str, cmd))} exited {rc}; see {log}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def _state(crawl_dir):
    crawl = CrawlDir(str(crawl_dir))
    n = crawl.last_committed()
    visited = sorted(u for f in crawl.table_files("visited", n) for u in pq.read_table(f, columns=["url"]).column("url").to_pylist())
    frontier = sorted(crawl.read_table("frontier", n, ["fp"]).column("fp").to_pylist())
    return n, visited, frontier


def ensure_base(work: Path, export: Path, round_pages: int, fetch_threads: int, log: Path) -> Path:
    """`work/base`: a crawl of `export` (nginx must serve it) run until its next round would
    fetch a full `round_pages` (made once, then reused)."""
    py = sys.executable
    base = work / "base"
    flags = ["--resolve_file", export / "hostmap.txt", "--allow_loopback", "true",
             "--allow_domains", "simweb.test", "--deny_extensions", "", "--sitemaps", "false",
             "--delay_per_host", "0", "--expand_duplicates", "true", "--max_pages", round_pages,
             "--politeness_key", "host",   # every exported host is on 127.0.0.1: each its own site
             "--max_per_host", round_pages, "--round_growth", "0", "--store", "none", "--fetch_threads", fetch_threads,
             "--progress_seconds", "0"]
    if not (base / "crawl.json").exists():
        shutil.rmtree(base, ignore_errors=True)
        seeds = (export / "seeds.txt").read_text().split()
        _run([py, "-m", "pipelines.inject", "--crawl_dir", base, *flags]
             + [x for s in seeds for x in ("--seed", s)], log)
        while True:   # rounds until the next one fetches a full round_pages
            crawl = CrawlDir(str(base))
            rep = crawl.read_report(crawl.last_committed())
            if rep.get("page_sets", {}).get("pending", rep.get("pending", 0)) >= round_pages:
                break
            _run([py, "-m", "pipelines.round", "--crawl_dir", base], log)
    return base


def add_web_arguments(ap):
    """The exported web and its base crawl (shared with benchmarks.profile_round)."""
    ap.add_argument("--config", default="bench50k")
    ap.add_argument("--port", type=int, default=18095)
    ap.add_argument("--work", default="/tmp/bench_cores")
    ap.add_argument("--round_pages", type=int, default=5000)
    ap.add_argument("--fetch_threads", type=int, default=32)


def web_export(a) -> tuple[Path, Path]:
    """(work dir, the web's static export in it), exported on first use."""
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    export = work / f"export-{a.config}-{a.port}"
    if not (export / "seeds.txt").exists():
        export_config(a.config, 1, a.port, export)
    return work, export


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_web_arguments(ap)
    ap.add_argument("--a_args", default="")
    ap.add_argument("--b_args", default="--page_processes 0")
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args(argv)
    work, export = web_export(a)
    py = sys.executable
    log = work / "rounds.log"
    with Nginx(export, a.port, work / "nginx") as _:
        base = ensure_base(work, export, a.round_pages, a.fetch_threads, log)
        runs = {"A": [], "B": []}
        states = {}
        extra = {"A": a.a_args.split(), "B": a.b_args.split()}
        for i in range(a.pairs):
            for k in ("A", "B"):
                d = work / f"run-{k}"
                shutil.rmtree(d, ignore_errors=True)
                shutil.copytree(base, d)
                wall, cpu, rss = _run([py, "-m", "pipelines.round", "--crawl_dir", d, *extra[k]], log)
                crawl = CrawlDir(str(d))
                fetched = crawl.read_report(crawl.last_committed()).get("fetched", 0)
                runs[k].append((wall, cpu, rss, fetched))
                states[k] = _state(d)
                print(f"{k} run {i + 1}: wall {wall:.1f} s, {fetched} fetched, {fetched / wall:.1f} pages/s, "
                      f"CPU {cpu:.1f} s ({cpu / max(1, fetched) * 1000:.2f} ms/page, {cpu / wall:.2f} cores), "
                      f"peak RSS of one process {rss:.0f} MB", flush=True)
    if not a.pairs:   # only the base crawl (for benchmarks.round_memory)
        print(f"base crawl kept in {base}")
        return
    ratio = [rb[0] / ra[0] for ra, rb in zip(runs["A"], runs["B"])]
    cpu_ratio = [ra[1] / rb[1] for ra, rb in zip(runs["A"], runs["B"])]
    print(json.dumps({"pages_per_s_A_over_B_median": round(statistics.median(ratio), 3),
                      "pairs": [round(r, 3) for r in ratio],
                      "cpu_A_over_B_median": round(statistics.median(cpu_ratio), 3),
                      "same_state": states["A"] == states["B"]}))


if __name__ == "__main__":
    main()
