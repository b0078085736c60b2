"""The offline replay of focused crawls (pipelines/evalfocused.py) on a hand-made graph."""
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines import evalfocused
from strategies.topic import Topic


def _graph(tmp_path):
    """A seed about football links to 8 cooking pages (each to one more) and to one football
    page (anchor 'football news') that links to 5 more football pages."""
    pages, links = [], []

    def page(name, topic, title):
        pages.append({"url": f"http://h.test/{name}", "host": "h.test", "title": title, "topic": topic})

    page("s", "sports", "football home")
    page("r0", "sports", "football news")
    links.append(("s", "r0", "football news"))
    for k in range(8):
        page(f"c{k}", "cooking", "pasta recipe")
        page(f"d{k}", "cooking", "garlic sauce")
        links += [("s", f"c{k}", "pasta recipe"), (f"c{k}", f"d{k}", "garlic sauce")]
    for k in range(1, 6):
        page(f"r{k}", "sports", "football match goal")
        links.append(("r0", f"r{k}", "football match goal"))
    pq.write_table(pa.Table.from_pylist(pages), tmp_path / "pages.parquet")
    pq.write_table(pa.table({"src": [f"http://h.test/{a}" for a, _, _ in links],
                             "dst": [f"http://h.test/{b}" for _, b, _ in links],
                             "anchor": [t for _, _, t in links]}), tmp_path / "links.parquet")
    pq.write_table(pa.table({"url": ["http://h.test/s"]}), tmp_path / "seeds.parquet")
    return evalfocused.topic_graph(str(tmp_path))


def test_shark_search_harvests_more_than_bfs_offline(tmp_path):
    g, texts, anchors, labels = _graph(tmp_path)
    assert g.n == 23 and anchors
    topic = Topic.from_texts(["football", "goal"])
    rates = {}
    for s in ("bfs", "best_first", "shark_search", "fish_search"):
        order, rel = evalfocused.replay(g, texts, anchors, topic, s, max_pages=8, batch_size=2)
        assert len(order) == 8 and len(set(order.tolist())) == 8
        (_, rate, label), = evalfocused.harvest_curve(order, rel, 0.2, labels, "sports", every=8)
        rates[s] = (rate, label)
    # shark: seed, then r0 (its anchor), then r0's football children first
    assert rates["shark_search"][1] == 7 / 8
    assert rates["shark_search"][0] > rates["bfs"][0]
    assert rates["bfs"][1] <= 4 / 8


def test_the_depth_bound_stops_irrelevant_chains_in_vertical_mode(tmp_path):
    g, texts, anchors, _ = _graph(tmp_path)
    topic = Topic.from_texts(["football", "goal"])
    order, _ = evalfocused.replay(g, texts, anchors, topic, "fish_search", max_pages=100,
                                  batch_size=4, depth_bound=0)
    fetched = {g.urls[int(v)].as_py().rsplit("/", 1)[1] for v in order}
    assert not any(name.startswith("d") for name in fetched)   # below an irrelevant c page
    order, _ = evalfocused.replay(g, texts, anchors, topic, "fish_search", max_pages=100,
                                  batch_size=4, depth_bound=0, vertical=False)
    assert len(order) == g.n
