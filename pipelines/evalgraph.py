"""The known graphs the evaluator replays crawls over: generated, a simulated web's export,
or any pages/links/edges Parquet files, with their seeds and true PageRank (plain Python)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from strategies.graph import dedupe_edges, pagerank, splitmix64_ids
from transforms.urls.canonical import fingerprints


@dataclass
class EvalGraph:
    n: int
    src: np.ndarray            # int64, deduplicated, sorted by src (CSR order)
    dst: np.ndarray
    indptr: np.ndarray         # out-edges of v: src/dst[indptr[v]:indptr[v+1]]
    urls: pa.Array
    hosts: pa.Array            # host string per node
    host_id: np.ndarray        # dense int per node
    seeds: np.ndarray
    fps: np.ndarray = None     # int64 per node (node id unless given)
    truth: np.ndarray = None   # true PageRank
    fetchable: np.ndarray = None  # bool per node (False: e.g. disallowed by robots.txt)

    def __post_init__(self):
        if self.fps is None:
            # hashed like real URL fingerprints, so fp tie-breaks are uncorrelated with
            # node numbering (generated graphs number home pages first)
            self.fps = splitmix64_ids(self.n)
        if self.fetchable is None:
            self.fetchable = np.ones(self.n, bool)


def build_graph(src, dst, n, urls=None, hosts=None, seeds=None, tol=1e-12) -> EvalGraph:
    s, d = dedupe_edges(src, dst, n)
    order = np.lexsort((d, s))
    s, d = s[order], d[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(s, minlength=n))])
    if urls is None:
        urls = [f"node:{i}" for i in range(n)]
    urls = pa.array(urls, type=pa.string())
    if hosts is None:
        hosts = pa.array(["h"] * n)
    hosts = pa.array(hosts, type=pa.string()) if not isinstance(hosts, pa.Array) else hosts
    host_id = np.asarray(hosts.dictionary_encode().indices.to_numpy(zero_copy_only=False),
                         dtype=np.int64)
    seeds = np.asarray([0] if seeds is None or len(seeds) == 0 else seeds, dtype=np.int64)
    truth = pagerank(s, d, n, tol=tol, dedupe=False)
    return EvalGraph(n, s, d, indptr, urls, hosts, host_id, seeds, truth=truth)


def generated_graph(n_pages, seed=0, **kw) -> EvalGraph:
    from strategies.hostgraph import host_graph
    g = host_graph(n_pages, seed=seed, **kw)
    return build_graph(g.src, g.dst, g.num_nodes, urls=g.urls, hosts=g.host_of(), seeds=g.seeds)


def _host_of_url(urls: pa.Array) -> pa.Array:
    rest = pc.replace_substring_regex(pc.utf8_lower(urls), r"^[a-z][a-z0-9+.-]*://", "")
    return pc.replace_substring_regex(rest, r"[/?#].*$", "")


def load_graph(pages=None, links=None, edges=None, seed_urls=None, seeds=None) -> EvalGraph:
    """Pages + links Parquet (url strings), or an edge list (src, dst: ints or strings).
    seeds: optional Parquet with a `url` column (the simulated web's seeds.parquet)."""
    if edges is not None:
        t = pq.read_table(edges)
        sc, dc = _edge_cols(t)
        s, d = t.column(sc), t.column(dc)
        if pa.types.is_integer(s.type):
            s = s.to_numpy().astype(np.int64)
            d = d.to_numpy().astype(np.int64)
            ids, inv = np.unique(np.concatenate([s, d]), return_inverse=True)
            n = len(ids)
            g = build_graph(inv[:len(s)], inv[len(s):], n, urls=[str(i) for i in ids],
                            seeds=_seed_ids(None, n, ids.astype(str), seed_urls))
            g.fps = ids
            return g
        urls = pa.chunked_array([s, d]).combine_chunks().unique()
        return _from_url_edges(urls, s, d, None, seed_urls)
    pt = pq.read_table(pages)
    lt = pq.read_table(links)
    sc, dc = _edge_cols(lt)
    if "nofollow" in lt.column_names:           # the crawler does not follow rel=nofollow
        lt = lt.filter(pc.invert(pc.fill_null(lt.column("nofollow"), False)))
    if "redirect_to" in pt.column_names:        # a redirect is an edge to its target
        r = pt.filter(pc.is_valid(pt.column("redirect_to")))
        lt = pa.table({sc: pa.chunked_array([lt.column(sc).cast(pa.string()),
                                             r.column("url").cast(pa.string())]),
                       dc: pa.chunked_array([lt.column(dc).cast(pa.string()),
                                             r.column("redirect_to").cast(pa.string())])})
    seed_tab = pq.read_table(seeds, columns=["url"]).column("url") if seeds else None
    return _from_url_edges(pt.column("url").combine_chunks(), lt.column(sc), lt.column(dc),
                           pt, seed_urls, seed_tab)


def _edge_cols(t):
    for sc, dc in (("src", "dst"), ("src_url", "dst_url"), ("source", "target"),
                   ("src_fp", "dst_fp")):
        if sc in t.column_names and dc in t.column_names:
            return sc, dc
    raise ValueError(f"no (src, dst) columns in {t.column_names}")


def _from_url_edges(urls, s, d, pages_table, seed_urls, seed_tab=None):
    urls = pa.chunked_array([urls, pa.chunked_array([s]).combine_chunks(),
                             pa.chunked_array([d]).combine_chunks()]).combine_chunks().unique()
    n = len(urls)
    si = pc.index_in(s, value_set=urls).to_numpy(zero_copy_only=False).astype(np.int64)
    di = pc.index_in(d, value_set=urls).to_numpy(zero_copy_only=False).astype(np.int64)
    hosts = None
    seed_mask_urls = seed_tab
    fetchable = None
    if pages_table is not None:
        if "robots_allowed" in pages_table.column_names:
            idx = pc.index_in(pages_table.column("url"), value_set=urls).to_numpy(
                zero_copy_only=False)
            ok = pc.fill_null(pages_table.column("robots_allowed"), True).to_numpy(
                zero_copy_only=False)
            fetchable = np.ones(n, bool)
            fetchable[idx[~ok].astype(np.int64)] = False
        if "host" in pages_table.column_names:
            idx = pc.index_in(pages_table.column("url"), value_set=urls)
            hosts_arr = _host_of_url(urls).to_pylist()
            for i, h in zip(idx.to_pylist(), pages_table.column("host").to_pylist()):
                if i is not None and h:
                    hosts_arr[i] = h
            hosts = hosts_arr
        for col in ("seed", "is_seed"):
            if seed_mask_urls is not None:
                break
            if col in pages_table.column_names:
                mask = pc.fill_null(pages_table.column(col), False)
                seed_mask_urls = pages_table.filter(mask).column("url")
                break
        else:
            if seed_mask_urls is None and "depth" in pages_table.column_names:
                mask = pc.equal(pages_table.column("depth"), 0)
                seed_mask_urls = pages_table.filter(pc.fill_null(mask, False)).column("url")
    if hosts is None:
        hosts = _host_of_url(urls)
    seeds = None
    if seed_mask_urls is not None and len(seed_mask_urls):
        seeds = pc.index_in(seed_mask_urls, value_set=urls).drop_null().to_numpy()
    seeds = _seed_ids(seeds, n, urls.to_pylist() if seed_urls else None, seed_urls)
    g = build_graph(si, di, n, urls=urls, hosts=hosts, seeds=seeds)
    # the crawler's own URL fingerprints, so generate breaks score ties as a round does
    g.fps = fingerprints(urls)
    if fetchable is not None:
        g.fetchable = fetchable
    return g


def _seed_ids(seeds, n, names, seed_urls):
    if seed_urls:
        wanted = [l.strip() for l in open(seed_urls) if l.strip()]
        pos = {u: i for i, u in enumerate(names)}
        return np.array([pos[u] for u in wanted if u in pos], dtype=np.int64)
    return seeds


# --------------------------------------------------------------------------- the replay
