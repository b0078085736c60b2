"""In-memory PageRank (strategies.graph) against networkx, and its helpers."""
import networkx as nx
import numpy as np
import pytest

from strategies.graph import CrawlGraph, l1, pagerank, temporary_scores


def _nx_ranks(G, n):
    ref = nx.pagerank(G, alpha=0.85, tol=1e-15, max_iter=10_000)
    return np.array([ref[i] for i in range(n)])


def _edges(G):
    e = np.array(list(G.edges()), dtype=np.int64).reshape(-1, 2)
    return e[:, 0], e[:, 1]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_networkx_on_random_graphs(seed):
    G = nx.gnp_random_graph(600, 0.008, seed=seed, directed=True)   # has dangling nodes
    s, d = _edges(G)
    x = pagerank(s, d, 600, tol=1e-13)
    assert l1(x, _nx_ranks(G, 600)) < 1e-8
    assert abs(x.sum() - 1.0) < 1e-12


@pytest.mark.parametrize("seed", [4, 5])
def test_matches_networkx_on_power_law_graphs_with_duplicate_edges(seed):
    M = nx.scale_free_graph(3000, seed=seed)           # multigraph: repeated edges, loops
    s, d = _edges(M)
    assert len(s) > nx.DiGraph(M).number_of_edges()    # duplicates really present
    x = pagerank(s, d, 3000, tol=1e-13)
    assert l1(x, _nx_ranks(nx.DiGraph(M), 3000)) < 1e-8


def test_all_dangling_graph_is_uniform():
    x = pagerank(np.array([], np.int64), np.array([], np.int64), 5)
    assert np.allclose(x, 0.2)


def test_warm_start_converges_to_the_same_ranks_in_fewer_steps():
    G = nx.gnp_random_graph(400, 0.01, seed=9, directed=True)
    s, d = _edges(G)
    x, info = pagerank(s, d, 400, tol=1e-12, return_info=True)
    y, info2 = pagerank(s, d, 400, tol=1e-12, x0=x * 1.0001, return_info=True)
    assert l1(x, y) < 1e-10 and info2["iterations"] < info["iterations"]


def test_fixed_iterations_with_zero_tolerance():
    s, d = np.array([0, 1, 2]), np.array([1, 2, 0])
    _, info = pagerank(s, d, 4, tol=0.0, max_iter=7, return_info=True)
    assert info["iterations"] == 7


def test_endpoint_out_of_range_is_rejected():
    with pytest.raises(ValueError):
        pagerank(np.array([0]), np.array([5]), 3)


def test_temporary_score_matches_one_unnormalised_propagation_step_of_networkx_graph():
    # Cho et al.: a page found since the last PageRank gets Σ PR(q)/outdeg(q) over its
    # known linkers q; on a random graph, against a loop over networkx's predecessors
    G = nx.gnp_random_graph(80, 0.06, seed=4, directed=True)
    s, d = _edges(G)
    pr = np.random.default_rng(0).random(80)
    t = temporary_scores(pr, s, d, 80)
    ref = [sum(pr[q] / G.out_degree(q) for q in G.predecessors(v)) for v in range(80)]
    assert t == pytest.approx(ref, rel=1e-12)


def test_temporary_score_is_sum_of_linker_rank_over_outdegree():
    # 0 -> 1, 0 -> 2, 3 -> 2 ; node 2 is new: PR(0)/2 + PR(3)/1
    pr = np.array([0.4, 0.1, 0.0, 0.2])
    t = temporary_scores(pr, np.array([0, 0, 3]), np.array([1, 2, 2]), 4)
    assert t[2] == pytest.approx(0.4 / 2 + 0.2)
    assert t[1] == pytest.approx(0.2) and t[0] == 0.0


def test_crawl_graph_from_fingerprints_maps_ids_back():
    g = CrawlGraph.from_edges([10, 10, 30], [20, 30, 40], downloaded_fp=[10, 30],
                              pending_fp=[20, 40, 50])
    assert g.num_nodes == 5
    assert g.downloaded.tolist() == [True, False, True, False, False]
    assert g.node_ids([40, 99, 10]).tolist() == [3, -1, 0]
    assert g.urls_fp[g.src].tolist() == [10, 10, 30]
    # ranks by node id are networkx's ranks of the fingerprint graph (50: isolated pending)
    G = nx.DiGraph()
    G.add_nodes_from([10, 20, 30, 40, 50])
    G.add_edges_from([(10, 20), (10, 30), (30, 40)])
    ref = nx.pagerank(G, alpha=0.85, tol=1e-15, max_iter=10_000)
    pr = g.pagerank(tol=1e-14)
    assert pr[g.node_ids([10, 20, 30, 40, 50])] == pytest.approx([ref[f] for f in (10, 20, 30, 40, 50)], rel=1e-9)


def test_scipy_backend_gives_the_same_ranks():
    G = nx.gnp_random_graph(300, 0.02, seed=11, directed=True)
    s, d = _edges(G)
    a = pagerank(s, d, 300, tol=1e-13)
    b = pagerank(s, d, 300, tol=1e-13, backend="scipy")
    assert l1(a, b) < 1e-12
    with pytest.raises(ValueError):
        pagerank(s, d, 300, backend="cuda")
