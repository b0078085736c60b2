"""The crawl-order evaluator (pipelines.evaluate) on small graphs."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import evaluate as ev
from strategies.hostgraph import host_graph
from tests.simweb import model as simweb_model


@pytest.fixture(scope="module")
def small():
    return ev.generated_graph(3000, seed=3)


def test_generated_graph_is_host_structured_and_reachable():
    g = host_graph(20_000, seed=5)
    sizes = np.sort(np.bincount(g.hosts))[::-1]
    assert sizes[0] > 10 * np.median(sizes)                   # Zipf: a few big hosts
    assert (g.hosts[g.src] == g.hosts[g.dst]).mean() > 0.75   # mostly intra-host links
    indeg = np.bincount(g.dst, minlength=g.num_nodes)
    assert indeg.max() > 50 * np.median(indeg)                # heavy-tailed in-degree
    assert host_graph(20_000, seed=5).urls == g.urls          # fixed seed, same graph


@pytest.mark.parametrize("name", ev.DEFAULT_STRATEGIES)
def test_every_page_is_fetched_once_within_host_slots(small, name):
    r = ev.simulate(small, name, batch_size=60, per_host_cap=3)
    assert len(r.order) == small.n == len(np.unique(r.order))   # all reachable, no refetch
    sizes = r.info["batch_sizes"]
    assert sum(sizes) == small.n and max(sizes) <= 60
    start = 0
    for k in sizes:
        hosts = small.host_id[r.order[start:start + k]]
        assert np.bincount(hosts).max() <= 3                    # politeness: 3 slots per host
        start += k


def test_seeds_are_fetched_first_and_only_discovered_pages_later(small):
    r = ev.simulate(small, "bfs", batch_size=len(small.seeds), per_host_cap=100)
    assert set(r.order[:len(small.seeds)]) == set(small.seeds)


def test_omniscient_is_the_upper_envelope(small):
    s, curves = ev.evaluate(small, log=None, batch_size=60, per_host_cap=3)
    auc = dict(zip(s.column("strategy").to_pylist(), s.column("auc50").to_pylist()))
    assert max(auc, key=auc.get) == "omniscient"
    for name in auc:
        c = np.array(curves.filter(pa.compute.equal(curves.column("strategy"), name))
                     .column("pr_share").to_pylist())
        assert len(c) == 101 and c[0] == 0 and abs(c[-1] - 1) < 1e-9
        assert (np.diff(c) >= -1e-12).all()


def test_auc_of_the_diagonal_is_a_quarter():
    n = 1000
    cum = np.arange(n + 1) / n
    assert ev.auc_to(cum, n) == pytest.approx(0.25, abs=1e-3)


def test_partial_pagerank_is_recomputed_every_k_pages(small):
    r = ev.simulate(small, "partial_pagerank", batch_size=50, per_host_cap=5,
                    pagerank_every=200)
    assert r.info["pagerank_runs"] == pytest.approx(small.n / 200, abs=2)


def test_opic_passes_conserve_cash_and_converge(small):
    for sched in ("greedy", "greedy_once", "random"):
        errs, drift = ev.opic_passes(small, passes=5, schedule=sched, batch_size=100)
        assert drift < 1e-9
        assert all(b < a for a, b in zip(errs, errs[1:]))


def _write_dir(tmp_path, g):
    urls = g.urls
    pq.write_table(pa.table({"url": urls, "host": g.host_of(),
                             "depth": pa.array(np.where(np.isin(np.arange(g.num_nodes),
                                                                g.seeds), 0, 1), pa.int32())}),
                   tmp_path / "pages.parquet")
    pq.write_table(pa.table({"src": [urls[i] for i in g.src], "dst": [urls[i] for i in g.dst],
                             "anchor": [""] * len(g.src)}), tmp_path / "links.parquet")


def test_cli_on_a_pages_and_links_directory_writes_curves(tmp_path):
    hg = host_graph(1500, seed=2)
    _write_dir(tmp_path, hg)
    out = tmp_path / "out"
    res = ev.main(["--graph", str(tmp_path), "--strategies", "bfs,opic,omniscient,random",
                   "--batch_size", "50", "--per_host_cap", "5", "--out", str(out),
                   "--opic_passes", "2"])
    curves = pq.read_table(out / "curves.parquet")
    summary = pq.read_table(out / "summary.parquet")
    assert curves.num_rows == 4 * 101
    assert summary.column("strategy").to_pylist() == ["bfs", "opic", "omniscient", "random"]
    assert len(res["opic_passes"]["greedy"]) == 2
    g = ev.load_graph(tmp_path / "pages.parquet", tmp_path / "links.parquet")
    assert sorted(g.urls.take(pa.array(g.seeds)).to_pylist()) == sorted(hg.urls[i] for i in hg.seeds)
    ref = ev.build_graph(hg.src, hg.dst, hg.num_nodes)
    pos = pa.compute.index_in(pa.array(hg.urls), value_set=g.urls).to_numpy()
    assert np.abs(g.truth[pos] - ref.truth).sum() < 1e-9


def test_integer_edge_list(tmp_path):
    pq.write_table(pa.table({"src": [10, 10, 20, 30], "dst": [20, 30, 30, 10]}),
                   tmp_path / "e.parquet")
    g = ev.load_graph(edges=tmp_path / "e.parquet")
    assert g.n == 3 and len(g.src) == 4
    r = ev.simulate(g, "backlinks", batch_size=1)
    assert sorted(r.order.tolist()) == [0, 1, 2]


def test_simulated_web_ground_truth_is_read_as_exported(tmp_path):
    simweb_model.build_web("small", seed=1).export(tmp_path)
    g = ev.load_graph(tmp_path / "pages.parquet", tmp_path / "links.parquet",
                      seeds=tmp_path / "seeds.parquet")
    truth = pq.read_table(tmp_path / "pagerank.parquet")
    pos = pa.compute.index_in(truth.column("url"), value_set=g.urls).to_numpy()
    assert np.abs(g.truth[pos] - truth.column("pagerank").to_numpy()).sum() < 1e-9
    assert len(g.seeds) == pq.read_table(tmp_path / "seeds.parquet").num_rows
    r = ev.simulate(g, "opic", batch_size=20, per_host_cap=2)
    assert g.fetchable[r.order].all()
