"""Each ordering on small hand-made frontiers and graphs: the fetch order it produces
(through generate's own selection) against orders worked out by hand or by networkx."""
import networkx as nx
import numpy as np
import pyarrow as pa
import pytest

from schemas import tables
from strategies.graph import CrawlGraph
from strategies.ordering import CRAWL_ORDERINGS, get_ordering
from transforms.generate.select import select
from transforms.urlseen.merge import _aggregate_candidates

# index: fp, url, host, depth, discovered_round, inlinks, cash
ROWS = [
    (101, "http://a.com/", "a.com", 0, 0, 5, 0.10),
    (102, "http://b.org/x/y/home.html", "b.org", 2, 1, 1, 0.30),
    (103, "http://a.com/x/p.html", "a.com", 1, 2, 3, 0.05),
    (104, "http://c.net/a/b/c/d.html", "c.net", 3, 2, 0, 0.0),
    (105, "http://a.com/y/q.html", "a.com", 1, 1, None, 0.20),
    (100, "http://b.org/z.html", "b.org", 1, 1, 3, 0.20),
]

# Worked out by hand (ties -> smaller fp first, as generate breaks them):
EXPECTED = {
    # depth, then discovery round: 0; (1,1) rows 5 and 4 tie -> fp 100 < 105; (1,2); (2,1); (3,2)
    "bfs": [0, 5, 4, 2, 1, 3],
    # the reverse in depth, then in discovery round: (3,2); (2,1); (1,2); (1,1) fp 100 < 105; 0
    "dfs": [3, 1, 2, 5, 4, 0],
    # in-links 5, 3 (fp 100 before 103), 1, 0 (fp 104), null counts as 0 (fp 105)
    "backlinks": [0, 5, 2, 1, 3, 4],
    # IL = (.com + 'home' + 1/slashes)/3: 2/3, 1/2 (fp 103), 1/2 (fp 105), 4/9, 1/3, 1/12
    "url_importance": [0, 2, 4, 1, 5, 3],
    # IB = in/(in+5) + IL: 1/2+2/3, 3/8+1/2, 3/8+1/3, 1/6+4/9, 0+1/2, 0+1/12
    "preference": [0, 2, 5, 1, 4, 3],
    # cash .30, .20 (fp 100), .20 (fp 105), .10, .05, 0
    "opic": [1, 5, 4, 0, 2, 3],
    # a.com has 3 pending, b.org 2, c.net 1; within a host lower depth first
    "larger_sites_first": [0, 2, 4, 5, 1, 3],
}
TESTED_ELSEWHERE = {"partial_pagerank", "random",
                    "best_first", "shark_search", "fish_search"}   # tests/unit/test_focused.py


@pytest.fixture
def frontier():
    cols = list(zip(*ROWS))
    return pa.table({
        "fp": pa.array(cols[0], pa.int64()), "url": list(cols[1]), "host": list(cols[2]),
        "depth": pa.array(cols[3], pa.int32()), "discovered_round": pa.array(cols[4], pa.int32()),
        "inlinks": pa.array(cols[5], pa.int64()), "cash": list(cols[6]), "history": [0.0] * len(ROWS),
    })


def fetch_order(frontier, scores, max_per_host=None):
    """The order generate takes rows in: (score desc, fp asc), host cap as given."""
    t = frontier.append_column("score", pa.array(np.asarray(scores, np.float64)))
    picked = select(t, t.num_rows, max_per_host or t.num_rows).column("fp").to_pylist()
    index = {fp: i for i, fp in enumerate(frontier.column("fp").to_pylist())}
    return [index[fp] for fp in picked]


def test_every_crawl_ordering_has_its_order_pinned_here():
    assert set(EXPECTED) | TESTED_ELSEWHERE == set(CRAWL_ORDERINGS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ordering_fetches_in_the_order_worked_out_by_hand(frontier, name):
    assert fetch_order(frontier, get_ordering(name).score(frontier)) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(CRAWL_ORDERINGS))
def test_scores_follow_their_rows_when_the_frontier_is_shuffled(frontier, name):
    g = CrawlGraph.from_edges([101, 101, 103], [103, 105, 105], [101, 103], [100, 102, 104, 105])
    perm = [3, 0, 5, 1, 4, 2]
    a = get_ordering(name).score(frontier, g)
    b = get_ordering(name).score(frontier.take(pa.array(perm)), g)
    assert np.allclose(b, a[perm])


