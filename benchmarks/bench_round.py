"""A round's time split against the size of the crawl DB (issue #6).

    .venv/bin/python -m benchmarks.bench_round --known 100000 1000000 [--fetch 1000]

For each size N it writes a committed round 0 whose frontier holds the `--fetch` home and
section pages of the large simulated web (served on loopback, scored highest) plus synthetic
pending URLs, and whose visited table holds synthetic visited URLs, N known URLs in all
(90 % visited, 10 % pending). The synthetic URLs are on hosts that are never selected
(score -1), so the next round fetches exactly the simulated-web URLs. It then runs that
round and prints its wall time and report.json's time split (fetch wall time, parse,
URL-seen, score, write); `other` is the rest of the wall time: reading the crawl DB,
pipeline construction and the runner's own work. Not a test.
"""
from __future__ import annotations

import argparse
import json
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


def _frontier(urls, score):
    n = len(urls)
    return pa.table({
        "fp": pa.array(urls_mod.fingerprints(urls), pa.int64()),
        "url": pa.array(urls, pa.string()),
        "host": pa.array([urls_mod.host_key(u) for u in urls], pa.string()),
        "depth": pa.array(np.ones(n, np.int32)), "score": pa.array(np.full(n, score)),
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
        tables.conform(_frontier(real_urls, 1.0), tables.FRONTIER),
        tables.conform(_frontier(_synthetic_urls("p", n_pending), -1.0), tables.FRONTIER)])
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
    (rd / "report.json").write_text(json.dumps({"page_sets": {"downloaded": n_visited}}))
    (rd / "_COMMITTED").write_text(json.dumps({"round": 0, "tables": manifest,
                                               "full": ["visited", "links", "pages", "filtered"]}))
    return crawl


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--known", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--fetch", type=int, default=1000)
    args = ap.parse_args(argv)
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
        print(f"{'known URLs':>12} {'wall s':>8} {'fetch':>7} {'parse':>7} {'urlseen':>8} {'score':>6} "
              f"{'write':>6} {'other':>6} {'visited':>8}")
        for known in args.known:
            root = work / f"crawl-{known}"
            make_crawl(root, known, real, flags)
            t0 = time.time()
            report = round_mod.run_round(["--crawl_dir", str(root)])
            wall = time.time() - t0
            ts = report["time_split"]
            rest = (wall - ts.get("fetch", 0) - ts.get("urlseen", 0) - ts.get("score", 0)
                    - ts.get("write", 0))
            print(f"{known:>12} {wall:>8.1f} {ts.get('fetch', 0):>7.1f} {ts.get('parse', 0):>7.1f} "
                  f"{ts.get('urlseen', 0):>8.2f} {ts.get('score', 0):>6.2f} {ts.get('write', 0):>6.2f} "
                  f"{rest:>6.1f} {report['visited']:>8}", flush=True)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        web.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
