"""Replay focused (vertical) crawls over a known graph with topics: the harvest rate of
each strategy, offline (the evaluator of #5 for issue #16).

    python -m pipelines.evalfocused --graph SIMWEB_DIR --topic sports,football,goal \\
        --topic_label sports --max_pages 5000 --strategies bfs,best_first,shark_search,fish_search

The graph directory is what the simulated web exports (pages.parquet with url, host,
title, topic; links.parquet with src, dst, anchor; seeds.parquet). A page's text is its
`text` column when the graph has one, else its title and topic label (the simulated web
writes "Topic: <label>" on every page). The replay is a round's logic, batch by batch:
generate's selection (score desc, fp asc, --per_host_cap per host), a batch fetched host
by host, document frequencies gathered from the pages fetched in earlier batches, each
fetched page's relevance (strategies.topic) and its links scored by the strategy's
`link_scores` from the anchor texts (no anchor contexts offline: the export has none),
the best score per URL, and in vertical mode (the focused strategies; --no_vertical to
turn off) the depth bound. bfs runs as a round runs it (batch mode).

Prints, per strategy, the harvest rate (relevance >= --relevance_threshold among the
pages fetched) at 1 000, 2 000, ... pages and at the budget, and the share of fetched
pages whose topic label is --topic_label (the ground truth's harvest).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.evalgraph import load_graph
from pipelines.evaluate import round_fetch_order
from strategies.ordering import get_ordering
from strategies.ordering.focused import BestFirst, child_depth_left
from strategies.topic import NUM_BUCKETS, DocFreq, Topic, term_counts
from transforms.generate.select import select as generate_select

FOCUSED = ("best_first", "shark_search", "fish_search")


def topic_graph(graph_dir):
    """(EvalGraph, text per node, {(src, dst): anchor}, topic label per node) of an export."""
    seeds = os.path.join(graph_dir, "seeds.parquet")
    pages_p, links_p = os.path.join(graph_dir, "pages.parquet"), os.path.join(graph_dir, "links.parquet")
    g = load_graph(pages_p, links_p, seeds=seeds if os.path.exists(seeds) else None)
    pages = pq.read_table(pages_p)
    idx = pc.index_in(pages.column("url"), value_set=g.urls).to_numpy(zero_copy_only=False)
    texts, labels = [""] * g.n, [None] * g.n
    cols = pages.column_names
    for i, r in zip(idx, pages.select([c for c in ("text", "title", "topic") if c in cols]).to_pylist()):
        if i is None or np.isnan(i):
            continue
        texts[int(i)] = r.get("text") or f"{r.get('title') or ''} Topic: {r.get('topic') or ''}"
        labels[int(i)] = r.get("topic")
    links = pq.read_table(links_p, columns=["src", "dst", "anchor"])
    s = pc.index_in(links.column("src"), value_set=g.urls).to_numpy(zero_copy_only=False)
    d = pc.index_in(links.column("dst"), value_set=g.urls).to_numpy(zero_copy_only=False)
    anchors = {}
    for a, b, text in zip(s, d, links.column("anchor").to_pylist()):
        if a is not None and b is not None and not (np.isnan(a) or np.isnan(b)) and text:
            anchors.setdefault((int(a), int(b)), text)
    return g, texts, anchors, labels


def replay(g, texts, anchors, topic: Topic, strategy: str, max_pages=5000, batch_size=1000,
           per_host_cap=100, threshold=0.2, depth_bound=3, vertical=None, params=None):
    """Fetch order and per-page relevance of one strategy's crawl of g (see the docstring)."""
    order_obj = get_ordering(strategy, **(params or {}))
    scorer = order_obj if hasattr(order_obj, "link_scores") else BestFirst()
    vertical = strategy in FOCUSED if vertical is None else vertical
    n = g.n
    known, fetched = np.zeros(n, bool), np.zeros(n, bool)
    depth, disc = np.zeros(n, np.int64), np.zeros(n, np.int64)
    tscore, inherited = np.full(n, -np.inf), np.full(n, -np.inf)
    depth_left = np.full(n, np.iinfo(np.int64).min)
    known[g.seeds] = True
    df, docs = np.zeros(NUM_BUCKETS, np.int64), 0
    anchor_sim, order, relevance, step = {}, [], {}, 0
    while len(order) < max_pages:
        pending = np.flatnonzero(known & ~fetched)
        if len(pending) == 0:
            break
        if order_obj.columns == ("topic_score",):
            scores = np.where(np.isfinite(tscore[pending]), tscore[pending], 0.0)
        else:
            scores = order_obj.score(pa.table({"fp": g.fps[pending], "depth": depth[pending].astype(np.int32),
                                               "discovered_round": disc[pending].astype(np.int32)}))
        cand = pa.table({"node": pending, "fp": g.fps[pending], "host": g.hosts.take(pa.array(pending)),
                         "score": scores})
        chosen = generate_select(cand, min(batch_size, max_pages - len(order)), per_host_cap)
        batch = chosen.column("node").to_numpy()[round_fetch_order(chosen.column("host"))]
        fetched[batch] = True
        step += 1
        nz = np.flatnonzero(df)
        t = topic.with_docfreq(DocFreq(nz, df[nz], docs))
        new_terms = []
        for v in batch.tolist():
            order.append(v)
            if not g.fetchable[v]:
                continue
            rel = t.similarity(texts[v])
            relevance[v] = rel
            new_terms.append(term_counts(texts[v])[0])
            relevant = rel >= threshold
            dl_parent = None if depth_left[v] == np.iinfo(np.int64).min else int(depth_left[v])
            dl = child_depth_left(relevant, dl_parent, depth_bound)
            if vertical and dl < 0:
                continue
            dst = g.dst[g.indptr[v]:g.indptr[v + 1]]
            if len(dst) == 0:
                continue
            texts_a = [anchors.get((v, int(d)), "") for d in dst]
            a_sims = np.array([anchor_sim[a] if a in anchor_sim else anchor_sim.setdefault(a, t.similarity(a))
                               for a in texts_a])
            inh_parent = inherited[v] if np.isfinite(inherited[v]) else 0.0
            s, inh = scorer.link_scores(rel, relevant, inh_parent, a_sims, np.zeros(len(dst)))
            np.maximum.at(tscore, dst, s)
            np.maximum.at(inherited, dst, np.full(len(dst), inh))
            np.maximum.at(depth_left, dst, np.full(len(dst), dl))
            new = dst[~known[dst]]
            depth[new] = depth[v] + 1
            disc[new] = step
            known[dst] = True
        for terms in new_terms:
            df[terms] += 1
        docs += len(new_terms)
    return np.array(order, np.int64), relevance


