import numpy as np
import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
import apache_beam as beam

from tests.unit.frontier_rows import frontier
from transforms.generate import select as generate_select
from transforms.generate import step as generate_step


def _table(n_hosts=5, per_host=20, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for h in range(n_hosts):
        for i in range(per_host):
            fp = int(rng.integers(-2**62, 2**62))
            rows.append(dict(fp=fp, url=f"http://h{h}.test/{i}", host=f"h{h}.test",
                             score=float(rng.integers(0, 10))))
    return frontier(rows)


def _brute_force(table, k, cap):
    rows = sorted(table.to_pylist(), key=lambda r: (-r["score"], r["fp"]))
    per_host, out = {}, []
    for r in rows:
        if per_host.get(r["host"], 0) < cap:
            per_host[r["host"]] = per_host.get(r["host"], 0) + 1
            out.append(r["fp"])
    return out[:k]


def test_rank_within_group():
    assert generate_select.rank_within_group(np.array([3, 1, 3, 3, 1])).tolist() == [0, 0, 1, 2, 1]


@pytest.mark.parametrize("k,cap", [(10, 3), (7, 100), (100, 2), (1, 1)])
def test_select_is_top_k_with_host_cap(k, cap):
    t = _table()
    got = generate_select.select(t, k, cap).column("fp").to_pylist()
    assert got == _brute_force(t, k, cap)


def test_selecting_from_batch_selections_equals_global_selection():
    t = _table(n_hosts=7, per_host=30, seed=3)
    k, cap = 25, 4
    parts = [generate_select.select(t.slice(i, 37), k, cap) for i in range(0, t.num_rows, 37)]
    merged = generate_select.select(pa.concat_tables(parts), k, cap)
    assert merged.column("fp").to_pylist() == _brute_force(t, k, cap)


def test_backed_off_and_too_deep_urls_are_not_due():
    t = frontier([dict(fp=1, url="http://a/1", host="a", not_before=50.0),
                  dict(fp=2, url="http://a/2", host="a", depth=9),
                  dict(fp=3, url="http://a/3", host="a")])
    assert generate_select.due_mask(t, now=10.0, max_depth=5).tolist() == [False, False, True]
    assert generate_select.due_mask(t, now=60.0, max_depth=0).tolist() == [True, True, True]


@pytest.mark.parametrize("spread", [True, False])
def test_generate_emits_one_element_per_host_with_its_urls(spread):
    t = _table(n_hosts=4, per_host=10, seed=1)
    k, cap = 12, 5
    expected = {}
    for fp in _brute_force(t, k, cap):
        host = [r["host"] for r in t.to_pylist() if r["fp"] == fp][0]
        expected.setdefault(host, set()).add(fp)
    with TestPipeline(runner="FnApiRunner") as p:
        out = (p | beam.Create([t.slice(0, 17), t.slice(17)])
               | generate_step.Generate(now=0.0, max_pages=k, max_per_host=cap, spread=spread)
               | beam.MapTuple(lambda h, tab: (h, sorted(tab.column("fp").to_pylist()))))
        assert_that(out, equal_to([(h, sorted(v)) for h, v in expected.items()]))
    # the hosts are reshuffled only where a runner spreads them over its workers
    labels = [x.unique_name for x in p.to_runner_api().components.transforms.values()]
    assert any(label.endswith("/SpreadHosts") for label in labels) is spread


def test_the_fetch_list_keeps_the_columns_a_fetch_carries_and_drops_the_rest():
    t = frontier([dict(fp=i, url=f"http://a/{i}", host="a", score=float(i), anchors=["x" * 50] * 8,
                       first_parent="http://a/", cash=1.0) for i in range(6)])
    with TestPipeline(runner="FnApiRunner") as p:
        out = (p | beam.Create([t])
               | generate_step.Generate(now=0.0, max_pages=4, max_per_host=4, spread=False)
               | beam.MapTuple(lambda h, tab: (h, tab.column_names, tab.column("first_parent").to_pylist(),
                                               tab.column("fp").to_pylist())))
        names = [c for c in t.column_names if c in generate_select.FETCH_LIST_COLUMNS]
        assert_that(out, equal_to([("a", names, ["http://a/"] * 4, [5, 4, 3, 2])]))
    # every column a fetched page carries forward is in the fetch list, and the frontier
    # columns a round reads for it cover the choice (due, score, host cap)
    from transforms.fetch.hostjob import CARRIED
    assert set(CARRIED) <= set(names) and "anchors" not in names and "cash" not in names
    assert set(generate_select.SELECT_COLUMNS) | set(names) <= set(generate_select.READ_COLUMNS)


def test_a_frontier_read_with_the_read_columns_generates_the_same_fetch_list():
    t = _table(n_hosts=3, per_host=12, seed=5)
    narrow = t.select(list(generate_step.Generate.READ_COLUMNS))
    fn = generate_step.SelectCombineFn(now=0.0, max_pages=10, max_per_host=4, max_depth=0)
    wide_sel, narrow_sel = fn.add_input(None, t), fn.add_input(None, narrow)
    assert narrow_sel.equals(wide_sel)
