"""Real incremental crawls of the small simulated web over simulated days, one per revisit
policy, from one shared day-0 crawl: the true freshness of the copy each day (a visited
page is fresh when the web's change_times show no change since its last visit), beside
the simulator's analytic freshness for the web's true rates and the same budget, and the
304 byte savings.

    python -m benchmarks.bench_recrawl_crawl [--days 16] [--budget 65] [--estimate bayes|improved]
        [--explore 0.1] [--seed 3] [--policies optimal,uniform,proportional]
"""
import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np

from pipelines.crawldir import CrawlDir
from strategies.recrawl import PageSet, get_policy
from strategies.recrawl import freshness as F
from strategies.recrawl.base import within_rounds
from tests.e2e import crawlstate
from tests.simweb.process import SimWebProcess
from transforms.recrawl.state import latest

DAY = 86400.0


def copy_state(crawl_dir):
    c = CrawlDir(str(crawl_dir))
    return latest(c.read_table("recrawl", c.last_committed()))


def true_freshness(web, state, t0, t1):
    """Time-average true freshness over [t0, t1] of the copy `state` holds (the state after
    the round at t0): a page is fresh from its last visit until the web's next change."""
    index = {web.web.url(i): i for i in range(len(web.web.change_rate))}
    out = []
    for u, v in zip(state.column("url").to_pylist(), state.column("last_visit").to_pylist()):
        if u not in index:
            continue
        changes = web.web.change_times(index[u], v, t1)
        stale_from = min(changes) if changes else t1
        out.append(min(max(stale_from - t0, 0.0), t1 - t0) / (t1 - t0))
    return float(np.mean(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--budget", type=int, default=65, help="revisits per round (one round a day)")
    ap.add_argument("--policies", default="optimal,uniform,proportional")
    ap.add_argument("--estimate", default="bayes", help="--refetch_estimate of the crawls")
    ap.add_argument("--explore", type=float, default=0.1, help="--refetch_explore of the crawls")
    ap.add_argument("--seed", type=int, default=3, help="the simulated web's seed")
    a = ap.parse_args(argv)
    web = SimWebProcess("small", seed=a.seed, clock_file=True, base_rate_per_day=1.0)
    work = Path(tempfile.mkdtemp(prefix="bench_recrawl_"))
    try:
        t0 = web.web.cfg.sim_start
        web.set_time(t0)
        base = work / "day0"
        flags = ["--mode", "incremental", "--max_pages", str(2 * a.budget), "--refetch_share", "0.5"]
        crawlstate.start_crawl(web, base, *flags)
        crawlstate.run_rounds(base, "--until_empty", "--round_time", str(t0), "--max_pages", "1000")
        c = CrawlDir(str(base))
        urls = latest(c.read_table("recrawl", c.last_committed())).column("url").to_pylist()
        index = {web.web.url(i): i for i in range(len(web.web.change_rate))}
        rates = np.array([web.web.change_rate[index[u]] * DAY for u in urls if u in index])
        print(f"small web: {len(urls)} visited pages scheduled, true mean rate {rates.mean():.2f}/day, "
              f"budget {a.budget} revisits/day ({a.budget / len(urls):.2f} per page)")
        print(f"{'policy':>13} {'simulator':>9} {'sim ≤1/day':>10} {'crawl':>9}  (simulator: the policy on "
              f"the true rates, continuous time, then at most one visit per daily round; crawl: true "
              f"time-average freshness, mean over the second half of {a.days} days; then each day's)")
        for name in a.policies.split(","):
            sim = F.average(rates, get_policy(name).frequencies(PageSet(rates), a.budget))[0]
            capped = F.average(rates, within_rounds(get_policy(name), PageSet(rates), a.budget, 1.0))[0]
            d = work / name
            shutil.copytree(base, d)
            fr, nm, saved, revisits = [], 0, 0, 0
            for k in range(1, a.days + 1):
                t = t0 + k * DAY
                fr.append(true_freshness(web, copy_state(d), t - DAY, t))   # the day before round k
                web.set_time(t)
                reps = crawlstate.run_rounds(d, "--rounds", "1", "--round_time", str(t),
                                             "--refetch_policy", name,
                                             "--refetch_estimate", a.estimate,
                                             "--refetch_explore", str(a.explore))
                if reps:   # else nothing was due that day
                    nm += reps[-1]["recrawl"]["not_modified"]
                    saved += reps[-1]["recrawl"]["bytes_saved"]
                    revisits += reps[-1]["recrawl"]["revisited"]
            days = " ".join(f"{x:.2f}" for x in fr)
            late = np.mean(fr[a.days // 2:])
            print(f"{name:>13} {sim:9.4f} {capped:10.4f} {late:9.4f}  {days}  revisits {revisits} 304s {nm} "
                  f"bytes saved {saved}")
    finally:
        web.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
