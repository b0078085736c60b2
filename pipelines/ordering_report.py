"""Ordering quality of a crawl, per round, against a ground truth (issue #11).

For every committed round up to N: pages fetched so far (visited rows that were fetched,
in (round, fetch_time) order), the share of the ground truth's PageRank they hold, and the
relative AUC — the area under "PageRank captured against pages fetched" up to
min(pages fetched, 50 % of the web), divided by the same area for the perfect order (the
web's pages sorted by true PageRank). 1.0 is the best any crawler can do; a random order
scores far lower (pipelines.evaluate measures the same on a replay).

Ground truth: DIR/pagerank.parquet (url, pagerank), as the simulated web exports it, or,
without it, the PageRank of DIR/pages.parquet + links.parquet computed by the evaluator.
"""
from __future__ import annotations

import os

import numpy as np

NOT_FETCHED = ("robots_denied", "forbidden_address")


def truth_pagerank(truth_dir):
    """{url: true PageRank} of a ground-truth directory."""
    import pyarrow.parquet as pq
    p = os.path.join(truth_dir, "pagerank.parquet")
    if os.path.exists(p):
        t = pq.read_table(p, columns=["url", "pagerank"])
        return dict(zip(t.column("url").to_pylist(), t.column("pagerank").to_pylist()))
    from pipelines.evalgraph import load_graph
    g = load_graph(os.path.join(truth_dir, "pages.parquet"), os.path.join(truth_dir, "links.parquet"))
    return dict(zip(g.urls.to_pylist(), g.truth.tolist()))


def ordering_by_round(rows, truth, frac=0.5):
    """rows: visited rows (url, round, fetch_time, outcome); truth: {url: PageRank}.
    Returns one dict per round: round, fetched (so far), pr_share, relative_auc."""
    rows = [r for r in rows if r["outcome"] not in NOT_FETCHED]
    rows.sort(key=lambda r: (r["round"], r["fetch_time"] or 0.0))
    total = float(sum(truth.values())) or 1.0
    n = len(truth)
    half = max(1, int(round(frac * n)))
    seen, pr = set(), []
    ends = {}
    for r in rows:
        if r["url"] in seen:          # a refetch captures nothing new
            continue
        seen.add(r["url"])
        pr.append(truth.get(r["url"], 0.0))
        ends[r["round"]] = len(pr)
    cum = np.cumsum(pr) / total if pr else np.zeros(0)
    best = np.cumsum(np.sort(np.fromiter(truth.values(), float))[::-1]) / total
    out = []
    for rnd in sorted(ends):
        k = ends[rnd]
        m = min(k, half)
        out.append({"round": int(rnd), "fetched": int(k), "pr_share": round(float(cum[k - 1]), 4),
                    "relative_auc": round(float(cum[:m].sum() / best[:m].sum()), 4),
                    "up_to_pages": int(m)})
    return out


def summary_lines(rounds):
    if not rounds:
        return []
    last = rounds[-1]
    lines = [f"  ordering vs ground truth: {last['fetched']} pages hold {last['pr_share']:.1%} of "
             f"the true PageRank; relative AUC {last['relative_auc']:.3f} "
             f"(first {last['up_to_pages']} pages, 1.0 = perfect order)"]
    lines += ["    round " + ", ".join(f"{r['round']}: {r['pr_share']:.3f}/{r['relative_auc']:.3f}"
                                       for r in rounds) + "  (PR share/relative AUC)"]
    return lines
