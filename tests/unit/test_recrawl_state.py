"""The revisit scheduling state (transforms/recrawl/state.py): update, view, due revisits."""
import math

import pyarrow as pa
import pytest

from schemas import tables
from strategies.recrawl import get_policy
from transforms.recrawl.state import (copy_stats, lastmod_hints, latest, next_state,
                                      select_revisits)

DAY = 86400.0


def _visited(rows):
    cols = ("fp", "url", "host", "outcome", "content_fp", "etag", "last_modified", "bytes",
            "depth", "discovered_round", "source", "content_type")
    return pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows],
                                schema=pa.schema([tables.VISITED.field(c) for c in cols]))


def _page(fp, outcome="ok", content_fp=None, etag=None, size=1000, host="a.test"):
    return {"fp": fp, "url": f"http://{host}/p{fp}.html", "host": host, "outcome": outcome,
            "content_fp": content_fp, "etag": etag, "bytes": size if outcome == "ok" else 0,
            "depth": 1, "discovered_round": 0, "source": "link", "content_type": "text/html"}


def _visit_days(versions, outcomes=None):
    """One page visited once a day; returns its state rows round by round."""
    prev, rows = {}, []
    for day, v in enumerate(versions):
        out = (outcomes or ["ok"] * len(versions))[day]
        t, _ = next_state(_visited([_page(1, out, content_fp=v, etag=f'"{v}"')]), prev,
                          {1: 0.5}, day + 1, day * DAY)
        rows.append(t)
        prev = {1: t.to_pylist()[0]}
    return rows


def test_changes_are_counted_by_content_fingerprint_and_304_is_no_change():
    rows = _visit_days([10, 10, 11, None, 12], ["ok", "ok", "ok", "not_modified", "ok"])
    last = rows[-1].to_pylist()[0]
    assert (last["intervals"], last["changes"]) == (4, 2)
    assert last["interval_sum"] == pytest.approx(4 * DAY)
    assert [r.to_pylist()[0]["changed"] for r in rows] == [False, False, True, False, True]
    assert rows[3].to_pylist()[0]["content_fp"] == 11     # a 304 keeps the last full copy's


def test_304_counts_the_last_body_as_bytes_saved_and_keeps_validators():
    first, _ = next_state(_visited([_page(1, content_fp=5, etag='"v1"', size=4321)]), {}, {}, 1, 0.0)
    prev = {1: first.to_pylist()[0]}
    again, stats = next_state(_visited([_page(1, "not_modified")]), prev, {}, 2, DAY)
    assert stats == {"revisited": 1, "not_modified": 1, "bytes_saved": 4321, "changes_detected": 0}
    assert again.to_pylist()[0]["etag"] == '"v1"'


def test_a_page_gone_on_revisit_leaves_the_schedule_and_a_first_visit_error_never_enters():
    rows = _visit_days([10, None], ["ok", "http_error"])
    assert rows[-1].to_pylist()[0]["active"] is False
    t, _ = next_state(_visited([_page(2, "http_error")]), {}, {}, 1, 0.0)
    assert t.num_rows == 0


def test_latest_takes_the_last_visit_and_the_newest_sitemap_lastmod():
    rows = _visit_days([10, 11])
    cand = pa.table({"dst_fp": [1, 1, 7], "dst": ["u1", "u1", "u7"], "host": ["a.test"] * 3,
                     "lastmod": [5.0, 9e9, None]}, schema=pa.schema([
                         tables.CANDIDATES.field(c) for c in ("dst_fp", "dst", "host", "lastmod")]))
    hints = lastmod_hints(cand, 3)
    assert hints.num_rows == 2
    view = latest(pa.concat_tables(rows + [hints]))
    assert view.num_rows == 1            # a hint alone (fp 7, never visited) is no state
    r = view.to_pylist()[0]
    assert (r["round"], r["lastmod"], r["changes"]) == (2, 9e9, 1)


def _state(n, rates_known=True, host_of=lambda i: f"h{i % 3}.test"):
    rows = []
    for i in range(n):
        rows.append({"fp": i + 1, "url": f"http://{host_of(i)}/p{i}.html", "host": host_of(i),
                     "round": 1, "last_visit": 0.0, "intervals": 4 if rates_known else 0,
                     "changes": (i % 5) if rates_known else 0, "interval_sum": 4 * DAY if rates_known else 0.0,
                     "changed": False, "active": True, "etag": f'"e{i}"', "last_modified": None,
                     "content_fp": i, "bytes": 100, "score": 1.0, "depth": 1, "discovered_round": 0,
                     "source": "link", "content_type": "text/html", "lastmod": None})
    return pa.Table.from_pylist(rows, schema=tables.RECRAWL)


