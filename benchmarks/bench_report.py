"""`beamcrawl report` on a large crawl directory: time and peak memory of the whole-crawl
report against the size of the tables it summarises.

    .venv/bin/python -m benchmarks.bench_report --visited 1000000 4000000

For each size N it writes, with numpy, a crawl directory of `--rounds` committed rounds
whose visited deltas hold N rows in all (files of at most 1 M rows, one per round and
shard, row groups of 64 k rows), with the columns a round writes that a report could touch
(fp, url, host, depth, round, fetch_time, outcome, http_status, content_type, bytes, title;
`--hosts` hosts, Zipf-sized), a frontier snapshot of N/2 rows, links of 2 N rows (the report
reads only their footers), filtered rows, the manifests and a report.json per round. Then,
each in its own child process (peak RSS per run):

  imports     python -c "import pipelines.report" (the baseline: Beam, pyarrow)
  report      python -m pipelines.report --crawl_dir D --json   (one row group at a time, columns only)
  whole read  the same visited columns read as one table with CrawlDir.read_table (what a
              report that loaded the view at once would hold), for scale.

It prints wall seconds and peak RSS of each, and checks that the report's visited count
and status codes are the table's. Not a test: run it by hand.
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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from schemas import tables

ROW_GROUP = 64 * 1024
FILE_ROWS = 1_000_000
STATUS = np.array([200, 200, 200, 200, 200, 200, 200, 200, 301, 404, 500, 0])
TYPES = np.array(["text/html", "text/html", "text/html", "application/pdf", "image/jpeg", ""])
OUTCOMES = {200: "ok", 301: "redirect", 404: "http_error", 500: "failed", 0: "robots_denied"}


def _strings(prefix, ids):
    return pa.array(np.char.add(prefix, ids.astype(str)))


def visited_rows(rng, start, n, rnd, hosts):
    host_of = rng.zipf(1.6, n) % hosts
    status = STATUS[rng.integers(0, len(STATUS), n)]
    ids = np.arange(start, start + n)
    host = np.char.add(np.char.add("site", host_of.astype(str)), ".example")
    return pa.table({
        "fp": pa.array(ids, pa.int64()),
        "url": pa.array(np.char.add(np.char.add("https://", host), np.char.add("/page/", ids.astype(str)))),
        "host": pa.array(host),
        "depth": pa.array(np.minimum(rng.geometric(0.35, n), 12).astype(np.int32)),
        "round": pa.array(np.full(n, rnd, np.int32)),
        "fetch_time": pa.array(1.7e9 + rng.random(n) * 3600),
        "outcome": pa.array([OUTCOMES[s] for s in status.tolist()]),
        "http_status": pa.array(status, pa.int32(), mask=status == 0),
        "content_type": pa.array(TYPES[rng.integers(0, len(TYPES), n)]),
        "bytes": pa.array(rng.integers(500, 200_000, n)),
        "title": _strings("A page title of some length, number ", ids),
    })


def make_crawl(d, n_visited, rounds, hosts, seed=0):
    rng = np.random.default_rng(seed)
    d = Path(d)
    (d / "rounds").mkdir(parents=True)
    (d / "crawl.json").write_text(json.dumps({"schema_version": tables.SCHEMA_VERSION, "round_defaults": {}}))
    per_round = np.diff(np.linspace(0, n_visited, rounds + 1).astype(np.int64))
    start = 0
    for rnd in range(rounds + 1):
        rd = d / "rounds" / f"{rnd:06d}"
        manifest = {}
        n = int(per_round[rnd - 1]) if rnd else 0
        parts = {"visited": [], "links": [], "filtered": [], "frontier": []}
        for k, off in enumerate(range(0, n, FILE_ROWS)):
            m = min(FILE_ROWS, n - off)
            parts["visited"].append(visited_rows(rng, start + off, m, rnd, hosts))
            src, dst = rng.integers(0, n_visited, 2 * m), rng.integers(0, n_visited, 2 * m)
            parts["links"].append(pa.table({
                "src_fp": pa.array(src), "dst_fp": pa.array(dst),
                "src": _strings("https://site.example/page/", src), "dst": _strings("https://site.example/page/", dst),
                "anchor": pa.array(np.full(2 * m, "a link")), "round": pa.array(np.full(2 * m, rnd, np.int32))}))
            parts["filtered"].append(pa.table({"fp": pa.array(rng.integers(0, 1 << 40, m // 20)),
                                               "reason": pa.array(np.where(rng.random(m // 20) < 0.7,
                                                                           "extension", "depth"))}))
        if rnd == rounds:   # the last round's frontier snapshot
            f = max(n_visited // 2, 1)
            parts["frontier"].append(pa.table({
                "fp": pa.array(np.arange(f) + (1 << 41)),
                "host": pa.array(np.char.add("site", (rng.zipf(1.6, f) % hosts).astype(str))),
                "depth": pa.array(np.minimum(rng.geometric(0.3, f), 12).astype(np.int32))}))
        for table, ts in parts.items():
            (rd / table).mkdir(parents=True)
            names = [f"part-{i:05d}-of-{len(ts):05d}.parquet" for i in range(len(ts))]
            for name, t in zip(names, ts):
                pq.write_table(t, rd / table / name, row_group_size=ROW_GROUP)
            manifest[table] = names
        start += n
        visited = sum(t.num_rows for t in parts["visited"])
        (rd / "report.json").write_text(json.dumps({
            "round": rnd, "visited": visited, "fetched": visited, "new_urls": visited,
            "frontier_size": sum(t.num_rows for t in parts["frontier"]), "wall_seconds": 60.0 + rnd,
            "pages_per_second": round(visited / (60.0 + rnd), 2),
            "page_sets": {"downloaded": start, "expired": 0, "pending": 0, "knowable": 0}}))
        (rd / "_COMMITTED").write_text(json.dumps({"round": rnd, "tables": manifest, "full": []}))
    return d


WHOLE_READ = ("import sys, time; t = time.time(); from pipelines.crawldir import CrawlDir; "
              "c = CrawlDir(sys.argv[1]); v = c.read_table('visited', c.last_committed(), columns="
              "['http_status', 'outcome', 'content_type', 'host', 'depth', 'bytes']); "
              "print(v.num_rows, round(time.time() - t, 2))")


def peak_rss(argv):
    """Peak RSS (MiB) of `python argv` measured by the child itself at exit."""
    # VmHWM, not getrusage: ru_maxrss survives exec, so it would count the forking parent
    code = ("import runpy, sys; sys.argv = sys.argv[1:]; "
            "hwm = lambda: [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0]; "
            "import atexit; atexit.register(lambda: sys.stderr.write(f'\\nPEAK_RSS_KB {hwm()}\\n'))\n"
            "if sys.argv[0] == '-m':\n    sys.argv = sys.argv[1:]; runpy.run_module(sys.argv[0], run_name='__main__')\n"
            "else:\n    sys.argv = sys.argv[1:]; exec(sys.argv[0], {'__name__': '__main__'})")
    t = time.time()
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], check=False)
    seconds = time.time() - t
    rss = [l for l in p.stderr.splitlines() if l.startswith("PEAK_RSS_KB")]
    if not rss:
        raise RuntimeError(p.stderr[-2000:])
    return seconds, int(rss[-1].split()[1]) / 1024, p.stdout


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--visited", type=int, nargs="+", default=[1_000_000, 4_000_000])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--hosts", type=int, default=20_000)
    ap.add_argument("--keep", action="store_true", help="keep the crawl directories")
    a = ap.parse_args(argv)
    for n in a.visited:
        base = Path(tempfile.mkdtemp(prefix="bench_report_"))
        try:
            t = time.time()
            d = make_crawl(base / "crawl", n, a.rounds, a.hosts)
            size = sum(f.stat().st_size for f in d.rglob("*.parquet")) / 2**20
            print(f"visited {n}: wrote {size:.0f} MiB of Parquet in {time.time() - t:.0f} s")
            _, rss_base, _ = peak_rss(["-c", "import pipelines.report", str(d)])
            s_rep, rss_rep, out = peak_rss(["-m", "pipelines.report", "--crawl_dir", str(d), "--json"])
            report = json.loads(out)
            s_whole, rss_whole, out = peak_rss(["-c", WHOLE_READ, str(d)])
            rows = int(out.split()[0])
            v = pq.ParquetDataset(sorted(str(p) for p in d.glob("rounds/*/visited/*.parquet")))
            status = v.read(columns=["http_status"]).column("http_status").value_counts().to_pylist()
            want = {("none" if r["values"] is None else str(r["values"])): r["counts"] for r in status}
            assert report["totals"]["visited"] == rows == n and report["status_codes"] == want
            print(f"  imports alone: peak RSS {rss_base:.0f} MiB; report --json: {s_rep:.1f} s, peak RSS {rss_rep:.0f} MiB; "
                  f"whole-view read of the same columns: {s_whole:.1f} s, peak RSS {rss_whole:.0f} MiB; "
                  f"{report['totals']['hosts_visited']} hosts, {report['totals']['links']} links")
        finally:
            if not a.keep:
                shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