def test_unknown_strategy_and_parameter_are_errors():
    with pytest.raises(ValueError):
        get_ordering("pagerank_plus")
    with pytest.raises(TypeError):
        get_ordering("bfs", x=1)


def test_bfs_crawl_fetches_pages_in_order_of_their_link_distance_from_the_seed():
    # a crawl loop fetching one page at a time, depth = 1 + depth of the first linker
    G = nx.gnp_random_graph(60, 0.05, seed=7, directed=True)
    G.add_edges_from((i, i + 1) for i in range(0, 59, 3))     # keep most of it reachable
    dist = nx.single_source_shortest_path_length(G, 0)
    depth, disc, order = {0: 0}, {0: 0}, []
    bfs = get_ordering("bfs")
    for step in range(1, len(dist) + 1):
        pending = [u for u in depth if u not in order]
        t = pa.table({"fp": pa.array(pending, pa.int64()), "host": ["h"] * len(pending),
                      "depth": pa.array([depth[u] for u in pending], pa.int32()),
                      "discovered_round": pa.array([disc[u] for u in pending], pa.int32())})
        u = pending[fetch_order(t, bfs.score(t))[0]]
        order.append(u)
        for v in G.successors(u):
            if v not in depth:
                depth[v], disc[v] = depth[u] + 1, step
    assert sorted(order) == sorted(dist)
    assert [dist[u] for u in order] == sorted(dist.values())
    # ties at one distance go by discovery step, then by fingerprint
    for a, b in zip(order, order[1:]):
        if dist[a] == dist[b]:
            assert (disc[a], a) < (disc[b], b)


def _stack_dfs(G, root):
    """Reference: depth-first search with an explicit stack that pushes a page once, when it
    is first found; of one page's new links the smallest fingerprint is popped first."""
    found, order, stack = {root}, [], [root]
    while stack:
        u = stack.pop()
        order.append(u)
        new = sorted((v for v in G.successors(u) if v not in found), reverse=True)
        found.update(new)
        stack.extend(new)
    return order


@pytest.mark.parametrize("seed", [3, 7, 11])
def test_dfs_crawl_fetches_pages_in_the_preorder_of_a_depth_first_search(seed):
    # a crawl loop fetching one page at a time, depth = 1 + depth of the first linker
    G = nx.gnp_random_graph(60, 0.06, seed=seed, directed=True)
    G.add_edges_from((i, i + 1) for i in range(0, 59, 3))
    depth, disc, order = {0: 0}, {0: 0}, []
    dfs = get_ordering("dfs")
    for step in range(1, len(G) + 1):
        pending = [u for u in depth if u not in order]
        if not pending:
            break
        t = pa.table({"fp": pa.array(pending, pa.int64()), "host": ["h"] * len(pending),
                      "depth": pa.array([depth[u] for u in pending], pa.int32()),
                      "discovered_round": pa.array([disc[u] for u in pending], pa.int32())})
        u = pending[fetch_order(t, dfs.score(t))[0]]
        order.append(u)
        for v in G.successors(u):
            if v not in depth:
                depth[v], disc[v] = depth[u] + 1, step
    assert order == _stack_dfs(G, 0)
    assert max(depth.values()) > max(nx.single_source_shortest_path_length(G, 0).values())


def _candidates(links):
    """CANDIDATES rows for (src_fp, dst_fp) links (one row per link occurrence)."""
    return pa.Table.from_pylist([
        dict(dst_fp=d, dst=f"http://h/{d}", host="h", depth=1, src_fp=s, src=f"http://h/{s}",
             anchor="", source="link", redirects=0, lastmod=None) for s, d in links],
        schema=tables.CANDIDATES)


def test_backlinks_count_distinct_linking_pages_not_link_occurrences():
    # page 7 is linked 5 times by 2 pages (and by itself); page 8 once each by 3 pages
    links = [(1, 7), (1, 7), (1, 7), (2, 7), (2, 7), (7, 7), (3, 8), (4, 8), (5, 8)]
    agg = _aggregate_candidates(_candidates(links))
    inl = dict(zip(agg.column("dst_fp").to_pylist(), agg.column("inlinks").to_pylist()))
    assert inl == {7: 2, 8: 3}
    f = pa.table({"fp": pa.array([7, 8], pa.int64()), "host": ["h", "h"],
                  "inlinks": pa.array([inl[7], inl[8]], pa.int64())})
    assert fetch_order(f, get_ordering("backlinks").score(f)) == [1, 0]


