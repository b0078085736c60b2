"""Turn batches of per-page link arrays into columnar tables.

Pages travel one element each with their links as arrays; here a batch of pages becomes
one Arrow table of URL-seen candidates and one of link-graph edges, so the per-link work
is columnar (fingerprints, host keys) and Beam sees one element per batch.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables
from schemas.tables import CANDIDATES, FILTERED_CANDIDATES
from transforms.urls import canonical as urls_mod
from transforms.urls import request


def candidates_and_edges(bundles, round_no):
    """(CANDIDATES table, LINKS table) for a batch of page link bundles.

    A bundle's one-per-page values (source page, depth, source, ...) are repeated to its
    links by one `take` per column; only the per-link lists are joined in Python."""
    bundles = [b for b in bundles if len(b["dst"])]
    if not bundles:
        return CANDIDATES.empty_table(), tables.LINKS.empty_table()
    sizes = [len(b["dst"]) for b in bundles]
    owner = pa.array(np.repeat(np.arange(len(bundles), dtype=np.int64), sizes))   # each link's bundle

    def per_bundle(key, arrow_type, default=None):   # (a falsy value takes `default` if one is given)
        values = [b.get(key) for b in bundles] if default is None else [b.get(key) or default for b in bundles]
        return pa.array(values, arrow_type).take(owner)

    def per_link(key, fill):
        values = []
        for b, n in zip(bundles, sizes):
            v = b.get(key)
            values.extend(v if v is not None else [fill] * n)
        return values

    dst = [u for b in bundles for u in b["dst"]]
    anchor = []
    for b, n in zip(bundles, sizes):
        anchor.extend(b.get("anchor") or [""] * n)
    method = per_bundle("method", pa.string())   # deep web: POST submissions (one body per URL)
    body = per_link("request_body", None)
    dst_fp = urls_mod.fingerprints(dst)
    if any(b.get("method") for b in bundles):   # a POST's fingerprint is its request's: method, URL and body
        methods = method.to_pylist()
        posts = [i for i, m in enumerate(methods) if m]
        dst_fp = dst_fp.copy()
        dst_fp[posts] = request.request_fingerprints([dst[i] for i in posts], [methods[i] for i in posts],
                                                     [body[i] for i in posts])
    dst = pa.array(dst, pa.string())
    src_fp = per_bundle("src_fp", pa.int64(), 0)
    source = per_bundle("source", pa.string(), tables.SOURCE_LINK)
    cand = pa.Table.from_arrays([
        pa.array(dst_fp, pa.int64()), dst, urls_mod.host_keys(dst),
        per_bundle("depth", pa.int32(), 0), src_fp,
        per_bundle("src", pa.string()), pa.array(anchor, pa.string()), source,
        per_bundle("redirects", pa.int32(), 0), pa.array(per_link("lastmod", None), pa.float64()),
        pa.array(per_link("topic_score", None), pa.float64()), per_bundle("topic_inherited", pa.float64()),
        per_bundle("depth_left", pa.int32()), method, pa.array(body, pa.string()),
    ], schema=CANDIDATES)
    is_edge = pc.and_(pc.is_in(source, pa.array([tables.SOURCE_LINK, tables.SOURCE_REDIRECT])),
                      pc.not_equal(src_fp, 0))
    e = cand.filter(is_edge)
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
