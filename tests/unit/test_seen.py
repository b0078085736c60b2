import pickle
import uuid
from pathlib import Path

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas import tables
from tests.unit.frontier_rows import frontier
from transforms.urlseen import merge as urlseen_merge
from transforms.urlseen import step as urlseen_step


def cands(rows):
    defaults = dict(host="a", depth=1, src_fp=0, src=None, anchor="", source="link",
                    redirects=0, lastmod=None)
    return pa.Table.from_pylist([{**defaults, **r} for r in rows], schema=tables.CANDIDATES)


def results(rows):
    defaults = dict(final=True, retries=None, not_before=None, last_error=None)
    return pa.Table.from_pylist([{**defaults, **r} for r in rows], schema=tables.RESULTS)


def by_fp(table):
    return {r["fp"]: r for r in table.to_pylist()}


def test_fetched_urls_leave_the_frontier_and_transient_ones_stay_with_retry_state():
    F = frontier([dict(fp=1, url="u1", host="a"), dict(fp=2, url="u2", host="a"),
                  dict(fp=3, url="u3", host="a")])
    R = results([dict(fp=1), dict(fp=2, final=False, retries=1, not_before=99.0, last_error="timeout")])
    out, filtered, stats = urlseen_merge.merge_bucket([F], [], [R], [], [], round_no=1)
    rows = by_fp(out)
    assert set(rows) == {2, 3}
    assert rows[2]["retries"] == 1 and rows[2]["not_before"] == 99.0 and rows[2]["last_error"] == "timeout"
    assert rows[3]["retries"] == 0


def test_unseen_links_join_the_frontier_once_with_merged_inlinks_and_anchors():
    C = cands([dict(dst_fp=10, dst="u10", src_fp=1, src="u1", depth=2, anchor="ten"),
               dict(dst_fp=10, dst="u10", src_fp=2, src="u2", depth=1, anchor="Ten!"),
               dict(dst_fp=10, dst="u10", src_fp=2, src="u2", depth=1, anchor="ten"),
               dict(dst_fp=11, dst="u11", src_fp=1, src="u1", depth=2)])
    out, _, stats = urlseen_merge.merge_bucket([], [], [], [C], [], round_no=4)
    rows = by_fp(out)
    assert set(rows) == {10, 11}
    assert rows[10]["inlinks"] == 2           # distinct linking pages
    assert rows[10]["depth"] == 1             # shortest path wins
    assert rows[10]["first_parent"] == "u2"
    assert set(rows[10]["anchors"]) == {"ten", "Ten!"}
    assert rows[10]["discovered_round"] == 4
    assert stats["new_urls"] == 2


def test_links_to_visited_or_filtered_urls_are_dropped():
    C = cands([dict(dst_fp=5, dst="u5", src_fp=1), dict(dst_fp=6, dst="u6", src_fp=1),
               dict(dst_fp=7, dst="u7", src_fp=1)])
    out, _, stats = urlseen_merge.merge_bucket([], [np.array([5]), np.array([6])], [], [C], [], round_no=1)
    assert set(by_fp(out)) == {7}
    assert stats["links_to_seen"] == 2


def test_links_to_urls_fetched_this_round_are_not_requeued():
    F = frontier([dict(fp=5, url="u5", host="a")])
    C = cands([dict(dst_fp=5, dst="u5", src_fp=1)])
    out, _, _ = urlseen_merge.merge_bucket([F], [], [results([dict(fp=5)])], [C], [], round_no=1)
    assert out.num_rows == 0


def test_links_to_pending_urls_update_inlinks_and_depth():
    F = frontier([dict(fp=5, url="u5", host="a", depth=4, inlinks=3, anchors=["x"])])
    C = cands([dict(dst_fp=5, dst="u5", src_fp=8, depth=2, anchor="y")])
    out, _, _ = urlseen_merge.merge_bucket([F], [], [], [C], [], round_no=1)
    row = by_fp(out)[5]
    assert (row["inlinks"], row["depth"], row["anchors"]) == (4, 2, ["x", "y"])


def test_filtered_urls_are_recorded_once_and_never_when_known():
    X = pa.Table.from_pylist([
        dict(fp=20, url="u20", reason="extension", first_parent="p"),
        dict(fp=20, url="u20", reason="extension", first_parent="q"),
        dict(fp=21, url="u21", reason="depth", first_parent="p"),
        dict(fp=22, url="u22", reason="depth", first_parent="p"),
    ], schema=tables.FILTERED_CANDIDATES)
    C = cands([dict(dst_fp=21, dst="u21", src_fp=1)])  # also reached at an allowed depth
    out, filtered, stats = urlseen_merge.merge_bucket([], [np.array([22])], [], [C], [X], round_no=2)
    assert sorted(filtered.column("fp").to_pylist()) == [20]
    assert stats["filtered_extension"] == 1
    assert set(by_fp(out)) == {21}


