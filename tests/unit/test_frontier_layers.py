"""Layered views (transforms.tableio.layers, pipelines.crawldir LAYERED): a full snapshot
plus deltas resolve to the latest row per fp with removals applied; older crawl
directories (a full frontier every round, no "deltas" in the manifest) read as before."""
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.crawldir import CrawlDir
from schemas import tables
from transforms.tableio.layers import DeltaIndex, read_layers


def _frontier(fps, depth):
    n = len(fps)
    return tables.conform(pa.table({
        "fp": pa.array(fps, pa.int64()), "url": pa.array([f"http://h.test/{f}" for f in fps]),
        "host": pa.array(["h.test"] * n), "depth": pa.array([depth] * n, pa.int32()),
        "score": pa.array(np.zeros(n)), "discovered_round": pa.array([0] * n, pa.int32()),
        "source": pa.array(["link"] * n), "inlinks": pa.array([0] * n, pa.int64()),
        "retries": pa.array([0] * n, pa.int32()), "not_before": pa.array(np.zeros(n)),
        "cash": pa.array(np.zeros(n)), "history": pa.array(np.zeros(n)),
        "redirects": pa.array([0] * n, pa.int32())}), tables.FRONTIER)


def _round(root, n, frontier, removed=None, delta=False, **old):
    """A committed round n with `frontier` rows (and removed fps when a delta)."""
    rd = root / "rounds" / f"{n:06d}"
    manifest = {t: [] for t in ("hosts", "visited", "links", "filtered")}
    for table, t in (("frontier", frontier), ("frontier_removed",
                                              None if removed is None else pa.table({"fp": pa.array(removed, pa.int64())}))):
        manifest[table] = []
        if t is not None:
            (rd / table).mkdir(parents=True)
            pq.write_table(t, rd / table / "part-0.parquet")
            manifest[table] = ["part-0.parquet"]
    if old.get("old_layout"):   # written before layered tables: no "deltas", no removed table
        del manifest["frontier_removed"]
    body = {"round": n, "tables": manifest, "full": []}
    if not old.get("old_layout"):
        body["deltas"] = ["frontier"] if delta else []
    (rd / "_COMMITTED").write_text(json.dumps(body))


def _view(c, n):
    t = c.read_table("frontier", n, columns=["fp", "depth"])
    return dict(zip(t.column("fp").to_pylist(), t.column("depth").to_pylist()))


@pytest.fixture()
def crawl(tmp_path):
    _round(tmp_path, 0, _frontier([1, 2, 3, 4], 0))
    _round(tmp_path, 1, _frontier([2, 5], 1), removed=[3], delta=True)        # change 2, add 5, drop 3
    _round(tmp_path, 2, _frontier([3, 5], 2), removed=[1, 2], delta=True)     # 3 back, change 5
    return CrawlDir(str(tmp_path))


def test_the_view_is_the_latest_row_per_fp_with_removals_applied(crawl):
    assert _view(crawl, 0) == {1: 0, 2: 0, 3: 0, 4: 0}
    assert _view(crawl, 1) == {1: 0, 2: 1, 4: 0, 5: 1}
    assert _view(crawl, 2) == {3: 2, 4: 0, 5: 2}
    assert [r for r, _, _ in crawl.view_layers("frontier", 2)] == [0, 1, 2]
    # the view as the round reads it, row group by row group, equals read_table's
    layers = [(f, r) for _, f, r in crawl.view_layers("frontier", 2)]
    rows = pa.concat_tables(read_layers(layers, tables.FRONTIER, ["fp", "depth"]))
    assert dict(zip(rows.column("fp").to_pylist(), rows.column("depth").to_pylist())) == _view(crawl, 2)


def test_a_full_round_starts_the_view_again(crawl, tmp_path):
    _round(tmp_path, 3, _frontier([7], 3))
    _round(tmp_path, 4, _frontier([8], 4), removed=[7], delta=True)
    assert _view(crawl, 4) == {8: 4}
    assert [r for r, _, _ in crawl.view_layers("frontier", 4)] == [3, 4]


def test_compaction_is_due_when_the_deltas_pass_the_ratio(crawl):
    # snapshot 4 rows; deltas: round 1 writes 2 and removes 1 (3), round 2 writes 2, removes 2 (7)
    assert not crawl.compaction_due("frontier", 0, 0.5)
    assert not crawl.compaction_due("frontier", 1, 0.75)
    assert crawl.compaction_due("frontier", 1, 0.7)
    assert crawl.compaction_due("frontier", 2, 1.5) and not crawl.compaction_due("frontier", 2, 1.75)
    assert crawl.compaction_due("frontier", 0, 0)        # ratio 0: a full frontier every round


