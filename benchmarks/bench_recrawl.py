"""Revisit policies (issue #13): the freshness simulator and the ChangeRatio comparison.

    python -m benchmarks.bench_recrawl [--pages 10000] [--seed 0]

1. Freshness and age per policy for pages with Gamma(0.5, 2) change rates (mean 1/day) at
   0.5, 1 and 2 revisits per page per day: analytic over the law (rates at the midpoints of
   --pages quantiles), analytic over one random draw, and Monte Carlo over that draw.
   `importance` is scored by importance-weighted freshness (weights Pareto); `sampling` and
   `cluster` get host / feature groups of a synthetic web (below) and the true rates.
2. ChangeRatio (changed pages found per page downloaded, Cho & Ntoulas 2002) of `sampling`
   (groups = hosts) and `cluster` (groups = k-means clusters on URL pattern, content type,
   size, depth, host) when change follows page features across hosts, and when it follows
   the host; then on the medium simulated web's pages and true rates (`simweb_change_ratio`).
"""
import argparse

import numpy as np
from scipy.stats import gamma

from strategies.recrawl import PageSet, get_policy
from strategies.recrawl import freshness as F
from strategies.recrawl.changeratio import change_ratio, synthetic_web
from strategies.recrawl.cluster import Cluster

POLICIES = ("optimal", "uniform", "proportional")


def freshness_table(n, seed):
    law = gamma.ppf((np.arange(n) + 0.5) / n, 0.5, scale=2.0)
    rng = np.random.default_rng(seed)
    draw = rng.gamma(0.5, 2.0, n)
    print(f"freshness, {n} pages, Gamma(0.5, 2) rates (draw mean {draw.mean():.3f}/day)")
    print(f"{'per page/day':>12} {'policy':>13} {'law':>7} {'draw':>7} {'MC':>7} {'age (days)':>10}")
    for per_page in (0.5, 1.0, 2.0):
        for name in POLICIES:
            pol = get_policy(name)
            f_law = pol.frequencies(PageSet(law), per_page * n)
            f_draw = pol.frequencies(PageSet(draw), per_page * n)
            fr_law = F.average(law, f_law)[0]
            fr, ag = F.average(draw, f_draw)
            mc = F.simulate(draw, f_draw, 30.0, rng)
            print(f"{per_page:>12} {name:>13} {fr_law:7.4f} {fr:7.4f} {mc:7.4f} {ag:10.3f}")


def importance_table(n, seed):
    rng = np.random.default_rng(seed)
    rates = rng.gamma(0.5, 2.0, n)
    w = rng.pareto(1.5, n) + 1
    print(f"\nimportance-weighted freshness (weights Pareto(1.5)+1), 1 revisit/page/day")
    for name in ("uniform", "optimal", "importance"):
        f = get_policy(name).frequencies(PageSet(rates, weights=w), n)
        print(f"{name:>13} weighted {F.average(rates, f, w)[0]:.4f}  unweighted {F.average(rates, f)[0]:.4f}")


def change_ratio_table(seed):
    print("\nChangeRatio (changed found / downloaded), 4000 pages, 40 hosts, budget 800/cycle, "
          "sample 2 per group, 10 cycles")
    print(f"{'change follows':>15} {'sampling':>9} {'cluster k=40':>13} {'cluster k=80':>13}")
    for driver in ("features", "host"):
        rates, feats, host = synthetic_web(4000, 40, driver, np.random.default_rng(seed + 1))
        row = [change_ratio(host, rates, 800, 2, 10, np.random.default_rng(seed + 2))]
        for k in (40, 80):
            # re-clustered every cycle on the history sampled so far (never the true rates)
            groups = (lambda visits, changes, k=k: Cluster(k=k).group_ids(
                PageSet(np.full(len(rates), np.nan), features=feats, visits=visits, changes=changes)))
            row.append(change_ratio(groups, rates, 800, 2, 10, np.random.default_rng(seed + 2)))
        print(f"{driver:>15} {row[0]:9.3f} {row[1]:13.3f} {row[2]:13.3f}")


def simweb_change_ratio(seed, config="medium"):
    """The same comparison on the simulated web's pages and true change rates (per day;
    one cycle a day, 20 % of the pages per cycle): rates there follow the host (a lognormal
    factor per host) and the page kind (/news/ pages hourly on every host, other files
    static), so neither grouping has it all."""
    from tests.simweb.model import KIND_NAMES, build_web
    from strategies.recrawl.cluster import url_pattern
    web = build_web(config, seed)
    pages = np.flatnonzero(web.dup_of < 0)
    rates = web.change_rate[pages] * 86400.0
    host = web.page_host[pages]
    feats = {"url_pattern": [url_pattern(web.url(int(i))) for i in pages],
             "content_type": [KIND_NAMES[web.kind[i]] for i in pages],
             "depth": web.depth[pages], "host": [f"h{h}" for h in host]}
    budget = len(pages) // 5
    nan = np.full(len(pages), np.nan)
    row = [change_ratio(host, rates, budget, 2, 10, np.random.default_rng(seed + 2))]
    k_hosts = len(np.unique(host))
    for k in (k_hosts, 2 * k_hosts):
        groups = (lambda visits, changes, k=k: Cluster(k=k).group_ids(
            PageSet(nan, features=feats, visits=visits, changes=changes)))
        row.append(change_ratio(groups, rates, budget, 2, 10, np.random.default_rng(seed + 2)))
    print(f"\nChangeRatio on the {config} simulated web (seed {seed}): {len(pages)} pages, {k_hosts} "
          f"hosts, budget {budget}/cycle (one cycle a day), sample 2 per group, 10 cycles")
    print(f"{'':>15} {'sampling':>9} {f'cluster k={k_hosts}':>13} {f'cluster k={2 * k_hosts}':>13}")
    print(f"{'simulated web':>15} {row[0]:9.3f} {row[1]:13.3f} {row[2]:13.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    freshness_table(a.pages, a.seed)
    importance_table(a.pages, a.seed)
    change_ratio_table(a.seed)
    simweb_change_ratio(a.seed + 1)


if __name__ == "__main__":
    main()
