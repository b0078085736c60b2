"""UrlSeen (bucketed CoGroupByKey of Arrow tables) is exact: set-equal to DuckDB anti-joins."""
import apache_beam as beam
import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.parquetio import ReadAllFromParquetBatched
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas import tables
from transforms.urlseen import step as urlseen_step


def _inputs(seed=1, n_visited=40_000, n_links=12_000):
    rng = np.random.default_rng(seed)
    pool = rng.integers(-2**63, 2**63 - 1, size=n_visited + 20_000, dtype=np.int64)
    visited = pool[:n_visited]
    frontier_fps = pool[n_visited:n_visited + 5_000]
    filtered_fps = pool[n_visited + 5_000:n_visited + 7_000]
    fresh = pool[n_visited + 7_000:]
    # links: to visited, filtered, pending and fresh URLs, with repeats
    dst = np.concatenate([rng.choice(visited, n_links // 4), rng.choice(filtered_fps, n_links // 8),
                          rng.choice(frontier_fps, n_links // 8), rng.choice(fresh, n_links // 2)])
    src = rng.choice(np.concatenate([visited[:500], [0]]), len(dst))
    src[:50] = dst[:50]                                               # self-links
    F = pa.table({"fp": frontier_fps, "url": [f"f{x}" for x in frontier_fps.tolist()],
                  "host": ["h"] * len(frontier_fps)})
    F = tables.conform(F, tables.FRONTIER)
    done = rng.choice(frontier_fps, 1_500, replace=False)
    R = pa.table({"fp": done, "final": rng.random(len(done)) < 0.7,
                  "retries": pa.array(np.ones(len(done), np.int32)),
                  "not_before": np.zeros(len(done)), "last_error": ["x"] * len(done)})
    C = tables.conform(pa.table({
        "dst_fp": dst, "dst": [f"u{x}" for x in dst.tolist()], "host": ["h"] * len(dst),
        "depth": pa.array(rng.integers(1, 5, len(dst)).astype(np.int32)), "src_fp": src,
        "src": [f"u{x}" for x in src.tolist()], "anchor": [f"a{x % 7}" for x in src.tolist()],
        "source": ["link"] * len(dst)}), tables.CANDIDATES)
    xf = np.concatenate([rng.choice(fresh, 800), rng.choice(visited, 200), rng.integers(1, 10**15, 500)])
    X = tables.conform(pa.table({"fp": xf, "url": [f"x{x}" for x in xf.tolist()],
                                 "reason": ["depth"] * len(xf)}), tables.FILTERED_CANDIDATES)
    return F, pa.table({"fp": visited}), pa.table({"fp": filtered_fps}), R, C, X


def _duckdb(F, V, Xseen, R, C, X):
    con = duckdb.connect()
    for name, t in dict(F=F, V=V, XS=Xseen, R=R, C=C, X=X).items():
        con.register(name, t)
    con.execute("""CREATE TABLE seen_all AS SELECT fp FROM V UNION SELECT fp FROM XS
                   UNION SELECT fp FROM R WHERE final""")
    frontier = con.execute("""
        SELECT fp FROM F WHERE fp NOT IN (SELECT fp FROM R WHERE final)
        UNION SELECT DISTINCT dst_fp FROM C ANTI JOIN seen_all s ON C.dst_fp = s.fp""").fetchall()
    inlinks = con.execute("""
        SELECT c.dst_fp, count(DISTINCT CASE WHEN c.src_fp <> 0 AND c.src_fp <> c.dst_fp
                                             THEN c.src_fp END)
        FROM C c ANTI JOIN seen_all s ON c.dst_fp = s.fp
        WHERE c.dst_fp NOT IN (SELECT fp FROM F) GROUP BY 1""").fetchall()
    filtered = con.execute("""
        SELECT DISTINCT fp FROM X WHERE fp NOT IN (SELECT fp FROM seen_all)
        AND fp NOT IN (SELECT fp FROM F WHERE fp NOT IN (SELECT fp FROM R WHERE final))
        AND fp NOT IN (SELECT dst_fp FROM C)""").fetchall()
    return [r[0] for r in frontier], inlinks, [r[0] for r in filtered]


def test_url_seen_is_set_equal_to_duckdb_anti_joins_on_50k_random_inputs(tmp_path):
    F, V, Xseen, R, C, X = _inputs()
    want_frontier, want_inlinks, want_filtered = _duckdb(F, V, Xseen, R, C, X)
    assert len(want_frontier) > 5_000 and len(want_filtered) > 500
    fresh_fps = set(C.column("dst_fp").to_pylist()) - set(F.column("fp").to_pylist())

    def files(name, *ts, row_group=4096):
        # Parquet in row groups, read in batches as the round reads its inputs (beam.Create
        # of large tables pickles and bz2-compresses them into the pipeline: slow)
        out = []
        for k, t in enumerate(ts):
            f = str(tmp_path / f"{name}{k}.parquet")
            pq.write_table(t, f, row_group_size=row_group)
            out.append(f)
        return out

    with TestPipeline(runner="FnApiRunner") as p:
        def read(label, fs, schema):
            return (p | f"{label}Files" >> beam.Create(fs, reshuffle=False)
                    | f"Read{label}" >> ReadAllFromParquetBatched()
                    | f"Conform{label}" >> beam.Map(tables.conform, schema))
        out = {
            "frontier": read("F", files("F", F), tables.FRONTIER),
            "seen": read("S", files("S", V, Xseen, row_group=10_000), pa.schema([("fp", pa.int64())])),
            "results": read("R", files("R", R), tables.RESULTS),
            "candidates": read("C", files("C", C, row_group=2500), tables.CANDIDATES),
            "filtered": read("X", files("X", X, row_group=1000), tables.FILTERED_CANDIDATES),
        } | urlseen_step.UrlSeen(buckets=7, round_no=3)
        assert_that(out["frontier"] | "Fps" >> beam.FlatMap(lambda t: t.column("fp").to_pylist()),
                    equal_to(want_frontier), label="FrontierEqual")
        assert_that(out["frontier"] | "NewInlinks" >> beam.FlatMap(
            lambda t, fresh=fresh_fps: [(f, i) for f, i in zip(t.column("fp").to_pylist(),
                                                               t.column("inlinks").to_pylist())
                                        if f in fresh]),
            equal_to(want_inlinks), label="InlinksEqual")
        assert_that(out["filtered"] | "XFps" >> beam.FlatMap(lambda t: t.column("fp").to_pylist()),
                    equal_to(want_filtered), label="FilteredEqual")


def test_removed_fps_are_the_set_difference():
    """`_removed`: fps of the frontier parts that came in and not out, sorted, each once."""
    rng = np.random.default_rng(5)
    pool = rng.integers(-2**63, 2**63 - 1, size=3_000, dtype=np.int64)
    parts = [pa.table({"fp": rng.choice(pool[:2_000], 900)}) for _ in range(3)] + [None, pa.table({"fp": pool[:0]})]
    out = pa.table({"fp": np.concatenate([rng.choice(pool[:2_000], 1_200), pool[2_000:]])})
    came_in = {int(x) for t in parts if t is not None for x in t.column("fp").to_pylist()}
    want = sorted(came_in - set(out.column("fp").to_pylist()))
    got = urlseen_step._removed(parts, out)
    assert got.dtype == np.int64 and got.tolist() == want and 100 < len(want) < len(came_in)
    assert urlseen_step._removed([None], out).tolist() == []
