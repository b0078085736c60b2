"""Turn batches of per-page link arrays into columnar tables.

Pages travel one element each with their links as arrays; here a batch of pages becomes
one Arrow table of URL-seen candidates and one of link-graph edges, so the per-link work
is columnar (fingerprints, host keys) and Beam sees one element per batch.
"""

import numpy as np
import pyarrow as pa

from schemas import tables
from schemas.tables import CANDIDATES, FILTERED_CANDIDATES
from transforms.urls import canonical as urls_mod
from transforms.urls import request


def candidates_and_edges(bundles, round_no):
    """(CANDIDATES table, LINKS table) for a batch of page link bundles."""
    dst, anchor, src, src_fp, depth, source, redirects, lastmod = [], [], [], [], [], [], [], []
    topic_score, inherited, depth_left = [], [], []   # vertical crawling (page/focus.py)
    method, body = [], []   # deep web: POST submissions (a bundle's `method`, one body per URL)
    for b in bundles:
        n = len(b["dst"])
        dst.extend(b["dst"])
        anchor.extend(b.get("anchor") or [""] * n)
        src.extend([b.get("src")] * n)
        src_fp.append(np.full(n, b.get("src_fp") or 0, dtype=np.int64))
        depth.append(np.full(n, b.get("depth") or 0, dtype=np.int32))
        source.extend([b.get("source") or tables.SOURCE_LINK] * n)
        redirects.append(np.full(n, b.get("redirects") or 0, dtype=np.int32))
        lm = b.get("lastmod")
        lastmod.extend(lm if lm is not None else [None] * n)
        ts = b.get("topic_score")
        topic_score.extend(ts if ts is not None else [None] * n)
        inherited.extend([b.get("topic_inherited")] * n)
        depth_left.extend([b.get("depth_left")] * n)
        method.extend([b.get("method")] * n)
        rb = b.get("request_body")
        body.extend(rb if rb is not None else [None] * n)
    if not dst:
        return CANDIDATES.empty_table(), tables.LINKS.empty_table()
    dst_fp = urls_mod.fingerprints(dst)
    posts = [i for i, m in enumerate(method) if m]
    if posts:   # a POST's fingerprint is its request's: method, URL and body (urls/request.py)
        dst_fp = dst_fp.copy()
        dst_fp[posts] = request.request_fingerprints([dst[i] for i in posts], [method[i] for i in posts],
                                                     [body[i] for i in posts])
    src_fp = np.concatenate(src_fp)
    hosts = [urls_mod.host_key(u) for u in dst]
    cand = pa.Table.from_arrays([
        pa.array(dst_fp, pa.int64()), pa.array(dst, pa.string()), pa.array(hosts, pa.string()),
        pa.array(np.concatenate(depth), pa.int32()), pa.array(src_fp, pa.int64()),
        pa.array(src, pa.string()), pa.array(anchor, pa.string()), pa.array(source, pa.string()),
        pa.array(np.concatenate(redirects), pa.int32()), pa.array(lastmod, pa.float64()),
        pa.array(topic_score, pa.float64()), pa.array(inherited, pa.float64()),
        pa.array(depth_left, pa.int32()), pa.array(method, pa.string()), pa.array(body, pa.string()),
    ], schema=CANDIDATES)
    is_edge = np.array([s in (tables.SOURCE_LINK, tables.SOURCE_REDIRECT) for s in source]) & (src_fp != 0)
    e = cand.filter(pa.array(is_edge))
    edges = pa.Table.from_arrays([
        e.column("src_fp"), e.column("dst_fp"), e.column("src"), e.column("dst"),
        e.column("anchor"), pa.array(np.full(e.num_rows, round_no, dtype=np.int32)),
    ], schema=tables.LINKS)
    return cand, edges


def _per_url(value, n):
    return list(value) if isinstance(value, (list, tuple)) else [value] * n


def filtered_table(bundles):
    """FILTERED_CANDIDATES table for a batch of (src, url[], reason[], depth, source) bundles
    (depth and source: one value for the bundle, or one per URL)."""
    url, reason, parent, depth, source = [], [], [], [], []
    for b in bundles:
        n = len(b["url"])
        url.extend(b["url"])
        reason.extend(b["reason"])
        parent.extend([b.get("src")] * n)
        depth.extend(_per_url(b.get("depth"), n))
        source.extend(_per_url(b.get("source"), n))
    if not url:
        return FILTERED_CANDIDATES.empty_table()
    return pa.Table.from_arrays([
        pa.array(urls_mod.fingerprints(url), pa.int64()), pa.array(url, pa.string()),
        pa.array(reason, pa.string()), pa.array(parent, pa.string()),
        pa.array(depth, pa.int32()), pa.array(source, pa.string()),
    ], schema=FILTERED_CANDIDATES)
