"""Content-seen's old side at scale: one phase (the whole visited view read wide) vs two
phases (a narrow probe of every row group, wide reads of the row groups with hits only).

    .venv/bin/python -m benchmarks.bench_contentseen --visited 1000000 10000000

For each size N it writes, with numpy, a visited view of N rows as Parquet files of 1 M rows
(one per round, like per-round deltas) in row groups of 64 k rows (transforms.write's
size; --row_group), VISITED columns as the round writes them: url and host strings, round, content_fp,
MinHash signatures (uint32 x 128) for `--minhash_share` of the pages, `--dup_share` of them
exact duplicates (duplicate_of set, no lsh_keys), one soft-404 body shared by 0.2 % of the
pages, and `lsh_keys` (16 int64 band keys) for pages with a signature that are not
duplicates. Then a round of `--pages` fetched pages (VISITED tables with lsh_keys): 5 %
exact copies of random old pages, 5 % near copies (1-10 of 128 MinHash values changed),
1 % soft 404s, the rest new content. Each run, in its own spawned child process (peak RSS
per run), is the round's content-seen on the FnApiRunner (the DirectRunner path) from the
visited view read to the duplicates and near pairs written:

  one-phase  visited read with the old contentdedup.OLD_COLUMNS (fp, url, host, round,
             content_fp, minhash, duplicate_of) by ReadTables; ContentSeen and
             NearClusters given the whole view (the code before issue #6);
  two-phase  visited read with OLD_COLUMNS (fp, round, content_fp, lsh_keys, with
             positions); contentdedup.ApplyContentSeen (OldHits, then the same transforms).

It reports wall time, peak RSS, the Parquet column chunks each reads (compressed bytes: the
narrow columns of every row group plus, for two-phase, the wide columns of the row groups it
read wide) and the two-phase counters, and checks that both give the same duplicates and
near pairs. Not a test: run it by hand.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.bench_urlseen import in_child

FILE_ROWS = 1_000_000
ROW_GROUP = 64 * 1024
ONE_PHASE_COLUMNS = ["fp", "url", "host", "round", "content_fp", "minhash", "duplicate_of"]
SOFT404 = 404
ROUND_BASE = 1


def _hosts_urls(fp):
    h = (fp.view(np.uint64) % np.uint64(5000)).astype(np.int64).tolist()
    return ([f"h{x}.example" for x in h],
            [f"http://h{x}.example/p/{f & 0xffffffffff:x}.html" for x, f in zip(h, fp.tolist())])


def _visited(fp, rnd, cfp, sigs, has, dup):
    """VISITED table as the round writes it (lsh_keys for signed pages that are not duplicates)."""
    from schemas import tables
    from transforms.contentseen import fingerprints as contentseen_fingerprints
    hosts, urls = _hosts_urls(fp)
    n = len(fp)
    return tables.conform(pa.table({
        "fp": pa.array(fp), "url": urls, "host": hosts,
        "depth": pa.array(np.full(n, 3, np.int32)), "round": pa.array(rnd, pa.int32()),
        "outcome": pa.array(np.where(dup, "duplicate", "ok")), "http_status": pa.array(np.full(n, 200, np.int32)),
        "content_type": pa.array(["text/html"] * n), "bytes": pa.array(np.full(n, 20_000, np.int64)),
        "content_fp": pa.array(cfp), "text_fp": pa.array(cfp ^ 0x5555),
        "duplicate_of": pa.array([f"http://orig.example/{int(c) & 0xffff:x}" if d else None
                                  for c, d in zip(cfp.tolist(), dup.tolist())], pa.string()),
        "minhash": contentseen_fingerprints.signature_column(sigs, has),
        "lsh_keys": contentseen_fingerprints.lsh_key_column(sigs, has & ~dup),
    }), tables.VISITED)


def make_data(root: Path, n: int, pages: int, minhash_share: float, dup_share: float,
              row_group: int = ROW_GROUP, seed: int = 1):
    """visited/*.parquet under root and the round's new VISITED table (new.parquet)."""
    from transforms.contentseen import fingerprints as contentseen_fingerprints
    rng = np.random.default_rng(seed)
    (root / "visited").mkdir(parents=True, exist_ok=True)
    files, picks = [], {"exact": [], "near": []}
    n_files = -(-n // FILE_ROWS)
    for k in range(n_files):
        m = min(FILE_ROWS, n - k * FILE_ROWS)
        fp = rng.integers(-2**63, 2**63 - 1, m, dtype=np.int64)
        cfp = rng.integers(1, 2**63 - 1, m, dtype=np.int64)
        has = rng.random(m) < minhash_share
        sigs = rng.integers(0, 2**32, (m, contentseen_fingerprints.NUM_PERM), dtype=np.uint32)
        dup = rng.random(m) < dup_share
        soft = rng.random(m) < 0.002
        cfp[soft] = SOFT404
        dup |= soft
        if k == 0:
            dup[np.flatnonzero(soft)[:1]] = False   # the first soft 404 is an original
        t = _visited(fp, np.full(m, ROUND_BASE + k, np.int32), cfp, sigs, has, dup)
        f = root / "visited" / f"part-{k:05d}.parquet"
        pq.write_table(t, f, row_group_size=row_group, compression="zstd")
        files.append(str(f))
        # a few old pages per file for the new round to copy
        per = -(-pages // 20 // n_files)
        picks["exact"] += [(cfp[i], sigs[i], has[i]) for i in rng.choice(np.flatnonzero(~dup), per, replace=False)]
        picks["near"] += [sigs[i] for i in rng.choice(np.flatnonzero(has & ~dup), per, replace=False)]
        del t, sigs
    m = pages
    fp = rng.integers(-2**63, 2**63 - 1, m, dtype=np.int64)
    cfp = rng.integers(1, 2**63 - 1, m, dtype=np.int64)
    sigs = rng.integers(0, 2**32, (m, contentseen_fingerprints.NUM_PERM), dtype=np.uint32)
    has = rng.random(m) < minhash_share
    i = 0
    for c, s, h in picks["exact"][:m // 20]:
        cfp[i], sigs[i], has[i] = c, s, h
        i += 1
    for s in picks["near"][:m // 20]:
        s = s.copy()
        changed = int(rng.integers(1, 11))
        s[rng.choice(contentseen_fingerprints.NUM_PERM, changed, replace=False)] = rng.integers(0, 2**32, changed, dtype=np.uint32)
        sigs[i], has[i] = s, True
        i += 1
    cfp[i:i + m // 100] = SOFT404
    new = _visited(fp, np.full(m, ROUND_BASE + n_files, np.int32), cfp, sigs, has, np.zeros(m, bool))
    pq.write_table(new, root / "new.parquet")
    return files, str(root / "new.parquet"), ROUND_BASE + n_files


class _OnePhase:
    """The round's content-seen before issue #6: ContentSeen and NearClusters given the
    whole visited view (OLD_COLUMNS of then)."""

    def __init__(self, round_no):
        self.round_no = round_no

    def __call__(self, new, old):
        import apache_beam as beam

        from transforms.contentseen import oldside as contentseen_oldside
        from transforms.contentseen import step as contentseen_step
        dups = {"new": new, "old": old} | "ExactDuplicates" >> contentseen_step.ContentSeen(self.round_no)
        side = beam.pvalue.AsDict(dups | "DupFps" >> beam.FlatMap(contentseen_oldside._pairs))
        visited = new | "MarkDuplicates" >> beam.Map(contentseen_oldside.mark_duplicates, side)
        near = ({"new": visited | "NearNew" >> beam.Map(contentseen_oldside.not_duplicate),
                 "old": old | "NearOld" >> beam.Map(contentseen_oldside.not_duplicate)}
                | "NearClusters" >> contentseen_step.NearClusters()
                | "AssignmentRows" >> beam.FlatMap(lambda t: t.to_pylist()))
        return visited, near


def run(mode, files, new_file, round_no, out_dir, queue):
    import apache_beam as beam
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from schemas import tables
    from transforms.contentseen import oldside as contentseen_oldside
    from transforms.contentseen import step as contentseen_step
    from transforms.tableio.step import ReadTables

    base_rss = _peak_rss_mib()
    t0 = time.perf_counter()
    p = beam.Pipeline(runner=FnApiRunner())
    new = p | "New" >> ReadTables([new_file], tables.VISITED)
    if mode == "one-phase":
        old = p | "ReadVisited" >> ReadTables(files, tables.VISITED, ONE_PHASE_COLUMNS)
        visited, near = _OnePhase(round_no)(new, old)
    else:
        old = p | "ReadVisited" >> ReadTables(files, tables.VISITED, contentseen_oldside.OLD_COLUMNS, with_positions=True)
        empty = lambda label: p | label >> beam.Create([], reshuffle=False)
        out = ({"visited": new, "links": empty("Links"), "pages": empty("Pages"), "old": old}
               | "ContentSeen" >> contentseen_step.ApplyContentSeen(round_no))
        visited = out["visited"]
        near = out["near"] | "NearRows" >> beam.FlatMap(lambda t: t.to_pylist())
    from benchmarks.bench_contentseen import _Dump as dump   # by reference, not __main__
    (visited | "Dups" >> beam.FlatMap(lambda t: [
        (r["fp"], r["duplicate_of"]) for r in t.select(["fp", "duplicate_of"]).to_pylist()
        if r["duplicate_of"] is not None])
     | "DupList" >> beam.combiners.ToList() | "WriteDups" >> beam.Map(dump(out_dir, "dups")))
    (near | "Pairs" >> beam.Map(lambda d: (d["fp"], d["of_fp"], round(d["jaccard"], 6)))
     | "PairList" >> beam.combiners.ToList() | "WritePairs" >> beam.Map(dump(out_dir, "near")))
    result = p.run()
    result.wait_until_finish()
    wall = time.perf_counter() - t0
    counters = {c.key.metric.name: c.committed for c in
                result.metrics().query(MetricsFilter().with_namespace("contentseen"))["counters"]}
    queue.put({"wall_s": wall, "peak_rss_mib": _peak_rss_mib(), "base_rss_mib": base_rss,
               "counters": counters})


class _Dump:
    def __init__(self, out_dir, name):
        self.out_dir, self.name = out_dir, name

    def __call__(self, rows):
        with open(os.path.join(self.out_dir, self.name + ".json"), "w") as f:
            json.dump(sorted(list(r) for r in rows), f)
        return len(rows)


def column_bytes(files):
    """{column: [compressed bytes of each row group]} over files (Parquet metadata)."""
    out = {}
    for f in files:
        md = pq.ParquetFile(f).metadata
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            for c in range(rg.num_columns):
                name = rg.column(c).path_in_schema.split(".")[0]
                out.setdefault(name, []).append(rg.column(c).total_compressed_size)
    return {k: np.array(v) for k, v in out.items()}


def _peak_rss_mib() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not inherited from the parent
    that generated the data)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench(n: int, workdir: Path, pages: int, minhash_share: float, dup_share: float,
          row_group: int = ROW_GROUP) -> dict:
    from transforms.contentseen import oldside as contentseen_oldside
    root = workdir / f"n{n}"
    t = time.perf_counter()
    files, new_file, round_no = make_data(root, n, pages, minhash_share, dup_share, row_group)
    gen = time.perf_counter() - t
    cb = column_bytes(files)
    groups = len(cb["fp"])
    mib = lambda cols, sel=slice(None): sum(int(cb[c][sel].sum()) for c in cols) / 2**20
    out = {"visited": n, "pages": pages, "row_groups": groups, "generate_s": round(gen, 1),
           "visited_mib": round(mib(list(cb)), 1)}
    for mode in ("one-phase", "two-phase"):
        d = root / mode
        d.mkdir()
        r = in_child(run, mode, files, new_file, round_no, str(d))
        if mode == "one-phase":
            r["read_mib"] = round(mib(ONE_PHASE_COLUMNS), 1)
        else:
            c = r["counters"]   # wide reads: EXACT_COLUMNS or NEAR_COLUMNS of a row group
            per_group = lambda cols: mib(cols) / groups
            r["read_mib"] = round(mib(contentseen_oldside.OLD_COLUMNS)
                                  + c.get("wide_exact_row_groups", 0) * per_group(contentseen_oldside.EXACT_COLUMNS)
                                  + c.get("wide_near_row_groups", 0) * per_group(contentseen_oldside.NEAR_COLUMNS), 1)
        r["dups"] = json.load(open(d / "dups.json"))
        r["near"] = json.load(open(d / "near.json"))
        out[mode] = r
    a, b = out["one-phase"], out["two-phase"]
    out["same_results"] = a["dups"] == b["dups"] and a["near"] == b["near"]
    out["duplicates"], out["near_pairs"] = len(b.pop("dups")), len(b.pop("near"))
    a.pop("dups"), a.pop("near")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--visited", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--pages", type=int, default=1000, help="pages fetched this round")
    ap.add_argument("--minhash_share", type=float, default=0.7,
                    help="visited pages with a MinHash signature (HTML with text)")
    ap.add_argument("--dup_share", type=float, default=0.05,
                    help="visited pages that are exact duplicates (duplicate_of set)")
    ap.add_argument("--row_group", type=int, default=ROW_GROUP,
                    help="rows per Parquet row group of the visited files (default: transforms.write's)")
    ap.add_argument("--workdir", default=None, help="default: a temporary directory, removed after")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="bench_contentseen_"))
    try:
        for n in a.visited:
            r = bench(n, workdir, a.pages, a.minhash_share, a.dup_share, a.row_group)
            if a.json:
                print(json.dumps(r), flush=True)
                continue
            one, two = r["one-phase"], r["two-phase"]
            c = two["counters"]
            print(f"visited={n:>11,} row groups={r['row_groups']:>4} ({r['visited_mib']:,.0f} MiB) "
                  f"pages={r['pages']:,} -> {r['duplicates']} duplicates, {r['near_pairs']} near pairs, "
                  f"same results: {r['same_results']}", flush=True)
            for name, x in (("one-phase", one), ("two-phase", two)):
                print(f"  {name:9}  {x['wall_s']:7.1f} s  peak RSS {x['peak_rss_mib']:7.0f} MiB  "
                      f"column chunks read {x['read_mib']:8,.0f} MiB", flush=True)
            print(f"  two-phase: probe hits {c.get('old_exact_hits', 0)} exact + {c.get('old_near_hits', 0)} "
                  f"near ({c.get('near_hits_dropped', 0)} near dropped: keys of exact duplicates only); "
                  f"row groups read wide of {r['row_groups']}: {c.get('wide_exact_row_groups', 0)} for "
                  f"url/host, {c.get('wide_near_row_groups', 0)} for minhash; rows kept "
                  f"{c.get('wide_exact_hit_rows', 0)} + {c.get('wide_near_hit_rows', 0)}", flush=True)
    finally:
        if not a.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