def test_older_crawl_directories_read_as_before(tmp_path):
    _round(tmp_path, 0, _frontier([1, 2], 0), old_layout=True)
    _round(tmp_path, 1, _frontier([2, 3], 1), old_layout=True)
    c = CrawlDir(str(tmp_path))
    assert _view(c, 1) == {2: 1, 3: 1} and _view(c, 0) == {1: 0, 2: 0}
    assert [r for r, _, _ in c.view_layers("frontier", 1)] == [1]


def test_delta_index_keeps_each_fps_latest_layer_only():
    index = DeltaIndex.from_key_arrays([(1, np.array([5, 2])), (2, np.array([5, 9]))])
    assert index.keys.tolist() == [2, 5, 9] and index.last.tolist() == [1, 2, 2]
    assert index.keep([1, 2, 5], 0).tolist() == [True, False, False]
    assert index.keep([2, 5], 1).tolist() == [True, False]
    assert index.keep([5, 9], 2).tolist() == [True, True]
    assert DeltaIndex().keep([1, 2], 0).tolist() == [True, True]


def test_pruning_keeps_every_layer_a_kept_view_reads(crawl, tmp_path):
    _round(tmp_path, 3, _frontier([7], 3), removed=[4], delta=True)
    assert crawl.prune_snapshots(2) == []            # rounds 2 and 3 read layers 0..3
    _round(tmp_path, 4, _frontier([8], 4))           # a compaction
    _round(tmp_path, 5, _frontier([9], 5), removed=[8], delta=True)
    assert crawl.prune_snapshots(2) == [0, 1, 2, 3]   # rounds 4 and 5 read only layers 4 and 5
    assert _view(crawl, 5) == {9: 5} and _view(crawl, 4) == {8: 4}
    assert crawl.pruned(3, "frontier") and not crawl.pruned(4)
    assert not list((tmp_path / "rounds" / "000003" / "frontier_removed").glob("*.parquet"))


def test_the_round_reads_the_same_view_and_carries_no_delta_keys(crawl, tmp_path):
    """ReadView (the round's reader) gives read_table's view; the DeltaIndex is read in the
    DoFn's setup, so the pickled DoFn Beam compresses per translation does not grow with the
    keys the deltas mention (millions in a large crawl)."""
    import apache_beam as beam
    from apache_beam.internal import pickler
    from apache_beam.testing.test_pipeline import TestPipeline
    from apache_beam.testing.util import assert_that, equal_to

    from transforms.tableio.step import ReadView, ViewSpec, _ReadLayer
    spec = ViewSpec([(f, r) for _, f, r in crawl.view_layers("frontier", 2)], tables.FRONTIER)
    with TestPipeline() as p:
        rows = (p | ReadView(spec, columns=["fp", "depth"])
                | beam.FlatMap(lambda t: zip(t.column("fp").to_pylist(), t.column("depth").to_pylist())))
        assert_that(rows, equal_to(list(_view(crawl, 2).items())))
    big = tmp_path / "big"
    _round(big, 0, _frontier([1], 0))
    _round(big, 1, _frontier(list(range(2, 50002)), 1), removed=[1], delta=True)
    big_spec = ViewSpec([(f, r) for _, f, r in CrawlDir(str(big)).view_layers("frontier", 1)], tables.FRONTIER)
    small, large = (len(pickler.dumps(_ReadLayer(s, None, "in"))) for s in (spec, big_spec))
    assert large < small + 1000


def _hosts(names, fetches):
    n = len(names)
    return tables.conform(pa.table({"host": pa.array(names), "fetches": pa.array([fetches] * n, pa.int64())}),
                          tables.HOSTS)


def test_a_table_keyed_by_text_resolves_by_its_hashed_key(tmp_path):
    """The hosts table (LAYERED by `host`, a text key): the latest row per host name; a
    name that only looks alike (case, a port) is another key."""
    paths = []
    for n, (names, fetches) in enumerate(((["a.test", "b.test", "c.test:81"], 1), (["b.test", "C.test:81"], 2),
                                          (["c.test:81"], 3))):
        p = tmp_path / f"hosts-{n}.parquet"
        pq.write_table(_hosts(names, fetches), p)
        paths.append(([str(p)], []))
    for upto, want in ((1, {"a.test": 1, "b.test": 2, "c.test:81": 1, "C.test:81": 2}),
                       (2, {"a.test": 1, "b.test": 2, "c.test:81": 3, "C.test:81": 2})):
        t = pa.concat_tables(read_layers(paths[:upto + 1], tables.HOSTS, ["host", "fetches"], key="host"))
        assert t.num_rows == len(want), upto
        assert dict(zip(t.column("host").to_pylist(), t.column("fetches").to_pylist())) == want, upto
    index = DeltaIndex.read(paths, "host")
    assert len(index) == 3 and index.keys.dtype == np.int64
