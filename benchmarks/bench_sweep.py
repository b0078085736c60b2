"""How a crawl's cost grows with its size (issue #53): one whole crawl of a static export,
split by round, against the pages crawled so far.

    .venv/bin/python -m benchmarks.bench_sweep --config bench500k --port 18095 --work /tmp/w500k
    .venv/bin/python -m benchmarks.bench_sweep --config bench50k --port 18090 --work /tmp/bp

The export is made once (benchmarks.realweb.run's layout: `--work`/export-CONFIG-SEED-PORT)
and served by nginx; beamcrawl crawls it to the end with the same flags as the real-web
benchmark (rounds of `--round_pages`; any of its flags may follow). While it runs, the
process tree is sampled every 0.2 s (benchmarks.realweb.run.measure) and each sample is given
to the round that was running: a round ends when its `_COMMITTED` manifest appears. Per round:
pages, wall seconds, pages/s, cores (tree CPU / wall), the steps' seconds from report.json's
time_split (fetch: the fetch bundles' wall, summed; parse; crawl-DB work = URL-seen + table
writes; score), the round's peak tree PSS and largest process RSS. Ends with the whole
crawl's figures (coverage, robots violations, repeats from nginx's log), pages/s over the
first and the second half of the pages, and a PNG of pages/s and peak memory against pages
crawled so far. With --stages, also the steps that grow and the crawl-DB work a round and a
page by crawl size (`old_side_by_size`). No figure is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from benchmarks.realweb import run as realweb
from benchmarks.realweb.analyse import RobotsRules, analyse, read_access_log
from benchmarks.realweb.nginx import Nginx


class RoundSplitter:
    """Gives each sample of the process tree to the round running at that moment: the
    round after the last one whose `_COMMITTED` exists."""

    def __init__(self, crawl_dir: Path, poll=1.0):
        self.crawl_dir, self.poll = Path(crawl_dir), poll
        self.rounds = {}        # round -> {start, end, peak_pss, peak_rss_one, cpu0, cpu1}
        self.committed = set()
        self.commit_at = {}     # round -> its _COMMITTED's mtime (epoch seconds)
        self._next_poll = 0.0
        self._open = None

    def _scan(self):
        rounds = self.crawl_dir / "rounds"
        if not rounds.exists():
            return set()
        return {int(d.name) for d in rounds.iterdir() if d.name.isdigit() and (d / "_COMMITTED").exists()}

    def __call__(self, now, rss, pss, one, cpu):
        if now >= self._next_poll:
            self._next_poll = now + self.poll
            done = self._scan() - self.committed
            for r in sorted(done):
                self.committed.add(r)
                self.commit_at[r] = (self.crawl_dir / "rounds" / f"{r:06d}" / "_COMMITTED").stat().st_mtime
                rec = self.rounds.setdefault(r, self._new(now, cpu))
                rec.update(end=now, cpu1=cpu)
            self._open = max(self.committed) + 1 if self.committed else 0
        if self._open is None:
            return
        rec = self.rounds.setdefault(self._open, self._new(now, cpu))
        rec["peak_pss"], rec["peak_one"] = max(rec["peak_pss"], pss), max(rec["peak_one"], one)
        rec["cpu1"], rec["last"] = cpu, now

    @staticmethod
    def _new(now, cpu):
        return {"start": now, "end": None, "peak_pss": 0, "peak_one": 0, "cpu0": cpu, "cpu1": cpu, "last": now}


def round_rows(crawl_dir: Path, split: RoundSplitter) -> list[dict]:
    """Per fetch round: its report.json figures and the samples' memory and CPU."""
    rows, so_far = [], 0
    for r in sorted(split.committed):
        rep = json.loads((crawl_dir / "rounds" / f"{r:06d}" / "report.json").read_text())
        if rep.get("fetched", 0) == 0:
            continue                     # the inject round
        ts, rec = rep.get("time_split", {}), split.rounds.get(r, {})
        wall = float(rep["wall_seconds"])
        span = (rec.get("end") or rec.get("last", 0)) - rec.get("start", 0)
        rows.append({
            "round": r, "pages_before": so_far, "pages": rep["visited"], "wall": wall,
            "pages_per_s": rep["visited"] / wall,
            "cores": (rec.get("cpu1", 0) - rec.get("cpu0", 0)) / span if span > 0 else 0.0,
            "fetch_s": ts.get("fetch", 0.0), "parse_s": ts.get("parse", 0.0),
            "crawl_db_s": ts.get("urlseen", 0.0) + ts.get("write", 0.0), "score_s": ts.get("score", 0.0),
            "peak_pss_mb": rec.get("peak_pss", 0) / 2**20, "largest_mb": rec.get("peak_one", 0) / 2**20,
        })
        so_far += rep["visited"]
    return rows


