"""Ground truth of a simulated web as Arrow tables (and Parquet export).

URL canonical form everywhere: ``http://HOST[:PORT]PATH[?QUERY]`` with HOST lower-case,
the port omitted when 80 (or when the web has no port yet), dot segments resolved,
percent-encoding of unreserved characters decoded, no fragment, and the query exactly in the
order the link writes it. Pages whose URL has a query (``/shop/item.php?cat=C&id=N``) are
canonically in sorted parameter order; links that write the parameters in another order
produce a separate URL that serves the same page (a ``query_order`` duplicate row in
``pages``).
"""
from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import templatehost, words
from .model import (CONTENT_TYPES, ENCODING_NAMES, HTML, KIND_NAMES, REDIRECT, TAG_NAMES,
                    TRUTH_UA)

TABLES = ("pages", "links", "pagerank", "records", "seeds", "reachable", "hosts")


def _robots_checkers(web):
    from protego import Protego
    out = {}
    for h in web.hosts:
        status, text = web.effective_robots(h)
        if status >= 500:
            out[h.idx] = (False, None)
        elif status >= 400:
            out[h.idx] = (True, None)
        else:
            out[h.idx] = (True, Protego.parse(text))
    return out


def ground_truth(web) -> dict:
    rob = _robots_checkers(web)

    def allowed(hidx, url):
        ok, p = rob[hidx]
        if p is None:
            return ok
        return p.can_fetch(url, TRUTH_UA)

    cols = {k: [] for k in ("url", "host", "topic", "topic_id", "change_rate", "is_duplicate_of",
                            "dup_kind", "robots_allowed", "content_type", "kind", "status",
                            "redirect_to", "depth", "encoding", "title")}
    url_set = {}

    def add_page(url, h, i, dup_of=None, dup_kind=None, status=200, redirect_to=None):
        if url in url_set:
            return
        url_set[url] = len(cols["url"])
        k = int(web.kind[i]) if i >= 0 else HTML
        cols["url"].append(url)
        cols["host"].append(h.name)
        cols["topic"].append(words.topic_name(int(web.topic[i])) if i >= 0 else None)
        cols["topic_id"].append(int(web.topic[i]) if i >= 0 else -1)
        cols["change_rate"].append(float(web.change_rate[i]) if i >= 0 else 0.0)
        cols["is_duplicate_of"].append(dup_of)
        cols["dup_kind"].append(dup_kind)
        cols["robots_allowed"].append(bool(allowed(h.idx, url)))
        cols["content_type"].append(CONTENT_TYPES[k])
        cols["kind"].append(KIND_NAMES[k])
        cols["status"].append(status)
        cols["redirect_to"].append(redirect_to)
        cols["depth"].append(int(web.depth[i]) if i >= 0 else 0)
        cols["encoding"].append(ENCODING_NAMES[web.encoding[i]] if i >= 0 and k == HTML else None)
        cols["title"].append(web.titles[i] if i >= 0 else None)

    links = {}   # (src, dst) -> [anchor, tag, nofollow_all]

    by_src = {}

    def add_link(s, d, anchor, tag, nof):
        cur = links.get((s, d))
        by_src.setdefault(s, []).append((d, anchor, tag, nof))
        if cur is None:
            links[(s, d)] = [anchor, tag, nof]
        elif not nof:
            cur[2] = False

    servings = [(h, h) for h in web.hosts[:web.n_graph_hosts]] + \
               [(m, web.hosts[m.mirror_of]) for m in web.mirrors]
    variants = []  # (url, serving host, page)
    for serving, owner in servings:
        mirror = serving is not owner
        for i in range(owner.start, owner.end):
            url = web.url(i, serving)
            orig = web.url(i)
            if web.kind[i] == REDIRECT:
                add_page(url, serving, i, dup_of=orig if mirror else None,
                         dup_kind="mirror" if mirror else None, status=301,
                         redirect_to=web.url(int(web.redirect_to[i]), serving))
            elif web.dup_of[i] >= 0 and mirror:   # a mirror's copy of a near copy: its exact copy
                add_page(url, serving, i, dup_of=orig, dup_kind="mirror")
            elif web.dup_of[i] >= 0:
                add_page(url, serving, i, dup_of=web.url(int(web.dup_of[i])), dup_kind="near")
            else:
                add_page(url, serving, i, dup_of=orig if mirror else None,
                         dup_kind="mirror" if mirror else None)
            if web.kind[i] != HTML:
                continue
            o = int(web.dup_of[i]) if web.dup_of[i] >= 0 else i
            if not web.frameset[o]:
                add_link(url, url, "Top", "a", False)   # the footer's <a href="#top">
            for e in web.outlinks(o):
                d = int(web.e_dst[e])
                dh = web.hosts[web.page_host[d]]
                dhost = serving if dh.idx == owner.idx else dh
                path = web.paths[d]
                if web.e_qrev[e] and "?" in path:
                    a, q = path.split("?", 1)
                    path = a + "?" + "&".join(reversed(q.split("&")))
                    variants.append((web.base_url(dhost.name) + path, dhost, d))
                dst = web.base_url(dhost.name) + path
                t = int(web.e_tag[e])
                add_link(url, dst, "" if t == 4 else web.titles[d], TAG_NAMES[t], bool(web.e_nof[e]))
            if i == owner.start and serving.idx == 0:
                for sh, p, anchor in web.special_links:
                    add_link(url, web.base_url(sh.name) + p, anchor, "a", False)
    for url, h, d in variants:
        canon = web.url(d, h)
        if url in url_set:
            continue
        add_page(url, h, d, dup_of=canon, dup_kind="query_order")
        for dst, anchor, tag, nof in list(by_src.get(canon, ())):
            self_top = dst == canon and anchor == "Top" and not web.base_href[d]
            add_link(url, url if self_top else dst, anchor, tag, nof)
    if web.jobs:
        jr, ja = web.base_url(web.jobs.name) + "/", web.base_url(web.jobs.name) + "/about"
        add_page(jr, web.jobs, -1)
        add_page(ja, web.jobs, -1)
        cols["title"][url_set[jr]] = "Job search"
        cols["title"][url_set[ja]] = "About job search"
        add_link(jr, ja, "About this site", "a", False)
        add_link(ja, jr, "Search", "a", False)
    if web.template_host:
        for url, title, nav in templatehost.truth(web):
            add_page(url, web.template_host, -1)
            cols["title"][url_set[url]] = title
            for dst, anchor in nav:
                add_link(url, dst, anchor, "a", False)
    similar_pairs = None
    if web.draft_host:
        from . import drafthost
        drafts, similar_pairs = drafthost.truth(web)
        for url, title, outlinks in drafts:
            add_page(url, web.draft_host, -1)
            cols["title"][url_set[url]] = title
            for dst, anchor in outlinks:
                add_link(url, dst, anchor, "a", False)
    if web.documents_host:
        from . import documents
        for url, title, outlinks in documents.truth(web):
            add_page(url, web.documents_host, -1)
            cols["title"][url_set[url]] = title
            for dst, anchor in outlinks:
                add_link(url, dst, anchor, "a", False)

    library_records = None
    if web.library:
        from . import library
        library_records = library.catalogue(web).table
        for url, title, outlinks in library.truth(web):
            add_page(url, web.library, -1)
            cols["title"][url_set[url]] = title
            for dst, anchor in outlinks:
                add_link(url, dst, anchor, "a", False)

    for sh in web.scripted_hosts:
        from . import scripted
        for url, title, outlinks in scripted.truth(web, sh):
            add_page(url, sh, -1)
            cols["title"][url_set[url]] = title
            for dst, anchor in outlinks:
                add_link(url, dst, anchor, "a", False)

    pages = pa.table({
        "url": pa.array(cols["url"], pa.string()),
        "host": pa.array(cols["host"], pa.string()),
        "topic": pa.array(cols["topic"], pa.string()),
        "topic_id": pa.array(cols["topic_id"], pa.int32()),
        "change_rate": pa.array(cols["change_rate"], pa.float64()),
        "is_duplicate_of": pa.array(cols["is_duplicate_of"], pa.string()),
        "dup_kind": pa.array(cols["dup_kind"], pa.string()),
        "robots_allowed": pa.array(cols["robots_allowed"], pa.bool_()),
        "content_type": pa.array(cols["content_type"], pa.string()),
        "kind": pa.array(cols["kind"], pa.string()),
        "status": pa.array(cols["status"], pa.int32()),
        "redirect_to": pa.array(cols["redirect_to"], pa.string()),
        "depth": pa.array(cols["depth"], pa.int32()),
        "encoding": pa.array(cols["encoding"], pa.string()),
        "title": pa.array(cols["title"], pa.string()),
    })
    lk = list(links.items())
    links_t = pa.table({
        "src": pa.array([k[0] for k, _ in lk], pa.string()),
        "dst": pa.array([k[1] for k, _ in lk], pa.string()),
        "anchor": pa.array([v[0] for _, v in lk], pa.string()),
        "tag": pa.array([v[1] for _, v in lk], pa.string()),
        "nofollow": pa.array([v[2] for _, v in lk], pa.bool_()),
    })

    # follow graph: followable links + redirects, between known pages
    n = len(cols["url"])
    fs, fd = [], []
    for (s, d), v in lk:
        if not v[2] and d in url_set:
            fs.append(url_set[s]); fd.append(url_set[d])
    for k, r in enumerate(cols["redirect_to"]):
        if r is not None and r in url_set:
            fs.append(k); fd.append(url_set[r])
    fs = np.array(fs, np.int64); fd = np.array(fd, np.int64)
    pr = pagerank(n, fs, fd)

    # reachable from seeds under robots for *
    allowed_arr = np.array(cols["robots_allowed"], bool)
    order = np.argsort(fs, kind="stable")
    fs_s, fd_s = fs[order], fd[order]
    ptr = np.searchsorted(fs_s, np.arange(n + 1))
    seen = np.zeros(n, bool)
    dq = deque()
    for s in web.seeds:
        k = url_set.get(s)
        if k is not None and allowed_arr[k] and not seen[k]:
            seen[k] = True
            dq.append(k)
    while dq:
        k = dq.popleft()
        for d in fd_s[ptr[k]:ptr[k + 1]]:
            if not seen[d] and allowed_arr[d]:
                seen[d] = True
                dq.append(int(d))
    reachable = [cols["url"][k] for k in np.flatnonzero(seen)]

    hosts = pa.table({
        "host": [h.name for h in web.hosts],
        "addr": [h.addr for h in web.hosts],
        "port": pa.array([web.port or 80] * len(web.hosts), pa.int32()),
        "kind": [h.kind for h in web.hosts],
        "robots_variant": [h.robots for h in web.hosts],
        "robots_status": pa.array([web.effective_robots(h)[0] for h in web.hosts], pa.int32()),
        "robots_txt": [web.effective_robots(h)[1] for h in web.hosts],
        "mirror_of": [web.hosts[h.mirror_of].name if h.mirror_of >= 0 else None for h in web.hosts],
        "forbidden": [h.forbidden for h in web.hosts],
        "gzip": [h.gzip for h in web.hosts],
        "n_pages": pa.array([h.end - h.start for h in web.hosts], pa.int64()),
    })
    out = {
        "pages": pages,
        "links": links_t,
        "pagerank": pa.table({"url": pa.array(cols["url"], pa.string()),
                              "pagerank": pa.array(pr, pa.float64())}),
        "records": web.records.table if web.jobs else pa.table({"id": pa.array([], pa.int64())}),
        "seeds": pa.table({"url": pa.array(web.seeds, pa.string())}),
        "reachable": pa.table({"url": pa.array(reachable, pa.string())}),
        "hosts": hosts,
    }
    if similar_pairs is not None:     # drafts.simweb.test's pairs (similar_pairs > 0): not near-duplicates
        out["similar_pairs"] = pa.table({
            "url": pa.array([p[0] for p in similar_pairs], pa.string()),
            "of_url": pa.array([p[1] for p in similar_pairs], pa.string()),
            "jaccard": pa.array([p[2] for p in similar_pairs], pa.float64())})
    if library_records is not None:   # library.simweb.test's books (config library: true)
        out["library_records"] = library_records
    return out


