"""Vertical crawling on the simulated web (issue #16): harvest of bfs, best_first,
shark_search and fish_search, real crawls and the offline replay, at two topic homophilies.

    python -m benchmarks.bench_focused                         # large web, 5 000 pages, h = 0.8 and 0.5
    python -m benchmarks.bench_focused --pages 2000 --homophily 0.8
    python -m benchmarks.bench_focused --replay_only           # the offline replay only (fast)
    python -m benchmarks.bench_focused --replay_only --topic all   # ... of each of the 10 topics
    pytest -m bench benchmarks/bench_focused.py                # the same, as an opt-in test

Every crawl starts from the same seeds (the web's 20 seed hosts) with the same budget
(--pages, in rounds of --max_pages, at most 100 URLs per host per round); bfs runs in
batch mode, the focused strategies in --mode vertical (harvest floor 0, so every crawl
spends its budget). Printed per strategy: the harvest rate (relevance >= 0.2 among the
visited pages, from the report), the share of visited pages whose simulated topic label is
the topic (the ground truth), the ratio to bfs, and the offline replay's harvest
(pipelines.evalfocused over the web's export) with the same budget. Figures, not
assertions: the test form checks only that the ranking of the two agrees at the top.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pytest

STRATEGIES = ("bfs", "best_first", "shark_search", "fish_search")
TOPICS = {"sports": "sports,football,league,match,goal,striker,stadium,tournament"}


def topic_keywords(topic):
    """The keywords of a simulated topic name: its name and its first seven words."""
    from tests.simweb import words
    if topic in TOPICS:
        return TOPICS[topic]
    names = [words.topic_name(k) for k in range(len(words.TOPICS))]
    if topic not in names:
        raise SystemExit(f"error: --topic {topic}: not a simulated topic ({', '.join(names)})")
    return ",".join([topic] + words.topic_words(names.index(topic))[:7])


def real_crawl(web, root, strategy, topic, pages, max_pages):
    from pipelines.crawldir import CrawlDir
    from tests.e2e import crawlstate
    d = Path(root) / strategy
    mode = "batch" if strategy == "bfs" else "vertical"
    crawlstate.start_crawl(web, d, "--strategy", strategy, "--topic", topic, "--mode", mode,
                           "--harvest_floor", "0", "--max_pages", str(max_pages),
                           "--max_per_host", "100", "--near_duplicates", "0", "--store", "none")
    t = time.time()
    crawlstate.run_rounds(d, "--max_total_pages", str(pages))
    c = CrawlDir(str(d))
    n = c.last_committed()
    v = c.read_table("visited", n, columns=["url"]).column("url").to_pylist()
    return c.read_report(n)["harvest"], v, time.time() - t


def _web(config, h, root, replay_only):
    """(served web or None, model) of the config at topic homophily h."""
    from tests.simweb.model import build_web
    from tests.simweb.process import SimWebProcess
    if replay_only:
        return None, build_web({"base": config, "topic_homophily": h}, 1, port=8000)
    served = SimWebProcess(config, seed=1, workdir=root / "web", topic_homophily=h)
    return served, served.web


def run(config="large", homophilies=(0.8, 0.5), pages=5000, max_pages=1000, topics=("sports",),
        replay_only=False, strategies=STRATEGIES, out=print):
    """{(h, topic): {strategy: figures}}; prints each line as it is measured."""
    from pipelines.evalfocused import harvest_curve, replay, topic_graph
    from strategies.topic import Topic
    from tests.simweb import truth
    results = {}
    for h in homophilies:
        root = Path(tempfile.mkdtemp(prefix=f"bench_focused_h{h}_"))
        served, model = _web(config, h, root, replay_only)
        try:
            truth.export(model, root / "truth")
            g, texts, anchors, labels = topic_graph(str(root / "truth"))
            url_label = dict(zip(g.urls.to_pylist(), labels))
            for topic in topics:
                words = topic_keywords(topic)
                rows = {}
                for s in strategies:
                    order, rel = replay(g, texts, anchors, Topic.from_texts(words.split(",")), s,
                                        pages, max_pages, 100)
                    _, replay_rate, replay_label = harvest_curve(order, rel, 0.2, labels, topic)[-1]
                    row = {"replay_harvest": replay_rate, "replay_label": replay_label}
                    if served is not None:
                        hv, visited, secs = real_crawl(served, root / "crawls" / topic, s, words,
                                                       pages, max_pages)
                        row.update(harvest=hv["running_rate"], visited=hv["running_visited"],
                                   label=sum(url_label.get(u) == topic for u in visited) / max(1, len(visited)),
                                   seconds=round(secs, 1), curve=hv["curve"])
                    rows[s] = row
                    out(f"h={h} {topic:10s} {s:13s} " + " ".join(
                        f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in row.items() if k != "curve"))
                key = "replay_harvest" if replay_only else "harvest"
                base = rows.get("bfs", {}).get(key) or float("nan")
                for s, row in rows.items():
                    out(f"h={h} {topic:10s} {s:13s} harvest / bfs = {row[key] / base:.2f}"
                        + ("" if replay_only else
                           f"   replay / bfs = {row['replay_harvest'] / rows['bfs']['replay_harvest']:.2f}"))
                if not replay_only:
                    real_rank = sorted(rows, key=lambda s: -rows[s]["harvest"])
                    replay_rank = sorted(rows, key=lambda s: -rows[s]["replay_harvest"])
                    out(f"h={h} {topic:10s} ranking real: {real_rank}  replay: {replay_rank}")
                results[(h, topic)] = rows
        finally:
            if served is not None:
                served.stop()
    return results


@pytest.mark.bench
def test_focused_harvest_targets():
    res = run(pages=5000)
    for key, rows in res.items():
        real_top = max(rows, key=lambda s: rows[s]["harvest"])
        replay_top = max(rows, key=lambda s: rows[s]["replay_harvest"])
        assert real_top == replay_top, (key, rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="large")
    ap.add_argument("--homophily", default="0.8,0.5")
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--max_pages", type=int, default=1000)
    ap.add_argument("--topic", default="sports", help="simulated topic names (comma-separated), "
                    "or all: the 10 topics")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--replay_only", action="store_true")
    a = ap.parse_args(argv)
    from tests.simweb import words
    topics = ([words.topic_name(k) for k in range(len(words.TOPICS))] if a.topic == "all"
              else a.topic.split(","))
    run(a.config, tuple(float(x) for x in a.homophily.split(",")), a.pages, a.max_pages, topics,
        a.replay_only, tuple(a.strategies.split(",")))


if __name__ == "__main__":
    main()
