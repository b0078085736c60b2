"""A small round's fixed cost on the in-process runner (issue #12: start-up + commit ≤ 1.5 s).

    .venv/bin/python -m benchmarks.bench_fixed_cost [--config medium] [--pages 100] [--rounds 6]

Crawls the simulated web (`--config`, served on loopback) in rounds of `--pages` pages at
delay 0, each round run in this process as `pipelines.crawl` runs it. Per round: its wall
time, the fetch window (report.json's time split: from the first host handed to the fetch
threads to the last page out, parsing included) and the rest, which is the round's fixed
cost: building and planning the pipeline, reading the crawl directory, the runner's stages,
content-seen, URL-seen, scoring, writing and committing. Also the number of stages the
in-process runner executed. Not a test; no figure is asserted.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from apache_beam.runners.portability.fn_api_runner import fn_runner

from pipelines import crawl as crawl_mod
from pipelines import inject
from pipelines.crawldir import CrawlDir
from tests.simweb.process import SimWebProcess


class _StageCounter:
    """Counts the bundles (stages) the FnApiRunner executes, by wrapping its method."""

    def __init__(self):
        self.count = 0
        self._orig = fn_runner.FnApiRunner._execute_bundle
        counter = self

        def counted(runner, *args, **kw):
            counter.count += 1
            return counter._orig(runner, *args, **kw)
        fn_runner.FnApiRunner._execute_bundle = counted

    def close(self):
        fn_runner.FnApiRunner._execute_bundle = self._orig


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="medium")
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args(argv)
    web = SimWebProcess(a.config, seed=1)
    stages = _StageCounter()
    rows = []
    try:
        d = tempfile.mkdtemp(prefix="bench_fixed_") + "/crawl"
        args = ["--crawl_dir", d, "--allow_loopback", "true", "--resolve_file", str(web.hostmap_file),
                "--allow_domains", "simweb.test", "--max_pages", str(a.pages), "--max_per_host", str(a.pages), "--round_growth", "0",
                "--delay_per_host", "0", "--politeness_key", "host",
                "--progress_seconds", "0"]
        assert inject.main(args + [x for s in web.seeds for x in ("--seed", s)]) == 0
        for _ in range(a.rounds):
            stages.count = 0
            t = time.perf_counter()
            crawl_mod.run_crawl(["--crawl_dir", d, "--rounds", "1"], out=lambda s: None)
            wall = time.perf_counter() - t
            crawl = CrawlDir(d)
            rep = crawl.read_report(crawl.last_committed())
            fetch = rep.get("time_split", {}).get("fetch", 0.0)
            rows.append((rep.get("fetched", 0), wall, fetch, wall - fetch, stages.count))
            print(f"round {crawl.last_committed()}: {rows[-1][0]} fetched, wall {wall:.2f} s, fetch {fetch:.2f} s, "
                  f"fixed {wall - fetch:.2f} s, {stages.count} stages", flush=True)
    finally:
        stages.close()
        web.stop()
    full = [r for r in rows if r[0] >= a.pages * 0.9] or rows
    print(json.dumps({"fixed_seconds_median": round(statistics.median(r[3] for r in full), 3),
                      "rounds": len(full), "stages": full[-1][4]}))


if __name__ == "__main__":
    main()