def pagerank(n: int, src: np.ndarray, dst: np.ndarray, d: float = 0.85,
             tol: float = 1e-12, max_iter: int = 200) -> np.ndarray:
    """PageRank with uniform teleport; dangling pages spread their rank uniformly.
    Parallel edges count once (the graph is deduplicated by (src, dst))."""
    import scipy.sparse as sp
    if n == 0:
        return np.zeros(0)
    if len(src):
        pairs = np.unique(np.stack([src, dst], 1), axis=0)
        src, dst = pairs[:, 0], pairs[:, 1]
    outdeg = np.bincount(src, minlength=n).astype(float)
    w = 1.0 / outdeg[src] if len(src) else np.zeros(0)
    M = sp.csr_matrix((w, (dst, src)), shape=(n, n))
    dangling = outdeg == 0
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        nx = d * (M @ x + x[dangling].sum() / n) + (1 - d) / n
        if np.abs(nx - x).sum() < tol:
            x = nx
            break
        x = nx
    return x / x.sum()


def export(web, out_dir) -> list:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, t in web.ground_truth().items():
        p = out / f"{name}.parquet"
        pq.write_table(t, p)
        paths.append(p)
    (out / "config.json").write_text(json.dumps(
        {"seed": web.seed, "port": web.port, "config": json.loads(web.cfg.to_json())}, indent=1))
    (out / "hostmap.txt").write_text("\n".join(web.hostmap_lines()) + "\n")
    return paths
