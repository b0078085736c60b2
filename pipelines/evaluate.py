"""Replay crawl orderings over a known graph and measure what each one is worth.

    python -m pipelines.evaluate --generate 100000 --out /tmp/eval
    python -m pipelines.evaluate --graph SIMWEB_DIR            # pages.parquet + links.parquet
    python -m pipelines.evaluate --pages P.parquet --links L.parquet
    python -m pipelines.evaluate --edges E.parquet             # any (src, dst) edge list
    python -m pipelines.evaluate --generate 100000 --opic_passes 8

The crawl starts from the seeds and can only fetch pages it has discovered. Every step
runs the same generate logic as a real round (transforms.generate.select): score the
pending pages with the ordering, sort by (score desc, fp asc), take at most
`--per_host_cap` pages per host (a host's fetch slots per round: politeness) and at most
`--batch_size` in total; fetching them reveals their out-links. Partial PageRank is recomputed every
`--pagerank_every` fetched pages (default: every batch, as in a round), with temporary
scores for pages found in between; OPIC moves cash on every batch.

For each ordering it reports the cumulative share of the graph's true PageRank captured
after 10 %, 20 %, ... 100 % of the pages are crawled, AUC@50 % (the area under that curve
from 0 to 50 % of the pages, divided by 0.5: the diagonal scores 0.25), and the same for
"hot" pages (the top `--hot_fraction` by true PageRank: the share of them crawled). Writes
curves.parquet (one row per strategy and percent) and summary.parquet to --out.

Seeds: `--seed_urls`, else seeds.parquet (url) in the --graph directory (as the simulated
web exports it), else a boolean `seed`/`is_seed` column of pages, else pages with depth 0,
else the first page; generated graphs carry their own seeds. Pages with
robots_allowed = false are discovered, and take a fetch slot when selected (a round
cannot tell before it asks), but are never fetched; links with nofollow = true are
not followed and pages.redirect_to counts as a link (the simulated web's follow graph). Percentages are of all pages in
the graph, so a crawl that cannot reach everything ends below 100 %.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.evalgraph import EvalGraph, build_graph, generated_graph, load_graph  # noqa: F401  (the graphs)
from pipelines.evalmetrics import PERCENTS, auc_to, curves, relative_auc  # noqa: F401
from pipelines.withinround import host_pace, round_fetch_order  # noqa: F401 (re-exported)
from strategies.graph import CrawlGraph, l1, unique
from strategies.opic import opic_distribute, opic_init
from strategies.ordering import ORDERINGS, get_ordering
from transforms.generate.select import select as generate_select

DEFAULT_STRATEGIES = ("omniscient", "opic", "larger_sites_first", "partial_pagerank", "bfs",
                      "backlinks", "url_importance", "preference", "random")


@dataclass
class CrawlResult:
    strategy: str
    order: np.ndarray              # node ids in fetch order
    batches: int
    seconds: float
    info: dict = field(default_factory=dict)


def _out_edges(g: EvalGraph, nodes):
    starts, ends = g.indptr[nodes], g.indptr[nodes + 1]
    counts = ends - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    offs = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    idx = np.arange(total) + offs
    return g.src[idx], g.dst[idx]


def simulate(g: EvalGraph, strategy: str, batch_size=1000, per_host_cap=100,
             pagerank_every=None, max_pages=None, params=None,
             within_round="hosts", host_seconds=None) -> CrawlResult:
    """Crawl g from its seeds with one ordering; return the fetch order.

    within_round: the order the pages of one batch are fetched in. "hosts" (default):
    as a round fetches them — every host of the fetch list at once, each host's URLs in
    the list's order, so the k-th URL of every host is fetched before the (k+1)-th of
    any (`round_fetch_order`). "score": the fetch list's order (one global queue).
    host_seconds: {host: seconds per fetch} for "hosts": hosts whose politeness is slower
    (a robots Crawl-delay) fall behind the others, as in a round (`host_pace`).
    """
    t0 = time.time()
    params = dict(params or {})
    if strategy == "omniscient":
        params.setdefault("truth_fp", g.fps)
        params.setdefault("truth_rank", g.truth)
    order_obj = get_ordering(strategy, **params)
    n = g.n
    known = np.zeros(n, bool)
    fetched = np.zeros(n, bool)
    depth = np.zeros(n, np.int64)
    disc = np.zeros(n, np.int64)
    inlinks = np.zeros(n, np.int64)
    known[g.seeds] = True
    opic = opic_init(n, g.seeds) if order_obj.uses_opic else None
    # partial PageRank bookkeeping
    pr_every = pagerank_every or batch_size
    pr_score = np.zeros(n)
    has_pr = np.zeros(n, bool)
    last_pr_at = None
    fsrc, fdst = [], []                        # edges of fetched pages
    outdeg_all = np.diff(g.indptr) * g.fetchable   # a page robots.txt denies shows no links
    fetch_order = []
    n_fetched = 0
    step = 0
    pr_runs = 0
    limit = max_pages or n
    cols = set(order_obj.columns) | ({"host"} if order_obj.needs_host_counts else set())
    while n_fetched < limit:
        # robots-denied pages too: generate cannot tell, the round spends a slot on them
        pending = np.flatnonzero(known & ~fetched)
        if len(pending) == 0:
            break
        if order_obj.needs_graph:
            # default: after every batch, as a round recomputes it whatever the round
            # fetched (the first rounds fetch only the seeds and their children)
            if last_pr_at is None or (n_fetched > last_pr_at if pagerank_every is None
                                      else n_fetched - last_pr_at >= pr_every):
                kn = np.flatnonzero(known)
                es = np.concatenate(fsrc) if fsrc else np.zeros(0, np.int64)
                ed = np.concatenate(fdst) if fdst else np.zeros(0, np.int64)
                graph = CrawlGraph(g.fps[kn], np.searchsorted(kn, es).astype(np.int32),
                                   np.searchsorted(kn, ed).astype(np.int32), fetched[kn])
                pr_score[:] = 0.0
                pr_score[kn] = order_obj.node_ranks(graph)
                has_pr[:] = False
                has_pr[kn] = True
                last_pr_at = n_fetched
                pr_runs += 1
            scores = pr_score[pending]
        else:
            data = {"fp": g.fps[pending]}
            if "url" in cols:
                data["url"] = g.urls.take(pa.array(pending))
            if "host" in cols:
                data["host"] = g.hosts.take(pa.array(pending))
            data.update(depth=depth[pending].astype(np.int32),
                        discovered_round=disc[pending].astype(np.int32),
                        inlinks=inlinks[pending])
            if opic is not None:
                data.update(cash=opic.cash[pending], history=opic.history[pending])
            scores = order_obj.score(pa.table(data))
        cand = pa.table({"node": pending, "fp": g.fps[pending],
                         "host": g.hosts.take(pa.array(pending)), "score": scores})
        chosen = generate_select(cand, min(batch_size, limit - n_fetched), per_host_cap)
        batch = chosen.column("node").to_numpy()
        if within_round == "hosts":
            batch = batch[round_fetch_order(chosen.column("host"), host_seconds)]
        fetched[batch] = True
        fetch_order.append(batch[g.fetchable[batch]])
        n_fetched += len(batch)
        step += 1
        s, d = _out_edges(g, batch[g.fetchable[batch]])
        new = d[~known[d]]
        if len(new):
            # depth of a new page: 1 + the smallest depth among this batch's linkers
            nd = np.full(n, np.iinfo(np.int64).max)
            np.minimum.at(nd, d, depth[s] + 1)
            new = unique(new)
            depth[new] = nd[new]
            disc[new] = step
            known[new] = True
        np.add.at(inlinks, d, 1)
        if order_obj.needs_graph:
            fsrc.append(s)
            fdst.append(d)
            # temporary score for pages without a PageRank yet: Σ PR(q)/outdeg(q)
            w = pr_score[s] / np.maximum(outdeg_all[s], 1)
            tmp = ~has_pr[d]
            np.add.at(pr_score, d[tmp], w[tmp])
        if opic is not None:
            mask = np.zeros(n, bool)
            mask[batch] = True
            c, h, vc, vh = opic_distribute(opic.cash, opic.history, mask, s, d,
                                           virtual_cash=opic.virtual_cash,
                                           virtual_history=opic.virtual_history,
                                           known_mask=known, outdeg=outdeg_all)
            opic.cash, opic.history, opic.virtual_cash, opic.virtual_history = c, h, vc, vh
    order = np.concatenate(fetch_order) if fetch_order else np.zeros(0, np.int64)
    info = {"pagerank_runs": pr_runs} if order_obj.needs_graph else {}
    info["batch_sizes"] = [len(b) for b in fetch_order]
    if opic is not None:
        info["opic_cash_total"] = opic.cash.sum() + opic.virtual_cash
    return CrawlResult(strategy, order, step, time.time() - t0, info)


def evaluate(g: EvalGraph, strategies=DEFAULT_STRATEGIES, hot_fraction=0.1, log=print,
             **sim_kw):
    rows, summary = [], []
    for name in strategies:
        r = simulate(g, name, **sim_kw)
        pr_c, hot_c, cum_pr, cum_hot = curves(g, r.order, hot_fraction)
        auc = auc_to(cum_pr, g.n)
        auc_hot = auc_to(cum_hot, g.n)
        diag_dev = float(np.max(np.abs(pr_c[10::10] - PERCENTS[10::10] / 100.0)))
        summary.append(dict(strategy=name, auc50=auc, auc50_hot=auc_hot,
                            max_dev_from_diagonal=diag_dev, batches=r.batches,
                            crawled=len(r.order), seconds=r.seconds,
                            **{f"pr@{p}": float(pr_c[p]) for p in range(10, 101, 10)},
                            **{f"hot@{p}": float(hot_c[p]) for p in range(5, 55, 5)}))
        for p in PERCENTS:
            rows.append(dict(strategy=name, percent_crawled=int(p),
                             pr_share=float(pr_c[p]), hot_share=float(hot_c[p])))
        if log:
            log(f"  {name:20s} AUC@50={auc:.4f} hotAUC@50={auc_hot:.4f} "
                f"batches={r.batches} {r.seconds:.1f}s "
                f"{ {k: v for k, v in r.info.items() if k != 'batch_sizes'} or ''}")
    return pa.Table.from_pylist(summary), pa.Table.from_pylist(rows)


def format_table(summary: pa.Table) -> str:
    cols = ["strategy", "auc50", "auc50_hot"] + [f"pr@{p}" for p in range(10, 101, 10)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in summary.to_pylist():
        lines.append("| " + " | ".join(
            r[c] if isinstance(r[c], str) else f"{r[c]:.3f}" for c in cols) + " |")
    hot = ["strategy"] + [f"hot@{p}" for p in range(5, 55, 5)]
    lines += ["", "| " + " | ".join(hot) + " |", "|" + "---|" * len(hot)]
    for r in summary.to_pylist():
        lines.append("| " + " | ".join(
            r[c] if isinstance(r[c], str) else f"{r[c]:.3f}" for c in hot) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- OPIC passes
def opic_passes(g: EvalGraph, passes=8, schedule="greedy", batch_size=1000, seed=0,
                damping=0.85):
    """OPIC over the whole (known) graph, `passes` × n page visits in batches.

    schedule: "greedy" — each batch visits the batch_size richest pages (Abiteboul et
      al.'s greedy: a rich page may be visited many times per pass, a poor one not at
      all); "greedy_once" — richest first but every page exactly once per pass;
      "random" — a fresh random permutation per pass (every page once per pass).
    Returns the L1 error of the normalised estimate (H + C) to the true PageRank after
    each pass, and the worst |Σ cash - 1| seen.
    """
    n = g.n
    st = opic_init(n)
    rng = np.random.default_rng(seed)
    outdeg = np.diff(g.indptr)
    errors, drift = [], 0.0
    mask = np.zeros(n, bool)
    for _ in range(passes):
        visited = np.zeros(n, bool)
        perm = rng.permutation(n) if schedule == "random" else None
        for b in range(0, n, batch_size):
            k = min(batch_size, n - b)
            if schedule == "random":
                batch = perm[b:b + k]
            else:
                cand = np.where(visited, -np.inf, st.cash) if schedule == "greedy_once" \
                    else st.cash
                batch = np.argpartition(-cand, k - 1)[:k] if k < n else np.arange(n)
            visited[batch] = True
            mask[:] = False
            mask[batch] = True
            s, d = _out_edges(g, batch)
            st.cash, st.history, st.virtual_cash, st.virtual_history = opic_distribute(
                st.cash, st.history, mask, s, d, virtual_cash=st.virtual_cash,
                virtual_history=st.virtual_history, damping=damping, outdeg=outdeg)
            drift = max(drift, abs(st.total_cash - 1.0))
        est = st.cash + st.history
        errors.append(l1(est / est.sum(), g.truth))
    return errors, drift


# --------------------------------------------------------------------------- CLI
def main(argv=None):
    from pipelines import cli
    ap = cli.FlagParser(prog="beamcrawl evaluate", description=__doc__, allow_abbrev=False,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_argument_group("graph (one of)")
    src.add_argument("--graph", help="directory with pages.parquet and links.parquet "
                     "(or pages/ and links/ folders of Parquet files)")
    src.add_argument("--pages")
    src.add_argument("--links")
    src.add_argument("--edges", help="Parquet edge list with src, dst columns")
    src.add_argument("--generate", type=int, metavar="N",
                     help="generate a host-structured graph of N pages")
    ap.add_argument("--graph_seed", type=int, default=0, help="seed of --generate")
    ap.add_argument("--seed_urls", help="text file, one seed URL per line")
    ap.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES))
    ap.add_argument("--batch_size", type=int, default=1000, help="pages fetched per round")
    ap.add_argument("--per_host_cap", type=int, default=100,
                    help="fetch slots per host per round (politeness)")
    ap.add_argument("--pagerank_every", type=int, default=None,
                    help="recompute partial PageRank every K fetched pages (default: "
                         "every batch)")
    ap.add_argument("--within_round", choices=("hosts", "score"), default="hosts",
                    help="order of a batch's fetches: hosts at once, each in list order (as a "
                         "round), or the fetch list's order")
    ap.add_argument("--pagerank_tol", type=float, default=1e-8)
    ap.add_argument("--pref_x", type=float, default=1.0, help="preference: weight of IB")
    ap.add_argument("--pref_y", type=float, default=1.0, help="preference: weight of IL")
    ap.add_argument("--random_seed", type=int, default=0)
    ap.add_argument("--hot_fraction", type=float, default=0.1)
    ap.add_argument("--opic_passes", type=int, default=0,
                    help="also run the OPIC passes experiment (greedy vs random)")
    ap.add_argument("--out", help="directory for curves.parquet and summary.parquet")
    a = cli.parse_flags(ap, argv)
    if a is None:
        raise SystemExit(2)

    for s in [s for s in a.strategies.split(",") if s]:
        if s not in ORDERINGS:
            print(f"error: --strategies: unknown strategy {s!r}; known: {', '.join(sorted(ORDERINGS))}",
                  file=sys.stderr)
            raise SystemExit(2)
    try:
        g = _graph(a)
    except (OSError, ValueError, KeyError) as e:   # a missing or unreadable graph file
        print(f"error: cannot read the graph: {e}. Give --graph DIR with pages.parquet and "
              "links.parquet, --pages + --links, --edges, or --generate N.", file=sys.stderr)
        raise SystemExit(2)
    if g is None:
        print("error: give --generate N, --graph DIR, --pages + --links, or --edges", file=sys.stderr)
        raise SystemExit(2)
    return _report(a, g)


def _graph(a):
    """The graph the flags name, or None when they name none."""
    if a.generate:
        return generated_graph(a.generate, seed=a.graph_seed)
    elif a.graph:
        sp = os.path.join(a.graph, "seeds.parquet")
        return load_graph(_find(a.graph, "pages"), _find(a.graph, "links"), seed_urls=a.seed_urls,
                          seeds=sp if os.path.exists(sp) else None)
    if a.pages and a.links:
        return load_graph(a.pages, a.links, seed_urls=a.seed_urls)
    if a.edges:
        return load_graph(edges=a.edges, seed_urls=a.seed_urls)
    return None


def _report(a, g):
    """Replay the strategies the flags name over g and print (and write) their figures."""
    t = time.time()
    print(f"graph: {g.n} pages, {len(g.src)} distinct links, {len(unique(g.host_id))} "
          f"hosts, {len(g.seeds)} seeds ({time.time() - t:.1f}s)")
    per = {"partial_pagerank": {"tol": a.pagerank_tol},
           "preference": {"x": a.pref_x, "y": a.pref_y},
           "random": {"seed": a.random_seed}}
    names = [s for s in a.strategies.split(",") if s]
    summary_rows, curve_tables = [], []
    for s in names:
        summ, curv = evaluate(g, [s], hot_fraction=a.hot_fraction, batch_size=a.batch_size,
                              per_host_cap=a.per_host_cap, pagerank_every=a.pagerank_every,
                              params=per.get(s), within_round=a.within_round)
        summary_rows += summ.to_pylist()
        curve_tables.append(curv)
    summary = pa.Table.from_pylist(summary_rows)
    print(format_table(summary))
    result = {"summary": summary_rows}
    if a.opic_passes:
        res = {}
        for sched in ("greedy", "greedy_once", "random"):
            errs, drift = opic_passes(g, a.opic_passes, sched, a.batch_size)
            res[sched] = errs
            print(f"OPIC {sched:11s} L1 per pass: " + " ".join(f"{e:.4f}" for e in errs)
                  + f"  (max |Σcash-1| = {drift:.1e})")
        result["opic_passes"] = res
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        pq.write_table(pa.concat_tables(curve_tables), os.path.join(a.out, "curves.parquet"))
        pq.write_table(summary, os.path.join(a.out, "summary.parquet"))
        with open(os.path.join(a.out, "summary.json"), "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {a.out}/curves.parquet, summary.parquet, summary.json")
    return result


def _find(d, name):
    for cand in (f"{name}.parquet", name):
        p = os.path.join(d, cand)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"no {name}.parquet or {name}/ in {d}")


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
