"""Real incremental crawls of the small simulated web over simulated days, one per revisit
policy, from one shared day-0 crawl: the true freshness of the copy each day (a visited
page is fresh when the web's change_times show no change since its last visit), beside
the simulator's analytic freshness for the web's true rates and the same budget, and the
304 byte savings.

    python -m benchmarks.bench_recrawl_crawl [--days 5] [--budget 20]
"""
import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np

from pipelines.crawldir import CrawlDir
from strategies.recrawl import PageSet, get_policy
from strategies.recrawl import freshness as F
from tests.e2e import crawlstate
from tests.simweb.process import SimWebProcess
from transforms.recrawl.state import latest

DAY = 86400.0


def true_freshness(web, crawl_dir, now):
    c = CrawlDir(str(crawl_dir))
    state = latest(c.read_table("recrawl", c.last_committed()))
    index = {web.web.url(i): i for i in range(len(web.web.change_rate))}
    fresh = [not web.web.change_times(index[u], t, now)
             for u, t in zip(state.column("url").to_pylist(), state.column("last_visit").to_pylist())
             if u in index]
    return float(np.mean(fresh)), len(fresh)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=5)
    ap.add_argument("--budget", type=int, default=20, help="revisits per round (one round a day)")
    ap.add_argument("--policies", default="optimal,uniform,proportional")
    a = ap.parse_args(argv)
    web = SimWebProcess("small", seed=3, clock_file=True, base_rate_per_day=1.0)
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
        print(f"{'policy':>13} {'simulator':>9} {'crawl, true freshness day 1..' + str(a.days):>40} "
              f"{'mean d2+':>8} {'304s':>5} {'bytes saved':>11}")
        for name in a.policies.split(","):
            sim = F.average(rates, get_policy(name).frequencies(PageSet(rates), a.budget))[0]
            d = work / name
            shutil.copytree(base, d)
            fr, nm, saved = [], 0, 0
            for k in range(1, a.days + 1):
                t = t0 + k * DAY
                web.set_time(t)
                rep = crawlstate.run_rounds(d, "--rounds", "1", "--round_time", str(t),
                                            "--refetch_policy", name)[-1]
                nm += rep["recrawl"]["not_modified"]
                saved += rep["recrawl"]["bytes_saved"]
                fr.append(true_freshness(web, d, t)[0])
            days = " ".join(f"{x:.3f}" for x in fr)
            print(f"{name:>13} {sim:9.4f} {days:>40} {np.mean(fr[1:]):8.4f} {nm:5d} {saved:11d}")
    finally:
        web.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
