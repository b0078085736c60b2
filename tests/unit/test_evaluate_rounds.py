"""Issue #11: the evaluator's replay does what a round does (fetch order inside a round,
ties, robots-denied slots, recomputation after every round) and the report's per-round
ordering figures."""
import numpy as np
import pyarrow as pa

from pipelines import evaluate as ev
from pipelines.evalgraph import build_graph
from pipelines.ordering_report import ordering_by_round
from transforms.generate.select import select, snap


def test_a_round_fetches_the_kth_url_of_every_host_before_any_hosts_next():
    hosts = pa.array(["a", "a", "a", "b", "c", "c"])           # fetch list, generate's order
    assert ev.round_fetch_order(hosts).tolist() == [0, 3, 4, 1, 5, 2]


def test_a_host_with_a_crawl_delay_falls_behind_the_others_inside_a_round():
    hosts = pa.array(["a", "a", "a", "b", "b", "b"])
    pace = ev.host_pace({"a": 0.1, "b": None}, delay_per_host=0.0, fetch_seconds=0.01)
    assert pace == {"a": 0.1, "b": 0.01}
    # a: t = 0, 0.1, 0.2; b: t = 0, 0.01, 0.02 -> b's second and third go before a's second
    assert ev.round_fetch_order(hosts, pace).tolist() == [0, 3, 4, 5, 1, 2]
    # --delay_per_host above the crawl delay sets both paces
    assert ev.host_pace({"a": 0.1, "b": None}, 0.5, 0.01) == {"a": 0.5, "b": 0.5}
    # a host the pace does not name goes at the usual (fastest) pace
    assert ev.round_fetch_order(pa.array(["a", "c", "c"]), {"a": 0.1, "b": 0.01}).tolist() == [0, 1, 2]


def test_scores_apart_only_by_float_noise_tie_and_the_fingerprint_decides():
    noisy = 0.012337723200744222
    t = pa.table({"fp": pa.array([5, 3], pa.int64()), "host": ["h", "h"],
                  "score": [noisy, noisy * (1 + 4e-16)]})
    assert snap([noisy])[0] == snap([noisy * (1 + 4e-16)])[0]
    assert select(t, 1, 10).column("fp").to_pylist() == [3]
    # a real difference still orders
    t = t.set_column(2, "score", pa.array([noisy, noisy * (1 + 1e-9)]))
    assert select(t, 1, 10).column("fp").to_pylist() == [3]
    t = t.set_column(2, "score", pa.array([noisy * (1 + 1e-9), noisy]))
    assert select(t, 1, 10).column("fp").to_pylist() == [5]


def _star():
    # 0 -> 1..4 ; 1 -> 5 ; 2 (robots-denied) -> 6
    src = [0, 0, 0, 0, 1, 2]
    dst = [1, 2, 3, 4, 5, 6]
    return build_graph(np.array(src), np.array(dst), 7, seeds=[0])


def test_a_robots_denied_page_takes_a_fetch_slot_and_reveals_nothing():
    g = _star()
    g.fetchable[2] = False
    r = ev.simulate(g, "bfs", batch_size=4, per_host_cap=10, max_pages=7)
    assert 2 not in r.order.tolist() and 6 not in r.order.tolist()
    assert r.info["batch_sizes"][1] == 3                 # 4 slots, one spent on page 2


def test_partial_pagerank_is_recomputed_after_the_seed_round():
    g = _star()
    r = ev.simulate(g, "partial_pagerank", batch_size=100, per_host_cap=100)
    assert r.info["pagerank_runs"] == r.batches          # once before every batch


def test_report_ordering_per_round_share_and_relative_auc():
    truth = {"a": 0.5, "b": 0.3, "c": 0.2}
    rows = [dict(url="c", round=1, fetch_time=1.0, outcome="ok"),
            dict(url="x", round=1, fetch_time=0.5, outcome="robots_denied"),
            dict(url="a", round=2, fetch_time=2.0, outcome="ok"),
            dict(url="b", round=2, fetch_time=3.0, outcome="ok")]
    out = ordering_by_round(rows, truth, frac=1.0)
    assert [r["fetched"] for r in out] == [1, 3]
    assert [r["pr_share"] for r in out] == [0.2, 1.0]
    assert out[0]["relative_auc"] == round(0.2 / 0.5, 4)
    assert out[1]["relative_auc"] == round((0.2 + 0.7 + 1.0) / (0.5 + 0.8 + 1.0), 4)