def test_url_seen_in_beam_equals_merge_of_everything_in_one_bucket():
    rng = np.random.default_rng(7)
    fps = rng.integers(-2**62, 2**62, size=400)
    F = frontier([dict(fp=int(f), url=f"u{f}", host="a") for f in fps[:100]])
    visited = pa.table({"fp": pa.array(fps[100:200], pa.int64())})
    R = results([dict(fp=int(f)) for f in fps[:30]])
    C = cands([dict(dst_fp=int(f), dst=f"u{f}", src_fp=int(fps[0])) for f in fps[50:400]])
    expected, _, _ = urlseen_merge.merge_bucket([F], [fps[100:200]], [R], [C], [], round_no=1)
    with TestPipeline(runner="FnApiRunner") as p:
        merged = {
            "frontier": p | "F" >> beam.Create([F.slice(0, 40), F.slice(40)]),
            "seen": p | "S" >> beam.Create([visited]),
            "results": p | "R" >> beam.Create([R]),
            "candidates": p | "C" >> beam.Create([C.slice(0, 100), C.slice(100)]),
            "filtered": p | "X" >> beam.Create([tables.FILTERED_CANDIDATES.empty_table()]),
        } | urlseen_step.UrlSeen(buckets=5, round_no=1)
        got = merged["frontier"] | beam.FlatMap(lambda t: t.column("fp").to_pylist())
        assert_that(got, equal_to(expected.column("fp").to_pylist()))


def test_url_seen_through_table_files_equals_the_shuffled_parts(tmp_path):
    """With `spill` the bucket parts wait in table files and only refs are shuffled: the
    merged frontier is the same, and the parts were read from those files."""
    rng = np.random.default_rng(11)
    fps = rng.integers(-2**62, 2**62, size=600)
    F = frontier([dict(fp=int(f), url=f"u{f}", host="a", depth=3) for f in fps[:200]])
    R = results([dict(fp=int(f)) for f in fps[:40]])
    C = cands([dict(dst_fp=int(f), dst=f"u{f}", src_fp=int(fps[0]), depth=1) for f in fps[150:600]])
    X = pa.Table.from_pylist([dict(fp=int(fps[599]) + 1, url="ux", reason="depth", first_parent="p")],
                             schema=tables.FILTERED_CANDIDATES)

    def rows(spill):
        out = tmp_path / ("out-files" if spill else "out-shuffle")
        out.mkdir()
        with TestPipeline(runner="FnApiRunner") as p:
            merged = {
                "frontier": p | "F" >> beam.Create([F.slice(0, 120), F.slice(120)]),
                "seen": p | "S" >> beam.Create([pa.table({"fp": pa.array(fps[500:520], pa.int64())})]),
                "results": p | "R" >> beam.Create([R]),
                "candidates": p | "C" >> beam.Create([C.slice(0, 300), C.slice(300)]),
                "filtered": p | "X" >> beam.Create([X]),
            } | urlseen_step.UrlSeen(buckets=6, round_no=2, spill=spill)
            kept = merged["frontier"] | "Kept" >> beam.Map(
                lambda t: [("frontier", *r) for r in zip(*(t.column(c).to_pylist() for c in ("fp", "url", "depth")))])
            dropped = merged["filtered"] | "Dropped" >> beam.Map(
                lambda t: [("filtered", fp, None, None) for fp in t.column("fp").to_pylist()])
            _ = ((kept, dropped) | beam.Flatten()
                 | beam.Map(lambda r, d: (Path(d) / uuid.uuid4().hex).write_bytes(pickle.dumps(r)), str(out)))
        return sorted(r for f in out.iterdir() for r in pickle.loads(f.read_bytes()))

    shuffled = rows(None)
    assert len(shuffled) > 400
    assert rows((str(tmp_path / "parts"), 4096)) == shuffled
    assert len(list((tmp_path / "parts").glob("*.arrow"))) >= 4   # frontier, results, candidates, filtered


def test_url_dropped_from_the_fetch_list_leaves_the_frontier_for_the_filtered_table():
    F = frontier([dict(fp=1, url="u1", host="a"), dict(fp=2, url="u2", host="a")])
    R = results([dict(fp=1, dropped=True), dict(fp=2)])
    X = pa.Table.from_pylist([dict(fp=1, url="u1", reason="host_not_allowed", first_parent=None),
                              dict(fp=2, url="u2", reason="depth", first_parent="p")],
                             schema=tables.FILTERED_CANDIDATES)
    out, filtered, _ = urlseen_merge.merge_bucket([F], [], [R], [], [X], round_no=3)
    assert out.num_rows == 0
    assert filtered.column("fp").to_pylist() == [1]   # 2 was fetched: it has its visited row
