"""Where one big round's time goes: its stages, and who holds each interpreter lock (issue #12).

    .venv/bin/python -m benchmarks.profile_round [--config bench50k] [--round_pages 5000] \\
        [--work /tmp/bench_cores] [--round_args "..."]

The simulated web's `--config` is exported as static files and served by nginx on loopback;
the base crawl of `benchmarks.bench_cores` (same `--work`) is made on first use. The same next
round is then run twice from fresh copies of it:

1. **stages** (`benchmarks.stagetimer`): each stage of the in-process runner with its
   seconds and the round process's RSS after it; the stages over 50 ms are named by the
   transforms fused into them, the rest are summed.
2. **interpreter locks** (`py-spy record --gil --subprocesses`; `pip install py-spy`): for
   each process, the seconds one of its threads held the GIL, by thread (the round's main
   thread, which runs every Beam stage, against the fetch threads, the fetch process and the
   page workers);
   then the main thread's seconds by what it was doing. A thread waiting for the lock is
   not sampled, so this is CPU that could not run beside other Python work of its process.

Not a test; nothing is asserted; the figures vary with the machine's load.
"""
from __future__ import annotations

import argparse
import collections
import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.bench_cores import add_web_arguments, ensure_base, web_export
from benchmarks.realweb.nginx import Nginx

REPO = Path(__file__).resolve().parents[1]
RATE = 100   # py-spy samples per second

# what the round's main thread was doing: the first rule a sampled stack matches
MAIN_THREAD = [
    ("page parse (page_fate, when the workers are busy)", "page_fate ("),
    ("visited tables (MinHash of the text)", "visited_table ("),
    ("fetch step (queue, per-page outputs)", "transforms/fetch/"),
    ("content-seen", "transforms/contentseen/"),
    ("URL-seen and candidates", "transforms/urlseen/"),
    ("table files (tableio)", "transforms/tableio/"),
    ("other page step", "transforms/page/"),
    ("building the pipeline", "build_round ("),
    ("Beam: pipeline proto and fusion", "to_runner_api"),
    ("imports", "importlib._bootstrap"),
    ("Beam: element coding", "apache_beam/coders/"),
    ("Beam: bundle set-up (DoFn unpickling)", "create_execution_tree"),
    ("Beam: other runner work", "apache_beam/"),
    ("other", ""),
]


def _stages(path: Path):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    print(f"\n## stages: {len(rows)}, {sum(r['seconds'] for r in rows):.2f} s in stages; "
          f"first starts {rows[0]['start']:.2f} s after the process, last ends "
          f"{rows[-1]['start'] + rows[-1]['seconds']:.2f} s; peak RSS after a stage "
          f"{max(r['rss_mb'] for r in rows):.0f} MB")
    small = [r for r in rows if r["seconds"] < 0.05]
    for r in rows:
        if r["seconds"] >= 0.05:
            names = ", ".join(r["transforms"][:6]) + (" ..." if len(r["transforms"]) > 6 else "")
            heap = (f"  heap {r['heap_mb']:4.0f} MB ({r['heap_free_mb']:3.0f} free)" if "heap_mb" in r else "")
            print(f"  {r['start']:6.2f} s  +{r['seconds']:5.2f} s  RSS {r['rss_mb']:5.0f} MB{heap}  {names}")
    print(f"  {len(small)} stages under 50 ms: {sum(r['seconds'] for r in small):.2f} s together")


def _gil(path: Path):
    per_thread, main_split, main_total = collections.Counter(), collections.Counter(), 0
    helper_samples, kinds = collections.Counter(), {}
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        n = int(n)
        frames = stack.split(";")
        proc = frames[0].split(":")[0]
        helpers = [f for f in frames[1:] if f.startswith("process ")]   # fork server, then its child
        if helpers:
            pid = helpers[-1].split(":")[0].split()[-1]
            if "fetchproc.py" in stack:
                kinds[pid] = "the fetch process"
            elif "page_fates" in stack:
                kinds.setdefault(pid, "a page worker")
            helper_samples[(proc, pid)] += n
            continue
        if any("_run_module_as_main" in f for f in frames[1:3]):
            per_thread[(proc, "main thread (Beam stages)")] += n
            main_total += n
            label = next(lbl for lbl, needle in MAIN_THREAD if needle in stack)
            main_split[label] += n
        elif any("Thread._bootstrap" in f for f in frames[1:3]):
            per_thread[(proc, "other threads (fetch, deadlines, pool)")] += n
        else:
            per_thread[(proc, "native / unattributed")] += n
    for (proc, pid), n in helper_samples.items():
        per_thread[(proc, f"{kinds.get(pid, 'helper (fork server, imports)')}, pid {pid}")] += n
    print("\n## interpreter lock held (seconds, sampled)")
    for (proc, thread), n in sorted(per_thread.items(), key=lambda kv: -kv[1]):
        print(f"  {n / RATE:6.2f} s  {proc}  {thread}")
    print("\n## the main thread, by what it was doing")
    for label, n in main_split.most_common():
        print(f"  {n / RATE:6.2f} s  {100 * n / max(1, main_total):4.0f} %  {label}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_web_arguments(ap)
    ap.add_argument("--round_args", default="", help="further flags for the profiled round")
    a = ap.parse_args(argv)
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("error: py-spy not found; install it with `pip install py-spy` (profiling only)")
    work, export = web_export(a)
    log = work / "rounds.log"
    py = sys.executable
    # one user of this --work (and its nginx port) at a time
    with open(work / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with Nginx(export, a.port, work / "nginx") as _:
            base = ensure_base(work, export, a.round_pages, a.fetch_threads, log)
            run = work / "run-profile"
            for kind in ("stages", "gil"):
                shutil.rmtree(run, ignore_errors=True)
                shutil.copytree(base, run)
                round_cmd = ["--crawl_dir", str(run), *a.round_args.split()]
                if kind == "stages":
                    cmd = [py, "-m", "benchmarks.stagetimer", str(work / "stages.jsonl"), *round_cmd]
                else:
                    cmd = [spy, "record", "--gil", "--subprocesses", "--nonblocking", "-r", str(RATE),
                           "-f", "raw", "-o", str(work / "gil.txt"), "--", py, "-m", "pipelines.round", *round_cmd]
                with open(log, "ab") as f:
                    subprocess.run(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, check=True)
                if kind == "stages":
                    from pipelines.crawldir import CrawlDir
                    crawl = CrawlDir(str(run))
                    rep = crawl.read_report(crawl.last_committed())
                    print(f"# round {rep['round']}: {rep['fetched']} fetched in {rep['wall_seconds']:.2f} s "
                          f"({rep['pages_per_second']:.0f} pages/s); the round's own split: {rep['time_split']}")
    _stages(work / "stages.jsonl")
    _gil(work / "gil.txt")


if __name__ == "__main__":
    main()