def test_preference_trades_in_links_against_url_importance_with_its_weights():
    # deep: 2 in-links, IL 1/12; root: no in-links, IL 2/3
    f = pa.table({"fp": pa.array([1, 2], pa.int64()), "host": ["c.net", "a.com"],
                  "url": ["http://c.net/a/b/c/d.html", "http://a.com/"],
                  "inlinks": pa.array([2, 0], pa.int64())})
    # x=y=1: 2/(2+5) + 1/12 = 0.369 < 2/3
    assert fetch_order(f, get_ordering("preference").score(f)) == [1, 0]
    # x=3: 6/7 + 1/12 = 0.94 > 2/3
    assert fetch_order(f, get_ordering("preference", x=3.0).score(f)) == [0, 1]
    # a smaller in-link scale makes two in-links count more: 2/3 + 1/12 > 2/3
    assert fetch_order(f, get_ordering("preference", ib_scale=1.0).score(f)) == [0, 1]
    assert get_ordering("preference", x=2.0, y=0.5).score(f) == pytest.approx(
        [2.0 * 2 / 7 + 0.5 / 12, 0.5 * 2 / 3])


def test_larger_sites_first_prefers_the_host_with_more_pending_pages_even_deeper_ones():
    hosts = ["small.org"] * 2 + ["big.com"] * 4
    f = pa.table({"fp": pa.array([1, 2, 3, 4, 5, 6], pa.int64()), "host": hosts,
                  "depth": pa.array([0, 1, 5, 6, 7, 8], pa.int32())})
    o = get_ordering("larger_sites_first")
    assert fetch_order(f, o.score(f)) == [2, 3, 4, 5, 0, 1]
    # with a host cap of 2 per round, the big host still comes first
    assert fetch_order(f, o.score(f), max_per_host=2) == [2, 3, 0, 1]
    # a sharded frontier passes the hosts' global pending counts
    sharded = f.append_column("host_pending", pa.array([9, 9, 4, 4, 4, 4]))
    assert fetch_order(sharded, o.score(sharded)) == [0, 1, 2, 3, 4, 5]


def test_partial_pagerank_scores_are_networkx_pagerank_of_the_known_graph(frontier):
    # downloaded: 101, 103, 105; pending: 100, 102, 104 (dangling: out-links unknown)
    src = [101, 101, 101, 103, 103, 105, 105]
    dst = [103, 105, 102, 105, 100, 101, 104]
    g = CrawlGraph.from_edges(src, dst, downloaded_fp=[101, 103, 105], pending_fp=[100, 102, 104])
    G = nx.DiGraph()
    G.add_nodes_from([100, 101, 102, 103, 104, 105])
    G.add_edges_from(zip(src, dst))
    ref = nx.pagerank(G, alpha=0.85, tol=1e-14, max_iter=10_000)
    o = get_ordering("partial_pagerank", tol=1e-13)
    s = o.score(frontier, g)
    fps = frontier.column("fp").to_pylist()
    assert s == pytest.approx([ref[fp] for fp in fps], rel=1e-8)
    by_nx = sorted(range(len(fps)), key=lambda i: (-ref[fps[i]], fps[i]))
    assert fetch_order(frontier, s) == by_nx
    # a URL the graph does not know scores 0; without a graph it is an error
    extra = frontier.slice(0, 1).set_column(0, "fp", pa.array([999], pa.int64()))
    assert o.score(extra, g).tolist() == [0.0]
    with pytest.raises(ValueError):
        o.score(frontier)


def test_random_order_is_fixed_per_seed_and_unrelated_to_the_fingerprint():
    fps = np.arange(1, 20001, dtype=np.int64)
    f = pa.table({"fp": fps})
    a = get_ordering("random", seed=1).score(f)
    assert np.array_equal(a, get_ordering("random", seed=1).score(f))
    b = get_ordering("random", seed=2).score(f)
    assert np.mean(a == b) < 0.001
    assert ((a >= 0) & (a < 1)).all()
    assert abs(a.mean() - 0.5) < 0.01 and np.histogram(a, bins=10, range=(0, 1))[0].min() > 1800
    rank = np.argsort(np.argsort(a))
    assert abs(np.corrcoef(rank, fps)[0, 1]) < 0.03          # not the fingerprint order


def test_omniscient_reads_the_truth(frontier):
    o = get_ordering("omniscient", truth_fp=[105, 101, 77], truth_rank=[0.9, 0.1, 0.5])
    assert o.score(frontier).tolist() == [0.1, 0, 0, 0, 0.9, 0]
