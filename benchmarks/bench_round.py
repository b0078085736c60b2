"""A round's time split against the size of the crawl DB (issue #6, #12).

    .venv/bin/python -m benchmarks.bench_round --known 100000 1000000 [--fetch 1000]
        [--rounds 4] [--compact_ratio 0.25]

For each size N it writes a committed round 0 whose frontier holds the `--fetch` home and
section pages of the large simulated web (served on loopback, scored highest) plus synthetic
pending URLs, and whose visited table holds synthetic visited URLs, N known URLs in all
(90 % visited, 10 % pending). The synthetic URLs are on hosts that are never selected
(depth 1000), so the next round fetches exactly the simulated-web URLs. It then runs that
round and prints its wall time and report.json's time split (fetch wall time, parse,
URL-seen, score, write); `other` is the rest of the wall time: reading the crawl DB,
pipeline construction and the runner's own work; `db` is the wall time but the fetch
(reading, URL-seen's shuffle and merge, writing); `cpu s` the round's process CPU time (the
in-process runner: less disturbed than wall time by other work on the machine); `merged` the
frontier rows URL-seen read, shuffled and merged (-1: not counted by that code); `wrote MB`
the frontier files the round wrote (a delta and its removed fps, or the full frontier). With `--rounds K` it runs K rounds (each
fetches the best `--fetch` URLs the last one found) and prints, after each, the frontier's
layout (full or delta), and the crawl directory's size against its live tables' (every
table's files a view of the last round reads, the frontier counted as one compacted
snapshot written as a round writes it). `--compact_ratio` is passed to the rounds (omit
it to run code that has no such flag). The synthetic URLs get depth 1000, so
breadth-first scores them below every simulated-web URL whether or not they are rescored.
Not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines import round as round_mod
from pipelines.crawldir import CrawlDir
from pipelines.options import ROUND_SETTINGS
from pipelines.settings import effective_round_settings
from schemas import tables
from transforms.urls import canonical as urls_mod

FILE_ROWS = 1_000_000


def _synthetic_urls(prefix, n, start=0):
    return [f"http://synth{(i // 1000) % 997}.invalid/{prefix}/{i}" for i in range(start, start + n)]


def _write(table, folder, schema):
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for k, i in enumerate(range(0, max(table.num_rows, 1), FILE_ROWS)):
        part = tables.conform(table.slice(i, FILE_ROWS), schema)
        name = f"part-{k:05d}.parquet"
        pq.write_table(part, folder / name, compression="zstd")
        names.append(name)
    return names


def _frontier(urls, depth):
    n = len(urls)
    return pa.table({
        "fp": pa.array(urls_mod.fingerprints(urls), pa.int64()),
        "url": pa.array(urls, pa.string()),
        "host": pa.array([urls_mod.host_key(u) for u in urls], pa.string()),
        "depth": pa.array(np.full(n, depth, np.int32)), "score": pa.array(np.full(n, -depth * 2.0 ** 20)),
        "discovered_round": pa.array(np.zeros(n, np.int32)), "source": pa.array(["link"] * n),
        "inlinks": pa.array(np.zeros(n, np.int64)), "retries": pa.array(np.zeros(n, np.int32)),
        "not_before": pa.array(np.zeros(n)), "cash": pa.array(np.zeros(n)),
        "history": pa.array(np.zeros(n)), "redirects": pa.array(np.zeros(n, np.int32)),
    })


def make_crawl(root: Path, known: int, real_urls, flags):
    crawl = CrawlDir(str(root))
    settings = {k: v for k, v in flags.items() if k in ROUND_SETTINGS}
    crawl.write_config({"round_defaults": settings, "created": time.time()})
    n_visited = int(known * 0.9)
    n_pending = known - n_visited - len(real_urls)
    frontier = pa.concat_tables([
        tables.conform(_frontier(real_urls, 1), tables.FRONTIER),
        tables.conform(_frontier(_synthetic_urls("p", n_pending), 1000), tables.FRONTIER)])
    visited_urls = _synthetic_urls("v", n_visited)
    visited = pa.table({
        "fp": pa.array(urls_mod.fingerprints(visited_urls), pa.int64()),
        "url": pa.array(visited_urls, pa.string()),
        "host": pa.array([u.split("/")[2] for u in visited_urls], pa.string()),
        "round": pa.array(np.zeros(n_visited, np.int32)),
        "outcome": pa.array(["ok"] * n_visited),
        "http_status": pa.array(np.full(n_visited, 200, np.int32)),
        "content_fp": pa.array(np.random.default_rng(1).integers(-2**62, 2**62, n_visited), pa.int64()),
    })
    rd = Path(crawl.round_dir(0))
    manifest = {"frontier": _write(frontier, rd / "frontier", tables.FRONTIER),
                "visited": _write(visited, rd / "visited", tables.VISITED)}
    for t in ("hosts", "links", "pages", "filtered", "near_duplicates", "opic"):
        manifest[t] = []
    (rd / "options.json").write_text(json.dumps(effective_round_settings({}, settings)))
    (rd / "report.json").write_text(json.dumps({"page_sets": {"downloaded": n_visited}}))
    (rd / "_COMMITTED").write_text(json.dumps({"round": 0, "tables": manifest,
                                               "full": ["visited", "links", "pages", "filtered"]}))
    return crawl


def _size(paths):
    return sum(os.path.getsize(p) for p in paths)


def sizes(crawl):
    """(bytes of the crawl directory, bytes of its live tables, bytes of the frontier's files,
    bytes of the frontier as one snapshot) after its last round."""
    from pipelines import crawldir
    LAYERED, SNAPSHOT_TABLES = getattr(crawldir, "LAYERED", {"frontier": "fp"}), crawldir.SNAPSHOT_TABLES
    from transforms.tableio.step import PARQUET_CODEC, ROW_GROUP_ROWS
    root, last = Path(crawl.path), crawl.last_committed()
    total = _size(p for p in root.rglob("*") if p.is_file())
    layered = [p for t in LAYERED for name in (t, f"{t}_removed") for p in root.glob(f"rounds/*/{name}/*")]
    old_snapshots = [p for t in SNAPSHOT_TABLES if t not in LAYERED for p in root.glob(f"rounds/*/{t}/*")
                     if p.parent.parent.name != f"{last:06d}"]
    buf = pa.BufferOutputStream()
    pq.write_table(crawl.read_table("frontier", last), buf, compression=PARQUET_CODEC,
                   row_group_size=ROW_GROUP_ROWS)
    compact = buf.getvalue().size
    return total, total - _size(layered) - _size(old_snapshots) + compact, _size(layered), compact


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--known", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--fetch", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--compact_ratio", default=None, help="passed to each round when given")
    ap.add_argument("--keep_snapshots", default="2")
    args = ap.parse_args(argv)
    extra = ["--keep_snapshots", args.keep_snapshots]
    extra += ["--compact_ratio", args.compact_ratio] if args.compact_ratio is not None else []
    from tests.simweb.process import SimWebProcess
    work = Path(tempfile.mkdtemp(prefix="bench-round-"))
    web = SimWebProcess("large", seed=1, workdir=work / "simweb")
    try:
        pages = web.ground_truth["pages"].to_pylist()
        by_host = {}
        for p in pages:  # a few pages of many hosts, so the fetch list is not one host's cap
            u = p["url"]
            if p["status"] == 200 and (u.endswith("/") or u.endswith(".html")) \
                    and u.split("/")[2].startswith("site"):
                by_host.setdefault(p["host"], []).append(u)
        real = [u for urls in by_host.values() for u in urls[:5]][: args.fetch]
        flags = {"resolve_file": str(web.hostmap_file), "allow_loopback": True, "delay_per_host": 0.0,
                 "max_pages": args.fetch, "max_per_host": 10, "fetch_threads": 64, "sitemaps": False}
        print(f"{'known URLs':>12} {'round':>5} {'wall s':>8} {'fetch':>7} {'parse':>7} {'urlseen':>8} "
              f"{'score':>6} {'write':>6} {'other':>6} {'db':>6} {'visited':>8} {'frontier':>9} "
              f"{'layout':>6} {'dir MB':>8} {'live MB':>8} {'dir/live':>8} {'front.':>7} {'cpu s':>6} "
              f"{'merged':>8} {'wrote MB':>8}")
        for known in args.known:
            root = work / f"crawl-{known}"
            crawl = make_crawl(root, known, real, flags)
            for _ in range(args.rounds):
                t0, c0 = time.time(), time.process_time()
                report = round_mod.run_round(["--crawl_dir", str(root), *extra])
                wall, cpu = time.time() - t0, time.process_time() - c0
                ts = report["time_split"]
                rest = (wall - ts.get("fetch", 0) - ts.get("urlseen", 0) - ts.get("score", 0)
                        - ts.get("write", 0))
                n = crawl.last_committed()
                kind = "delta" if "frontier" in crawl.manifest(n).get("deltas", ()) else "full"
                total, live, fdir, flive = sizes(crawl)
                print(f"{known:>12} {n:>5} {wall:>8.1f} {ts.get('fetch', 0):>7.1f} {ts.get('parse', 0):>7.1f} "
                      f"{ts.get('urlseen', 0):>8.2f} {ts.get('score', 0):>6.2f} {ts.get('write', 0):>6.2f} "
                      f"{rest:>6.1f} {wall - ts.get('fetch', 0):>6.1f} {report['visited']:>8} "
                      f"{report['frontier_size']:>9} {kind:>6} {total / 1e6:>8.1f} {live / 1e6:>8.1f} "
                      f"{total / live:>8.2f} {fdir / flive:>7.2f} {cpu:>6.1f} "
                      f"{report.get('stats', {}).get('frontier_rows_merged', -1):>8} "
                      f"{_size(p for p in Path(crawl.round_dir(n)).glob('frontier*/*')) / 1e6:>8.2f}", flush=True)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        web.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
