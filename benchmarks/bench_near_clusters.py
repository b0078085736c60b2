"""Near-duplicate clusters on a single-template host: output and memory linear in pages.

    .venv/bin/python -m benchmarks.bench_near_clusters --pages 20000 [--before 5000]
    # another checkout's NearClusters with this file: cd there, PYTHONPATH=. python /path/to/this.py

Pages are generated in-process, not served. The template host is the simulated web's
documentation book (`tests/simweb/templatehost.py`), signed over the *whole* page text --
the worst case, as if the template were not removed: every page is one LSH cluster with
every other (one band group of all pages per band). The other pages are distinct texts of
the same length. Each run is content-seen's near-duplicate step (`NearClusters`, the round's
code, on the FnApiRunner) over one round's pages, in its own spawned child process (peak
RSS: the child's VmHWM, which exec resets; ru_maxrss would be the parent's, carried over
the fork and exec of the spawn, ~3 GB after signing the pages):

  without   --pages distinct pages (a round without the template host)
  with      the same pages + --pages template pages (the round with it)
  same-size 2 x --pages distinct pages (as many pages as `with`, no template)
  before    (--before N) the pair output this replaced (each new page paired with the 200
            earliest members of its band groups, one row per pair) on N template pages

It prints rows written, the widest band group a page was compared with, seconds and peak
RSS per run. Not a test: run it by hand.
"""
from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.bench_urlseen import in_child

BATCH = 2000


def _words(k, r, vocab):
    return " ".join(r.choice(vocab) for _ in range(k))


def make_pages(out: Path, pages: int, seed: int = 7) -> dict:
    """Parquet files of signed pages (fp, url, round, minhash): distinct, template."""
    from tests.simweb import templatehost
    from transforms.contentseen import fingerprints as F
    from transforms.page.parse import parse_html
    r = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)]
    files = {}
    for kind in ("distinct", "template", "distinct2"):
        if kind == "template":
            texts = [parse_html(templatehost.page_html(i, pages), "http://docs.example/", "text/html").text
                     for i in range(pages)]
        else:
            texts = [_words(560, r, vocab) for _ in range(pages)]
        sigs, _ = F.minhash_signatures(texts)
        off = {"distinct": 1, "template": 10_000_000, "distinct2": 20_000_000}[kind]
        fps = np.arange(off, off + pages, dtype=np.int64) * 1_000_003
        files[kind] = []
        for k in range(0, pages, BATCH):
            sl = slice(k, k + BATCH)
            t = pa.table({"fp": pa.array(fps[sl]), "url": [f"http://{kind}.example/p{i}" for i in range(k, min(k + BATCH, pages))],
                          "round": pa.array(np.ones(len(fps[sl]), np.int32)),
                          "minhash": F.signature_column(sigs[sl])})
            f = out / f"{kind}-{k}.parquet"
            pq.write_table(t, f)
            files[kind].append(str(f))
    return files


def run(files, mode, q):
    import apache_beam as beam
    from apache_beam.metrics import Metrics
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from transforms.contentseen import duplicates
    from transforms.contentseen import step as cs
    from transforms.contentseen.fingerprints import LSH_PARAMS, NUM_PERM
    started = time.perf_counter()
    p = beam.Pipeline(runner=FnApiRunner())
    new = (p | beam.Create(files, reshuffle=False)
           | "Read" >> beam.Map(lambda f: pq.read_table(f)))
    old = p | "NoOld" >> beam.Create([], reshuffle=False)
    if mode == "before":
        bands, rows = LSH_PARAMS

        def band(t):
            out, _ = duplicates._band_rows(t, bands, rows, NUM_PERM, True)
            if out is not None:
                yield from duplicates._split(out, duplicates._col(out, "key").astype(np.int64), 16)
        out = (new | beam.FlatMap(band) | beam.GroupByKey()
               | beam.FlatMap(lambda kv: duplicates.candidate_pairs(kv[1], bands, rows, NUM_PERM, 0.9, 200))
               | beam.Distinct() | beam.combiners.Count.Globally())
    else:
        out = ({"new": new, "old": old} | cs.NearClusters(threshold=0.9)
               | beam.Map(lambda t: t.num_rows))
    rows_out = Metrics.counter("bench", "rows")
    out | beam.Map(lambda n: rows_out.inc(n))
    result = p.run()
    result.wait_until_finish()
    dist = result.metrics().query(MetricsFilter().with_name("near_group_compared"))["distributions"]
    widest = max((d.committed.max for d in dist if d.committed), default=0)
    rows_written = sum(c.committed for c in result.metrics().query(
        MetricsFilter().with_namespace("bench"))["counters"])
    q.put({"mode": mode, "rows": rows_written, "seconds": round(time.perf_counter() - started, 1), "widest": widest,
           "peak_rss_mb": _peak_rss_mb()})


def _peak_rss_mb() -> float:
    """This process's peak RSS since its exec (VmHWM; ru_maxrss outlives exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--before", type=int, default=0, help="also run the pair output on N template pages")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        files = make_pages(Path(d), a.pages)
        print(f"generated and signed {3 * a.pages} pages in {time.perf_counter() - t0:.0f} s", flush=True)
        runs = [("without", files["distinct"]), ("with", files["distinct"] + files["template"]),
                ("same-size", files["distinct"] + files["distinct2"])]
        if a.before:
            runs.append(("before", files["template"][:max(1, a.before // BATCH)]))
        for label, fs in runs:
            out = in_child(run, fs, "before" if label == "before" else "clusters")
            print(f"{label:10s} {out}", flush=True)


if __name__ == "__main__":
    main()