def test_revisits_respect_the_budget_and_the_host_cap_and_carry_validators():
    state = _state(30)
    # uniform: 10 revisits a day over 30 pages, f = 1/3 per day: nothing due after one day,
    # but the budget is spent on the pages nearest their due time (≤ 3 per host)
    rows, stats = select_revisits(state, DAY, 10, DAY, get_policy("uniform"), max_per_host=3)
    assert rows.num_rows == 9 and stats["revisits_due"] == 0
    rows, stats = select_revisits(state, 0.4 * DAY, 10, DAY, get_policy("uniform"), max_per_host=3)
    assert rows is None or rows.num_rows == 0      # never within half a round gap of a visit
    rows, stats = select_revisits(state, 3 * DAY, 10, DAY, get_policy("uniform"), max_per_host=3)
    assert stats["revisits_due"] == 30 and rows.num_rows == 9      # 3 hosts x 3
    assert all(e and e.startswith('"e') for e in rows.column("etag").to_pylist())
    rows, _ = select_revisits(state, 3 * DAY, 10, DAY, get_policy("uniform"), max_per_host=100)
    assert rows.num_rows == 10


def test_nothing_is_due_at_the_clock_of_the_last_visit_and_lastmod_makes_a_page_due():
    state = _state(6)
    rows, _ = select_revisits(state, 0.0, 10, DAY, get_policy("uniform"), 100)
    assert rows is None or rows.num_rows == 0
    # never within the same round clock, whatever the budget (a crawl --until_empty on one
    # clock must end), also for pages whose first-revisit phase is small
    for st in (state, _state(300, rates_known=False)):
        rows, _ = select_revisits(st, 0.0, 1000, DAY, get_policy("uniform"), 1000)
        assert rows is None or rows.num_rows == 0
    state = state.set_column(state.schema.get_field_index("lastmod"), "lastmod",
                             pa.array([None, 10.0, None, None, None, None], pa.float64()))
    rows, _ = select_revisits(state, 60.0, 10, DAY, get_policy("uniform"), 100)
    assert rows.column("fp").to_pylist() == [2]


def test_optimal_revisits_the_pages_that_changed_not_the_static_ones():
    state = _state(30)        # changes (i % 5) of 4 daily intervals: 0 = static
    rows, _ = select_revisits(state, 5 * DAY, 10, DAY, get_policy("optimal"), 100)
    changes = {r["fp"]: r["changes"] for r in state.to_pylist()}
    assert rows.num_rows == 10
    assert all(changes[fp] > 0 for fp in rows.column("fp").to_pylist())


def test_copy_stats_count_the_expired_set():
    state = _state(10)        # rates from (4, i % 5): 0 .. ln(9)/day
    stats = copy_stats(state, DAY, 0.5)
    # P(changed in a day) = 1 - (n - X + .5)/(n + .5): > 0.5 for X >= 3 (X = 3, 4 -> 4 pages)
    assert stats["expired"] == 4
    assert 0 < stats["estimated_freshness"] < 1
    assert copy_stats(_state(5, rates_known=False), DAY, 0.5)["expired"] == 0
    assert math.isclose(copy_stats(_state(5), 0.0, 0.5)["estimated_freshness"], 1.0)


def test_first_revisits_of_pages_fetched_together_spread_over_one_period():
    state = _state(300, rates_known=False)
    # uniform, 50 revisits/day over 300 pages: period 6 days; due in the round nearest the
    # due time: a quarter of the phases on day 1
    rows, stats = select_revisits(state, DAY, 50, DAY, get_policy("uniform"), 1000)
    assert 40 <= stats["revisits_due"] <= 110     # phase <= (1 + 0.5) / 6 of the pages
    rows, stats = select_revisits(state, 6 * DAY, 50, DAY, get_policy("uniform"), 1000)
    assert stats["revisits_due"] == 300 and rows.num_rows == 50


def test_bad_revisit_settings_are_one_error_naming_the_flag():
    from pipelines.config import ConfigError, RoundConfig
    from pipelines.settings import ROUND_SETTINGS, UsageError, effective_round_settings
    with pytest.raises(ConfigError, match="--refetch_params: 'sample_size' is not KEY=VALUE"):
        RoundConfig.build(effective_round_settings({"refetch_params": "sample_size"}, {}))
    with pytest.raises(ConfigError, match=r"--refetch_policy cluster: .*unknown parameter"):
        RoundConfig.build(effective_round_settings({"refetch_policy": "cluster", "refetch_params": "nope=1"}, {}))
    with pytest.raises(UsageError, match="--mode streaming: must be one of batch, incremental, vertical"):
        ROUND_SETTINGS["mode"].coerce("streaming")
    cfg = RoundConfig.build(effective_round_settings({"mode": "incremental", "refetch_policy": "cluster",
                                                      "refetch_params": "k=5,sample_size=3"}, {}))
    assert cfg.recrawl.incremental and (cfg.recrawl.policy.k, cfg.recrawl.policy.sample_size) == (5, 3)