def stages_by_round(stages, split: RoundSplitter):
    """(round, stage) for each stage (stagetimer line, `at` epoch): the round whose commit
    follows it; stages after the last commit are left out."""
    import bisect
    order = sorted(split.commit_at.items(), key=lambda kv: kv[1])
    ends = [at for _, at in order]
    for st in stages:
        i = bisect.bisect_left(ends, st["at"])
        if i < len(order):
            yield order[i][0], st


def stage_growth(stages, split: RoundSplitter, rows, top=12) -> list[tuple]:
    """Which steps grow with the crawl: each stage goes to its round (`stages_by_round`);
    per step (the transforms fused into the stage), mean seconds a round over the fetch
    rounds of the first and of the second half of the pages.
    Returns (step, first half s/round, second half s/round), largest growth first."""
    import collections
    total = sum(x["pages"] for x in rows)
    half = {x["round"]: x["pages_before"] >= total / 2 for x in rows}
    n = collections.Counter(half.values())
    per = collections.defaultdict(lambda: [0.0, 0.0])
    for r, st in stages_by_round(stages, split):
        if r not in half:
            continue
        kind = "fetch" if any(t.startswith("Fetch") for t in st["transforms"]) else \
            ", ".join(t for t in st["transforms"] if "/" in t)[:110] or ", ".join(st["transforms"])[:110]
        per[kind][half[r]] += st["seconds"]
    out = [(k, v[0] / max(1, n[False]), v[1] / max(1, n[True])) for k, v in per.items()]
    return sorted(out, key=lambda x: x[1] - x[2])[:top]


# the steps that read what the whole crawl knows, whatever the round's size (issue #53)
OLD_SIDE = ("ContentSeen/ProbeVisited/ProbeNarrow", "ContentSeen/NearClusters/OldPages",
            "UrlSeen/BucketSeenHits", "ContentSeen/ExactDuplicates/OldMatching")


def old_side_by_size(stages, split: RoundSplitter, rows, bands=4) -> list[dict]:
    """The crawl-DB work a round and a page, by crawl size: each stage goes to its round
    (`stages_by_round`); "old side" is the stages running any of OLD_SIDE (with whatever is
    fused into them). Over the rounds of at least half the median round's pages (tail
    rounds left out), in `bands` equal bands of the pages crawled before the round: rounds,
    old-side seconds a round and µs a page, all stages' ms a page. Empty when no stage ran
    an OLD_SIDE step (the names changed: update OLD_SIDE)."""
    import collections
    import statistics
    old, every, found = collections.Counter(), collections.Counter(), False
    for r, st in stages_by_round(stages, split):
        every[r] += st["seconds"]
        if any(t in OLD_SIDE for t in st["transforms"]):
            old[r] += st["seconds"]
            found = True
    if not found or not rows:
        return []
    floor = statistics.median(x["pages"] for x in rows) / 2
    full = [x for x in rows if x["pages"] >= floor]
    total = sum(x["pages"] for x in rows)
    out = []
    for b in range(bands):
        lo, hi = total * b / bands, total * (b + 1) / bands
        xs = [x for x in full if lo <= x["pages_before"] < hi]
        pages = sum(x["pages"] for x in xs)
        if not xs or not pages:
            continue
        o, a = sum(old[x["round"]] for x in xs), sum(every[x["round"]] for x in xs)
        out.append({"pages_before": [int(lo), int(hi)], "rounds": len(xs), "old_side_s_per_round": o / len(xs),
                    "old_side_us_per_page": 1e6 * o / pages, "stages_ms_per_page": 1e3 * a / pages})
    return out


def fmt_rounds(rows) -> str:
    cols = ["round", "pages before", "pages", "wall s", "pages/s", "cores", "fetch s (bundles)",
            "parse s", "crawl-DB s", "score s", "peak PSS MB", "largest MB"]
    out = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for x in rows:
        out.append(f"| {x['round']} | {x['pages_before']} | {x['pages']} | {x['wall']:.1f} | {x['pages_per_s']:.1f} | "
                   f"{x['cores']:.2f} | {x['fetch_s']:.1f} | {x['parse_s']:.1f} | {x['crawl_db_s']:.2f} | "
                   f"{x['score_s']:.2f} | {x['peak_pss_mb']:.0f} | {x['largest_mb']:.0f} |")
    return "\n".join(out)


def halves(rows) -> dict:
    """pages/s over the rounds of the first and of the second half of the pages."""
    total = sum(x["pages"] for x in rows)
    first = [x for x in rows if x["pages_before"] < total / 2]
    second = [x for x in rows if x["pages_before"] >= total / 2]
    rate = lambda xs: sum(x["pages"] for x in xs) / max(1e-9, sum(x["wall"] for x in xs))  # noqa: E731
    return {"first_half_pages_per_s": rate(first), "second_half_pages_per_s": rate(second),
            "second_over_first": rate(second) / max(1e-9, rate(first))}


