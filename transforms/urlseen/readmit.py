"""Re-admitting refused URLs once the setting that refused them changed (pure).

In a round whose refusal signatures (transforms.urls.refusals) differ from the previous
round's, the refusal rows of the seen views (visited rows refused by the address guard,
filtered rows refused by the scope) whose `refused_by` is not a current signature are
*stale*. `readmission` turns them into what a page's links would be: candidates the
current filter keeps (they go through URL-seen like any link, so a URL with a later
record, or already in the frontier, is not added twice) and filtered candidates it
refuses again (recorded with the current signature, so the next change re-reads them).
A round without a changed signature reads none of this.
"""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables
from schemas.tables import CANDIDATES, FILTERED_CANDIDATES
from transforms.urls import canonical as urls_mod
from transforms.urls import request

# the columns a refusal row is re-read with, per seen table
COLUMNS = {
    "visited": ("fp", "url", "depth", "first_parent", "source", "refused_by", "method", "request_body"),
    "filtered": ("fp", "url", "depth", "first_parent", "source", "refused_by"),
}


def stale_mask(refused_by: pa.Array, current) -> np.ndarray:
    """Rows refused by settings that are not the current ones (null: not a refusal)."""
    refused = refused_by.is_valid()
    if len(current):
        refused = pc.and_(refused, pc.invert(pc.is_in(refused_by, pa.array(sorted(current)))))
    return np.asarray(refused.to_numpy(zero_copy_only=False), dtype=bool)


def readmission(rows: pa.Table, url_filter):
    """(CANDIDATES, FILTERED_CANDIDATES) for stale refusal rows (COLUMNS), judged by
    `url_filter` at their recorded depth; a seed stays a seed, a link keeps its first parent
    (as the candidate's source page, src_fp 0: no new edge, no in-link)."""
    n = rows.num_rows
    if n == 0:
        return CANDIDATES.empty_table(), FILTERED_CANDIDATES.empty_table()
    urls = rows.column("url").to_pylist()
    depth = rows.column("depth").fill_null(0).to_pylist()
    parent = rows.column("first_parent").to_pylist()
    # a refused deep-web POST comes back as the same POST (its fingerprint is its request's)
    method, body = ([rows.column(c).to_pylist() if c in rows.column_names else [None] * n
                     for c in ("method", "request_body")])
    source = [s or (tables.SOURCE_SEED if p is None else tables.SOURCE_LINK)
              for s, p in zip(rows.column("source").to_pylist(), parent)]
    reasons = url_filter.reasons(urls, depth)
    reasons = [None if r == "extension" and s == tables.SOURCE_SITEMAP_FILE else r
               for r, s in zip(reasons, source)]
    keep = [i for i, r in enumerate(reasons) if r is None]
    drop = [i for i, r in enumerate(reasons) if r is not None]

    def pick(values, idx):
        return [values[i] for i in idx]

    k = len(keep)
    cand = pa.Table.from_arrays([
        pa.array(request.request_fingerprints(pick(urls, keep), pick(method, keep), pick(body, keep))
                 if k else [], pa.int64()),
        pa.array(pick(urls, keep), pa.string()),
        pa.array([urls_mod.host_key(u) for u in pick(urls, keep)], pa.string()),
        pa.array(pick(depth, keep), pa.int32()), pa.array(np.zeros(k, np.int64)),
        pa.array(pick(parent, keep), pa.string()), pa.array([""] * k, pa.string()),
        pa.array(pick(source, keep), pa.string()), pa.array(np.zeros(k, np.int32)),
        pa.nulls(k, pa.float64()), pa.nulls(k, pa.float64()), pa.nulls(k, pa.float64()),
        pa.nulls(k, pa.int32()), pa.array(pick(method, keep), pa.string()),
        pa.array(pick(body, keep), pa.string()),
    ], schema=CANDIDATES)
    d = len(drop)
    refused = pa.Table.from_arrays([
        pa.array(urls_mod.fingerprints(pick(urls, drop)) if d else [], pa.int64()),
        pa.array(pick(urls, drop), pa.string()), pa.array(pick(reasons, drop), pa.string()),
        pa.array(pick(parent, drop), pa.string()), pa.array(pick(depth, drop), pa.int32()),
        pa.array(pick(source, drop), pa.string()),
    ], schema=FILTERED_CANDIDATES)
    return cand, refused
