"""candidates_and_edges: a batch of link bundles -> CANDIDATES and LINKS tables, checked row by
row against the bundles (each field as the page step sets it, or missing, or falsy)."""
import pyarrow as pa

from schemas import tables
from transforms.urls import canonical as urls_mod
from transforms.urls import request
from transforms.urlseen.candidates import candidates_and_edges

BUNDLES = [
    {"src": "http://a.test/", "src_fp": 11, "depth": 2, "dst": ["http://a.test/1", "HTTP://B.test:80/2"],
     "anchor": ["one", "two"], "source": tables.SOURCE_LINK},
    {"src": "", "src_fp": 0, "depth": None, "dst": ["http://c.test/x"], "source": "sitemap",
     "lastmod": [1700000000.5]},
    {"src": "http://d.test/", "src_fp": 12, "dst": [], "anchor": []},               # a page without links
    {"src": "http://e.test/", "src_fp": 13, "depth": 1, "redirects": 3, "dst": ["http://e.test/moved"],
     "source": tables.SOURCE_REDIRECT},
    {"src": "http://f.test/", "src_fp": 14, "depth": 4, "dst": ["http://f.test/a", "http://f.test/b"],
     "anchor": None, "topic_score": [0.5, None], "topic_inherited": 0.0, "depth_left": 0},
    {"src": "http://g.test/form", "src_fp": 15, "depth": 1, "dst": ["http://g.test/search"], "method": "POST",
     "request_body": ["q=1"], "source": "form"},
]


def _expected_rows(bundles, round_no):
    """The tables' rows, built one link at a time (the definition the columnar code keeps)."""
    cand, edges = [], []
    for b in bundles:
        n = len(b["dst"])
        for i, url in enumerate(b["dst"]):
            body = (b.get("request_body") or [None] * n)[i]
            fp = (request.request_fingerprints([url], [b["method"]], [body])[0] if b.get("method")
                  else urls_mod.fingerprint(url))
            row = {"dst_fp": int(fp), "dst": url, "host": urls_mod.host_key(url), "depth": b.get("depth") or 0,
                   "src_fp": b.get("src_fp") or 0, "src": b.get("src"), "anchor": (b.get("anchor") or [""] * n)[i],
                   "source": b.get("source") or tables.SOURCE_LINK, "redirects": b.get("redirects") or 0,
                   "lastmod": (b.get("lastmod") or [None] * n)[i],
                   "topic_score": (b.get("topic_score") or [None] * n)[i],
                   "topic_inherited": b.get("topic_inherited"), "depth_left": b.get("depth_left"),
                   "method": b.get("method"), "request_body": body}
            cand.append(row)
            if row["source"] in (tables.SOURCE_LINK, tables.SOURCE_REDIRECT) and row["src_fp"] != 0:
                edges.append({"src_fp": row["src_fp"], "dst_fp": row["dst_fp"], "src": row["src"], "dst": url,
                              "anchor": row["anchor"], "round": round_no})
    return cand, edges


def test_each_link_row_carries_its_bundles_values():
    cand, edges = candidates_and_edges(BUNDLES, 7)
    assert cand.schema.equals(tables.CANDIDATES) and edges.schema.equals(tables.LINKS)
    want_cand, want_edges = _expected_rows(BUNDLES, 7)
    assert cand.column_names == list(want_cand[0])   # the reference names every column
    assert cand.to_pylist() == want_cand
    assert edges.column_names == list(want_edges[0])
    assert edges.to_pylist() == want_edges
    assert cand.column("host").to_pylist()[1] == "b.test"   # a non-canonical link's host is normalized


def test_no_links_gives_empty_tables_of_the_schemas():
    cand, edges = candidates_and_edges([{"src": "http://a.test/", "src_fp": 1, "dst": []}], 1)
    assert cand.num_rows == edges.num_rows == 0
    assert cand.schema.equals(tables.CANDIDATES) and edges.schema.equals(tables.LINKS)
    assert candidates_and_edges([], 1)[0].num_rows == 0


def test_a_batch_equals_its_bundles_one_at_a_time():
    whole, whole_edges = candidates_and_edges(BUNDLES, 2)
    parts = [candidates_and_edges([b], 2) for b in BUNDLES]
    assert whole.equals(pa.concat_tables([c for c, _ in parts]))
    assert whole_edges.equals(pa.concat_tables([e for _, e in parts]))