def plot(rows, path: Path, title: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x = [(r["pages_before"] + r["pages"]) / 1000 for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(x, [r["pages_per_s"] for r in rows], "o-", color="tab:blue", label="pages/s (round)")
    ax.set_xlabel("pages crawled so far (thousands)")
    ax.set_ylabel("pages/s of the round", color="tab:blue")
    ax.set_ylim(bottom=0)
    ax2 = ax.twinx()
    ax2.plot(x, [r["peak_pss_mb"] for r in rows], "s--", color="tab:red", label="peak tree PSS")
    ax2.plot(x, [r["largest_mb"] for r in rows], "^:", color="tab:orange", label="largest process RSS")
    ax2.set_ylabel("MB", color="tab:red")
    ax2.set_ylim(bottom=0)
    fig.legend(loc="lower center", ncol=3, fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_sweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="bench500k")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18095)
    ap.add_argument("--work", type=Path, default=Path("/tmp/w500k"))
    ap.add_argument("--plot", type=Path, default=None, help="PNG (default WORK/sweep-CONFIG.png)")
    ap.add_argument("--stages", action="store_true",
                    help="run the crawl under benchmarks/stagetimer.py and say which steps grow with the crawl")
    a, rest = ap.parse_known_args(argv)
    # the crawl's flags are the real-web benchmark's (--round_pages, --fetch_threads, ...)
    opts = realweb.parser().parse_args(["--config", a.config, "--seed", str(a.seed), "--port", str(a.port),
                                        "--work", str(a.work), *rest])
    a.work.mkdir(parents=True, exist_ok=True)
    export = realweb.ensure_export(opts)
    reachable = set((export / "reachable.txt").read_text().split())
    robots = RobotsRules.from_export(export)
    cmds = realweb.beamcrawl_cmds(opts, export, a.work)
    crawl_dir = Path(cmds[0][cmds[0].index("--crawl_dir") + 1])
    stages_path = a.work / f"sweep-{a.config}-stages.jsonl"
    if a.stages:
        crawl = cmds[1]
        cmds[1] = [crawl[0], Path(__file__).resolve().parent / "stagetimer.py", stages_path, "--module", *crawl[2:]]
    split = RoundSplitter(crawl_dir)
    env = {**os.environ, "PYTHONPATH": str(opts.repo)}
    with Nginx(export, a.port, a.work / "nginx-sweep", workers=opts.nginx_workers) as ng:
        print(f"{time.strftime('%H:%M:%S')} crawling {a.config} (load {os.getloadavg()[0]:.1f})", flush=True)
        m = realweb.measure(cmds, opts.repo, env, a.work / "sweep.log", on_sample=split)
    split(time.time() + split.poll, 0, 0, 0, m["cpu_sampled"])    # the last round's commit
    res = analyse(read_access_log(ng.access_log), reachable, robots, a.port)
    rows = round_rows(crawl_dir, split)
    whole = {**m, **{k: v for k, v in res.items() if k != "violation_examples"},
             "pages_per_s": res["pages"] / m["wall"], "cpu_ms_per_page": 1000 * m["cpu"] / max(1, res["pages"]),
             **halves(rows)}
    print(fmt_rounds(rows))
    if a.stages:
        stages = [json.loads(x) for x in stages_path.read_text().splitlines()]
        growth = stage_growth(stages, split, rows)
        whole["growth"] = growth
        print("\nsteps that grow: seconds a round, first half of the pages -> second half")
        for k, first, second in growth:
            print(f"  {first:6.2f} -> {second:6.2f}  {k}")
        by_size = old_side_by_size(stages, split, rows)
        whole["old_side_by_size"] = by_size
        print("\ncrawl-DB work (old-side stages) by pages crawled before the round, tail rounds left out:")
        for b in by_size or [None]:
            print("  no old-side stage found: update bench_sweep.OLD_SIDE" if b is None else
                  f"  {b['pages_before'][0]:>8}-{b['pages_before'][1]:<8} {b['rounds']:4d} rounds  "
                  f"{b['old_side_s_per_round']:6.3f} s a round  {b['old_side_us_per_page']:7.1f} µs a page  "
                  f"all stages {b['stages_ms_per_page']:.3f} ms a page")
    (a.work / f"sweep-{a.config}.json").write_text(json.dumps({"whole": whole, "rounds": rows}, indent=1))
    print(json.dumps(whole, indent=1))
    png = a.plot or a.work / f"sweep-{a.config}.png"
    plot(rows, png, f"{a.config}: {res['pages']} pages, {whole['pages_per_s']:.0f} pages/s whole crawl")
    print(f"plot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
