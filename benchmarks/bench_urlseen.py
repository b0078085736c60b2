"""URL-seen at scale: the bucketed `UrlSeen` CoGroupByKey vs DuckDB's anti-join.

    .venv/bin/python -m benchmarks.bench_urlseen --visited 1000000 10000000

For each size N it writes, with numpy, a visited table of N random 64-bit fingerprints
(Parquet files of 1 M rows, like per-round deltas, in row groups of 128 k rows) and a
link table of N/5 new links, half of them to already visited URLs (the other half fresh),
each with a URL string, a source page and an anchor, as `schemas.tables.CANDIDATES`.
Then, each in its own (spawned) child process so peak RSS is per run:

  urlseen  the round's URL-seen step on the FnApiRunner (the DirectRunner path): visited
           read with `transforms.tableio.step.ReadTables(columns=['fp'])` as the round
           does, links read by row group, `transforms.urlseen.step.UrlSeen` with roundpipeline.py's
           bucket count (rows / 200 k, >= 4), new frontier written to Parquet;
  duckdb   `SELECT DISTINCT dst_fp FROM links ANTI JOIN visited` on the same Parquet
           (2 threads, the machine's cores): the bare fingerprint anti-join;
  duckdb same output
           the same anti-join plus what UrlSeen produces from it (`DUCKDB_FULL`): one
           frontier row per new URL with URL, host, depth, source, first parent, lastmod,
           redirect hops, distinct in-links and anchors, written to Parquet.

It reports wall time (pipeline construction to last file written; DuckDB query to
result) and peak RSS of each child (its own VmHWM), and checks that the
new frontier is equal to DuckDB's: the same fingerprints as the bare anti-join, and the
same rows (url, host, depth, source, first_parent, redirects, inlinks; anchors as sets)
as the same-output query. Not a
test: run it by hand.

    .venv/bin/python -m benchmarks.bench_urlseen --round_shape 100000 1000000 10000000

times a round's crawl-DB part instead (the part that grows with the crawl): 90 % of the
known URLs visited (fp column only), 10 % pending in the frontier (full FRONTIER rows),
1 000 fetched frontier URLs and their 20 000 links (half to known URLs): read, URL-seen,
write the new frontier.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FILE_ROWS = 1_000_000
ROW_GROUP = 128 * 1024
BUCKET_ROWS = 200_000   # as pipelines.round
MIN_BUCKETS = 4


def make_data(root: Path, n_visited: int, seed: int = 1, link_share: float = 0.2,
              seen_share: float = 0.5):
    """Write visited/*.parquet and links/*.parquet under root; return their file lists."""
    from schemas.tables import CANDIDATES
    rng = np.random.default_rng(seed)
    visited = rng.integers(-2**63, 2**63 - 1, size=n_visited, dtype=np.int64)
    (root / "visited").mkdir(parents=True, exist_ok=True)
    (root / "links").mkdir(parents=True, exist_ok=True)
    vfiles = []
    for k, start in enumerate(range(0, n_visited, FILE_ROWS)):
        f = root / "visited" / f"part-{k:05d}.parquet"
        pq.write_table(pa.table({"fp": visited[start:start + FILE_ROWS]}), f,
                       row_group_size=ROW_GROUP)
        vfiles.append(str(f))
    n_links = int(n_visited * link_share)
    n_seen = int(n_links * seen_share)
    dst = np.concatenate([rng.choice(visited, size=n_seen, replace=False),
                          rng.integers(-2**63, 2**63 - 1, size=n_links - n_seen, dtype=np.int64)])
    rng.shuffle(dst)
    src = rng.choice(visited, size=n_links)
    lfiles = []
    for k, start in enumerate(range(0, n_links, FILE_ROWS)):
        d = dst[start:start + FILE_ROWS]
        s = src[start:start + FILE_ROWS]
        n = len(d)
        hosts = (d.view(np.uint64) % np.uint64(5000)).astype(np.int64)
        host_s = pa.array([f"h{h}.example" for h in hosts.tolist()], pa.string())
        url_s = pa.array([f"http://h{h}.example/p/{x & 0xffffffffff:x}"
                          for h, x in zip(hosts.tolist(), d.tolist())], pa.string())
        t = pa.Table.from_arrays([
            pa.array(d), url_s, host_s, pa.array(np.ones(n, np.int32)), pa.array(s),
            pa.array([f"http://src.example/{x & 0xffffffff:x}" for x in s.tolist()], pa.string()),
            pa.array([f"anchor {x % 97}" for x in (s & 0xffff).tolist()], pa.string()),
            pa.array(["link"] * n, pa.string()), pa.array(np.zeros(n, np.int32)),
            pa.nulls(n, pa.float64()), pa.nulls(n, pa.float64()), pa.nulls(n, pa.float64()),
            pa.nulls(n, pa.int32()), pa.nulls(n, pa.string()), pa.nulls(n, pa.string())],
            schema=CANDIDATES)
        f = root / "links" / f"part-{k:05d}.parquet"
        pq.write_table(t, f, row_group_size=ROW_GROUP)
        lfiles.append(str(f))
    return vfiles, lfiles


def make_round_data(root: Path, n_known: int, pages: int = 1000, links_per_page: int = 20,
                    seed: int = 2):
    """A round's URL-seen inputs at n_known known URLs: visited (90 %) and frontier (10 %,
    full FRONTIER rows) Parquet, `pages` fetched frontier URLs (final results) and their
    pages * links_per_page links, half to known URLs, half new."""
    from schemas import tables
    from schemas.tables import CANDIDATES, RESULTS
    rng = np.random.default_rng(seed)
    known = rng.integers(-2**63, 2**63 - 1, size=n_known, dtype=np.int64)
    n_front = n_known // 10
    visited, front = known[n_front:], known[:n_front]
    for d in ("visited", "frontier", "results", "links"):
        (root / d).mkdir(parents=True, exist_ok=True)
    vfiles = []
    for k, start in enumerate(range(0, len(visited), FILE_ROWS)):
        f = root / "visited" / f"part-{k:05d}.parquet"
        pq.write_table(pa.table({"fp": visited[start:start + FILE_ROWS]}), f, row_group_size=ROW_GROUP)
        vfiles.append(str(f))
    ffiles = []
    for k, start in enumerate(range(0, n_front, FILE_ROWS)):
        fp = front[start:start + FILE_ROWS]
        hosts = (fp.view(np.uint64) % np.uint64(5000)).astype(np.int64).tolist()
        t = tables.conform(pa.table({
            "fp": fp, "url": [f"http://h{h}.example/p/{x & 0xffffffffff:x}" for h, x in zip(hosts, fp.tolist())],
            "host": [f"h{h}.example" for h in hosts], "depth": pa.array(np.ones(len(fp), np.int32)),
            "score": np.zeros(len(fp)), "inlinks": np.ones(len(fp), np.int64),
            "anchors": pa.array([["a"]] * len(fp), pa.list_(pa.string())),
            "retries": pa.array(np.zeros(len(fp), np.int32)), "not_before": np.zeros(len(fp))}),
            tables.FRONTIER)
        f = root / "frontier" / f"part-{k:05d}.parquet"
        pq.write_table(t, f, row_group_size=ROW_GROUP)
        ffiles.append(str(f))
    fetched = rng.choice(front, pages, replace=False)
    rfile = root / "results" / "part-00000.parquet"
    pq.write_table(pa.table({"fp": fetched, "final": np.ones(pages, bool)}).cast(
        pa.schema([RESULTS.field("fp"), RESULTS.field("final")])), rfile)
    n_links = pages * links_per_page
    dst = np.concatenate([rng.choice(known, n_links // 2),
                          rng.integers(-2**63, 2**63 - 1, size=n_links - n_links // 2, dtype=np.int64)])
    src = np.repeat(fetched, links_per_page)
    hosts = (dst.view(np.uint64) % np.uint64(5000)).astype(np.int64).tolist()
    t = tables.conform(pa.table({
        "dst_fp": dst, "dst": [f"http://h{h}.example/p/{x & 0xffffffffff:x}" for h, x in zip(hosts, dst.tolist())],
        "host": [f"h{h}.example" for h in hosts], "depth": pa.array(np.full(n_links, 2, np.int32)),
        "src_fp": src, "src": [f"s{x}" for x in src.tolist()], "anchor": ["anchor"] * n_links,
        "source": ["link"] * n_links}), CANDIDATES)
    lfile = root / "links" / "part-00000.parquet"
    pq.write_table(t, lfile)
    return vfiles, ffiles, [str(rfile)], [str(lfile)]


def run_round_urlseen(vfiles, ffiles, rfiles, lfiles, out_dir, buckets, queue):
    """The round's crawl-DB part: read visited fps + frontier, URL-seen, write the frontier."""
    import apache_beam as beam
    from transforms.tableio.step import ReadTables
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from pipelines import patches
    from schemas import tables
    from transforms.urlseen import step as urlseen_step

    # as pipelines.runner.run_pipeline builds a round (left active: this process's last pipeline)
    patches.active(patches.Context(in_process=False), only=("construction",)).__enter__()
    base_rss = _peak_rss_mib()
    t0 = time.perf_counter()
    with beam.Pipeline(runner=FnApiRunner()) as p:
        def read(label, files, columns, schema):
            return p | f"Read{label}" >> ReadTables(files, schema, columns)
        inputs = {
            "frontier": read("Frontier", ffiles, None, tables.FRONTIER),
            "seen": p | "VisitedFiles" >> beam.Create(vfiles, reshuffle=False),
            "results": read("Results", rfiles, None, tables.RESULTS),
            "candidates": read("Links", lfiles, None, tables.CANDIDATES),
            "filtered": p | "NoFiltered" >> beam.Create([], reshuffle=False).with_output_types(pa.Table),
        }
        out = inputs | "UrlSeen" >> urlseen_step.UrlSeen(buckets, round_no=2)
        from benchmarks.bench_urlseen import _WriteTable as write_table
        out["frontier"] | "WriteFrontier" >> beam.Map(write_table(out_dir))
    queue.put({"wall_s": time.perf_counter() - t0, "peak_rss_mib": _peak_rss_mib(),
               "base_rss_mib": base_rss})


class _WriteTable:
    def __init__(self, out_dir):
        self.out_dir = out_dir

    def __call__(self, table):
        import uuid
        pq.write_table(table, os.path.join(self.out_dir, f"{uuid.uuid4().hex}.parquet"))
        return table.num_rows


def bench_round(n_known: int, workdir: Path) -> dict:
    root = workdir / f"round{n_known}"
    files = make_round_data(root, n_known)
    buckets = max(MIN_BUCKETS, math.ceil(n_known / BUCKET_ROWS))
    out = root / "frontier_out"
    out.mkdir()
    r = in_child(run_round_urlseen, *files, str(out), buckets)
    rows = pq.read_table(out).num_rows
    return {"known": n_known, "buckets": buckets, "frontier_out": rows, **r}


def _peak_rss_mib() -> float:
    """This child's peak RSS and its children's: VmHWM, which exec resets, where a spawned
    child's ru_maxrss starts at its parent's (the parent built the round's data first)."""
    self_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        with open("/proc/self/status") as f:
            self_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        pass
    kids_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(self_kib, kids_kib) / 1024.0


class _WriteFps:
    """Writes the compared columns of each frontier table to its own Parquet file."""

    def __init__(self, out_dir):
        self.out_dir = out_dir

    def __call__(self, table):
        import uuid
        pq.write_table(table.select(list(COMPARED)), os.path.join(self.out_dir, f"{uuid.uuid4().hex}.parquet"))
        return table.num_rows


def run_urlseen(vfiles, lfiles, out_dir, buckets, workers, queue):
    import apache_beam as beam
    from transforms.tableio.step import ReadTables
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from pipelines import patches
    from schemas import tables
    from transforms.urlseen import step as urlseen_step

    # as pipelines.runner.run_pipeline builds a round (left active: this process's last pipeline)
    patches.active(patches.Context(in_process=False), only=("construction",)).__enter__()
    base_rss = _peak_rss_mib()
    t0 = time.perf_counter()
    opts = PipelineOptions([] if workers <= 1 else
                           [f"--direct_num_workers={workers}", "--direct_running_mode=multi_processing"])
    with beam.Pipeline(runner=FnApiRunner(), options=opts) as p:
        def read(label, files, columns, schema):
            return p | f"Read{label}" >> ReadTables(files, schema, columns)
        empty = lambda label: p | label >> beam.Create([], reshuffle=False).with_output_types(pa.Table)
        inputs = {
            "frontier": empty("NoFrontier"),
            "seen": p | "VisitedFiles" >> beam.Create(vfiles, reshuffle=False),
            "results": empty("NoResults"),
            "candidates": read("Links", lfiles, None, tables.CANDIDATES),
            "filtered": empty("NoFiltered"),
        }
        out = inputs | "UrlSeen" >> urlseen_step.UrlSeen(buckets, round_no=1)
        from benchmarks.bench_urlseen import _WriteFps as write_fps   # by reference, not __main__
        out["frontier"] | "WriteFps" >> beam.Map(write_fps(out_dir))
    wall = time.perf_counter() - t0
    queue.put({"wall_s": wall, "peak_rss_mib": _peak_rss_mib(), "base_rss_mib": base_rss})


# The same work as UrlSeen's output on these inputs: one new frontier row per unseen
# target with its URL, host, depth, source, first parent, lastmod and redirect hops from
# the shortest (then smallest source fp) link, in-links counted as distinct linking pages,
# up to MAX_ANCHORS distinct anchors.
DUCKDB_FULL = """
COPY (
  SELECT l.dst_fp AS fp, arg_min(l.dst, (l.depth, l.src_fp)) AS url,
         arg_min(l.host, (l.depth, l.src_fp)) AS host, min(l.depth) AS depth,
         arg_min(l.source, (l.depth, l.src_fp)) AS source,
         arg_min(l.src, (l.depth, l.src_fp)) AS first_parent,
         arg_min(l.lastmod, (l.depth, l.src_fp)) AS lastmod,
         arg_min(coalesce(l.redirects, 0), (l.depth, l.src_fp)) AS redirects,
         count(DISTINCT l.src_fp) FILTER (WHERE l.src_fp <> 0 AND l.src_fp <> l.dst_fp) AS inlinks,
         list_slice(list(DISTINCT l.anchor) FILTER (WHERE l.anchor <> ''), 1, {max_anchors}) AS anchors
  FROM read_parquet($l) l ANTI JOIN read_parquet($v) v ON l.dst_fp = v.fp
  GROUP BY l.dst_fp
) TO '{out}' (FORMAT parquet)
"""


def run_duckdb(vfiles, lfiles, out_file, full, queue):
    """DuckDB on the same Parquet: the fp anti-join, or (full) the same output as UrlSeen."""
    import duckdb
    from schemas import tables
    base_rss = _peak_rss_mib()
    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET threads = 2")
    if full:
        con.execute(DUCKDB_FULL.format(out=out_file, max_anchors=tables.MAX_ANCHORS),
                    {"l": lfiles, "v": vfiles})
        wall = time.perf_counter() - t0
    else:
        res = con.sql(
            "SELECT DISTINCT l.dst_fp AS fp FROM read_parquet($l) l "
            "ANTI JOIN read_parquet($v) v ON l.dst_fp = v.fp", params={"l": lfiles, "v": vfiles}
        ).to_arrow_table()
        wall = time.perf_counter() - t0
        pq.write_table(res, out_file)
    queue.put({"wall_s": wall, "peak_rss_mib": _peak_rss_mib(), "base_rss_mib": base_rss})


def in_child(fn, *args):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=fn, args=(*args, q))
    proc.start()
    import queue as queue_mod
    while True:
        try:
            out = q.get(timeout=1.0)
            break
        except queue_mod.Empty:
            if not proc.is_alive():
                raise RuntimeError(f"{fn.__name__} exited with {proc.exitcode}")
    proc.join()
    return out


COMPARED = ("fp", "url", "host", "depth", "source", "first_parent", "redirects", "inlinks", "anchors")
_STRINGS = ("url", "host", "source", "first_parent")


def same_rows(ours, duck) -> bool:
    """UrlSeen's new frontier rows equal DuckDB's (anchors compared as sets: DuckDB's
    list(DISTINCT) has no order)."""
    a = pq.read_table(ours, columns=list(COMPARED)).sort_by("fp")
    b = pq.read_table(duck, columns=list(COMPARED)).sort_by("fp")
    if a.num_rows != b.num_rows:
        return False
    for c in COMPARED[:-1]:
        kind = object if c in _STRINGS else np.int64
        if not np.array_equal(a.column(c).to_numpy(zero_copy_only=False).astype(kind),
                              b.column(c).to_numpy(zero_copy_only=False).astype(kind)):
            return False
    return all(set(x or []) == set(y or []) for x, y in
               zip(a.column("anchors").to_pylist(), b.column("anchors").to_pylist()))


def fps_of(path) -> np.ndarray:
    t = pq.read_table(path, columns=["fp"])
    return np.sort(t.column("fp").to_numpy())


def bench(n_visited: int, workdir: Path, buckets: int | None = None, workers: int = 1) -> dict:
    root = workdir / f"n{n_visited}"
    t = time.perf_counter()
    vfiles, lfiles = make_data(root, n_visited)
    gen = time.perf_counter() - t
    if buckets is None:
        buckets = max(MIN_BUCKETS, math.ceil(n_visited / BUCKET_ROWS))
    us_dir = root / "urlseen_out"
    us_dir.mkdir()
    us = in_child(run_urlseen, vfiles, lfiles, str(us_dir), buckets, workers)
    dd = in_child(run_duckdb, vfiles, lfiles, str(root / "duckdb_out.parquet"), False)
    full = in_child(run_duckdb, vfiles, lfiles, str(root / "duckdb_full.parquet"), True)
    a = fps_of(us_dir) if any(us_dir.iterdir()) else np.zeros(0, np.int64)
    b = fps_of(root / "duckdb_out.parquet")
    c = fps_of(root / "duckdb_full.parquet")
    equal = bool(len(a) == len(b) and np.array_equal(a, b) and np.array_equal(b, c)
                 and same_rows(us_dir, root / "duckdb_full.parquet"))
    return {"visited": n_visited, "links": int(n_visited * 0.2), "buckets": buckets,
            "new_urls": int(len(b)), "generate_s": round(gen, 1), "urlseen": us, "duckdb": dd, "duckdb_full": full,
            "set_equal": equal, "ratio_wall": us["wall_s"] / max(dd["wall_s"], 1e-9),
            "ratio_full": us["wall_s"] / max(full["wall_s"], 1e-9)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--visited", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--buckets", type=int, default=None, help="default: as pipelines.round")
    ap.add_argument("--workers", type=int, default=1,
                    help="FnApiRunner SDK workers (>1: multi_processing, like --direct_num_workers)")
    ap.add_argument("--workdir", default=None, help="default: a temporary directory, removed after")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--round_shape", type=int, nargs="*", default=None,
                    help="instead: a round's crawl-DB part (read visited + frontier, URL-seen, "
                         "write frontier) at these known-URL counts, 1 000 fetched pages x 20 links")
    a = ap.parse_args(argv)
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="bench_urlseen_"))
    if a.round_shape is not None:
        try:
            for n in a.round_shape or [100_000, 1_000_000, 10_000_000]:
                r = bench_round(n, workdir)
                print(json.dumps(r) if a.json else
                      f"known={n:>11,} buckets={r['buckets']:>3} frontier_out={r['frontier_out']:>10,}  "
                      f"URL-seen+write {r['wall_s']:6.2f} s  peak RSS {r['peak_rss_mib']:6.0f} MiB", flush=True)
        finally:
            if not a.workdir:
                shutil.rmtree(workdir, ignore_errors=True)
        return
    try:
        rows = []
        for n in a.visited:
            r = bench(n, workdir, a.buckets, a.workers)
            rows.append(r)
            if a.json:
                print(json.dumps(r), flush=True)
            else:
                print(f"visited={n:>11,} links={r['links']:>10,} new={r['new_urls']:>10,} "
                      f"buckets={r['buckets']:>3}  "
                      f"UrlSeen {r['urlseen']['wall_s']:7.2f} s {r['urlseen']['peak_rss_mib']:7.0f} MiB  "
                      f"DuckDB {r['duckdb']['wall_s']:6.2f} s {r['duckdb']['peak_rss_mib']:6.0f} MiB  "
                      f"ratio {r['ratio_wall']:5.1f}x  | DuckDB same output "
                      f"{r['duckdb_full']['wall_s']:6.2f} s {r['duckdb_full']['peak_rss_mib']:6.0f} MiB  "
                      f"ratio {r['ratio_full']:5.1f}x  equal={r['set_equal']}", flush=True)
        return rows
    finally:
        if not a.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