def harvest_curve(order, relevance, threshold, labels=None, label=None, every=1000):
    """[(pages, harvest rate, label share)] after every `every` pages and at the end."""
    rel = np.array([relevance.get(int(v), 0.0) >= threshold for v in order], float)
    lab = np.array([labels[int(v)] == label for v in order], float) if labels is not None else None
    points = sorted(set(list(range(every, len(order) + 1, every)) + [len(order)]))
    return [(k, float(rel[:k].mean()) if k else 0.0,
             float(lab[:k].mean()) if lab is not None and k else None) for k in points]


def main(argv=None):
    from pipelines import cli
    ap = cli.FlagParser(prog="python -m pipelines.evalfocused", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    ap.add_argument("--graph", required=True, help="directory with pages/links/seeds.parquet")
    ap.add_argument("--topic", default="", help="comma-separated topic keywords")
    ap.add_argument("--topic_label", default=None, help="pages.topic value that is on topic")
    ap.add_argument("--strategies", default="bfs,best_first,shark_search,fish_search")
    ap.add_argument("--max_pages", type=int, default=5000)
    ap.add_argument("--batch_size", type=int, default=1000)
    ap.add_argument("--per_host_cap", type=int, default=100)
    ap.add_argument("--relevance_threshold", type=float, default=0.2)
    ap.add_argument("--depth_bound", type=int, default=3)
    ap.add_argument("--no_vertical", action="store_true", help="no depth bound for any strategy")
    ap.add_argument("--json", action="store_true")
    a = cli.parse_flags(ap, argv)
    if a is None:
        return 2
    words = [w.strip() for w in a.topic.split(",") if w.strip()]
    if not words:
        print("error: --topic: give the topic's keywords, e.g. --topic sports,football,goal", file=sys.stderr)
        return 2
    try:
        g, texts, anchors, labels = topic_graph(a.graph)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: --graph {a.graph}: cannot read the graph ({e}); give a directory with "
              "pages.parquet and links.parquet", file=sys.stderr)
        return 2
    topic = Topic.from_texts(words)
    out = {}
    for name in [s for s in a.strategies.split(",") if s]:
        order, rel = replay(g, texts, anchors, topic, name, a.max_pages, a.batch_size, a.per_host_cap,
                            a.relevance_threshold, a.depth_bound, False if a.no_vertical else None)
        out[name] = harvest_curve(order, rel, a.relevance_threshold, labels, a.topic_label)
        if not a.json:
            print(f"{name:14s} " + "  ".join(
                f"{k}: {h:.3f}" + (f" ({l:.3f})" if l is not None else "") for k, h, l in out[name]))
    if a.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
