"""Each ordering's score on a small hand-made frontier, and the registry."""
import numpy as np
import pyarrow as pa
import pytest

from strategies.graph import CrawlGraph
from strategies.ordering import CRAWL_ORDERINGS, ORDERINGS, Ordering, get_ordering, url_importance


@pytest.fixture
def frontier():
    return pa.table({
        "fp": pa.array([101, 102, 103, 104, 105], pa.int64()),
        "url": ["http://a.com/", "http://b.org/x/y/home.html", "http://a.com/x/p.html",
                "http://c.net/a/b/c/d.html", "http://a.com/y/q.html"],
        "host": ["a.com", "b.org", "a.com", "c.net", "a.com"],
        "depth": pa.array([0, 2, 1, 3, 1], pa.int32()),
        "discovered_round": pa.array([0, 1, 2, 2, 1], pa.int32()),
        "inlinks": pa.array([5, 1, 3, 0, None], pa.int64()),
        "cash": [0.1, 0.3, 0.05, 0.0, 0.2],
        "history": [0.0] * 5,
    })


def order_of(scores):
    return list(np.argsort(-np.asarray(scores), kind="stable"))


def test_registry_has_every_strategy_of_the_issue():
    assert set(ORDERINGS) == {"bfs", "backlinks", "url_importance", "preference",
                              "partial_pagerank", "opic", "larger_sites_first", "random",
                              "omniscient"}
    assert "omniscient" not in CRAWL_ORDERINGS
    for name, cls in ORDERINGS.items():
        assert issubclass(cls, Ordering) and cls.name == name


def test_unknown_strategy_and_parameter_are_errors():
    with pytest.raises(ValueError):
        get_ordering("pagerank_plus")
    with pytest.raises(TypeError):
        get_ordering("bfs", x=1)


def test_bfs_takes_lower_depth_then_earlier_discovery(frontier):
    s = get_ordering("bfs").score(frontier)
    assert order_of(s) == [0, 4, 2, 1, 3]


def test_backlinks_counts_known_inlinks_null_as_zero(frontier):
    s = get_ordering("backlinks").score(frontier)
    assert s.tolist() == [5, 1, 3, 0, 0]


def test_url_importance_prefers_com_home_and_few_slashes():
    il = url_importance(["http://a.com/", "http://a.org/", "http://a.org/x/home.html",
                         "http://a.org/x/y/z.html", "http://shop.com:8080/a?b=/c/d"])
    assert il[0] == pytest.approx(2 / 3)                     # .com, 1 slash
    assert il[1] == pytest.approx(1 / 3)
    assert il[2] == pytest.approx((1 + 1 / 2) / 3)           # home, 2 slashes
    assert il[3] == pytest.approx((1 / 3) / 3)
    assert il[4] == pytest.approx(2 / 3)                     # port and query ignored


def test_preference_mixes_backlinks_and_url_importance(frontier):
    il = url_importance(frontier.column("url"))
    inl = np.array([5, 1, 3, 0, 0])
    ib = inl / (inl + 5.0)
    s = get_ordering("preference", x=2.0, y=0.5).score(frontier)
    assert np.allclose(s, 2.0 * ib + 0.5 * il)
    only_il = get_ordering("preference", x=0.0, y=1.0).score(frontier)
    assert np.allclose(only_il, il)
    # per-row: scoring a subset (one URL-seen bucket) gives the same scores for its rows
    part = get_ordering("preference", x=2.0, y=0.5).score(frontier.slice(1, 2))
    assert np.allclose(part, s[1:3])


def test_larger_sites_first_takes_the_host_with_most_pending_urls(frontier):
    s = get_ordering("larger_sites_first").score(frontier)
    assert order_of(s)[:3] == [0, 2, 4]                      # a.com has 3 pending
    sharded = frontier.append_column("host_pending", pa.array([3, 9, 3, 1, 3]))
    assert order_of(get_ordering("larger_sites_first").score(sharded))[0] == 1


def test_opic_takes_the_richest_page_first(frontier):
    assert order_of(get_ordering("opic").score(frontier)) == [1, 4, 0, 2, 3]


def test_random_is_deterministic_per_seed_and_in_unit_interval(frontier):
    a = get_ordering("random", seed=1).score(frontier)
    assert np.array_equal(a, get_ordering("random", seed=1).score(frontier))
    assert not np.array_equal(a, get_ordering("random", seed=2).score(frontier))
    assert ((a >= 0) & (a < 1)).all()


def test_omniscient_reads_the_truth(frontier):
    o = get_ordering("omniscient", truth_fp=[105, 101], truth_rank=[0.9, 0.1])
    assert o.score(frontier).tolist() == [0.1, 0, 0, 0, 0.9]


def test_partial_pagerank_scores_the_graph_ranks(frontier):
    # 101 -> 103, 101 -> 105, 103 -> 105 ; 105 is linked most
    g = CrawlGraph.from_edges([101, 101, 103], [103, 105, 105], downloaded_fp=[101, 103],
                              pending_fp=[102, 104, 105])
    o = get_ordering("partial_pagerank", tol=1e-12)
    s = o.score(frontier, g)
    pr = g.pagerank(tol=1e-12)
    assert s[4] == pytest.approx(pr[g.node_ids([105])[0]])
    assert order_of(s)[0] == 4
    with pytest.raises(ValueError):
        o.score(frontier)


@pytest.mark.parametrize("name", CRAWL_ORDERINGS)
def test_scores_are_float64_one_per_row(frontier, name):
    g = CrawlGraph.from_edges([101], [102], [101], [102, 103, 104, 105])
    s = get_ordering(name).score(frontier, g)
    assert s.dtype == np.float64 and s.shape == (frontier.num_rows,)
    assert np.isfinite(s).all()
