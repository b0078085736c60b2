"""The deep-web targets of issue #17, measured on the simulated web in memory.

    .venv/bin/python -m benchmarks.bench_deepweb                 # jobs 10 000 records, library 12 000
    .venv/bin/python -m benchmarks.bench_deepweb --records 20000 --seed 2

The crawl's own planner (strategies.deepweb) and page parser (transforms.page.parse with
deep_web) run round by round against the sites' `respond` (tests/unit/deepweb_fake.py):
every emitted submission and result page is fetched and digested, as a round would, but
without sockets or politeness delays (per-host politeness is checked on the server log by
tests/e2e/test_deep_web.py). Targets:

  S   templates containing sort fail the informativeness test (jobs)
  I   ISIT submits <= 10 % of the URLs of the Cartesian product of the selects and reaches
      >= 90 % of the records (jobs; keyword probing off)
  K   keyword probing alone reaches >= 90 % of the records in <= 100 queries on a Zipf
      vocabulary (library: 12 000 books, 5 000 words, exponent 1; one seed word), and on
      the jobs site from the words of its form page
  L   the second form (library, another layout) with the default settings: records reached
  N   on a jobs site whose result pages state no count, templates containing sort still fail
      (the second look of strategies/deepweb/ordercheck.py)

Each line prints its figures and PASS/FAIL; nothing is tuned to make a target hold.

`--crawl` instead crawls the jobs site (and the library) with real rounds (`pipelines.crawl`,
`--deep_web forms`, the default settings but for loopback, `--delay_per_host`
and `--max_per_host`) and reads the server's request log: submissions, records reached,
the smallest gap between two requests to one host, the most requests in flight to one host,
and the POSTs per host (`--post_hosts library.simweb.test` lets the library's POST form be
submitted).
"""
from __future__ import annotations

import argparse
import time

from strategies.deepweb import planner
from strategies.deepweb.templates import binding_inputs
from tests.simweb import build_web
from tests.simweb.library import catalogue
from tests.unit.deepweb_fake import form_of, judge_template, probe

JOBS, LIBRARY = "http://jobs.simweb.test/", "http://library.simweb.test/"


def _ok(b):
    return "PASS" if b else "FAIL"


def coverage_after(state, n_queries):
    """Records found by the first n keyword queries (each credited with its pages' new records)."""
    total, n = 0, 0
    for form in state["forms"].values():
        for batch in form.get("kw", {}).get("batches", []):
            for u in batch["queries"]:
                if n < n_queries:
                    total += state["queries"][u]["new"]
                n += 1
    return total, n


def run(records=10_000, library_records=12_000, seed=1, words_per_round=10):
    web = build_web("small", seed=seed, n_records=records, library=True, library_records=library_records)
    jobs_truth = set(web.ground_truth()["records"].column("url").to_pylist())
    lib_truth = set(web.ground_truth()["library_records"].column("url").to_pylist())
    cfg = planner.ProbeConfig(words_per_round=words_per_round)
    form = form_of(web, JOBS)
    inputs = binding_inputs(form)
    product = 1
    for name in ("category", "industry", "city"):
        product *= len(inputs[name])
    full = product * len(inputs["sort"])
    with_any = (len(inputs["category"]) + 1) * (len(inputs["industry"]) + 1) * (len(inputs["city"]) + 1) * len(inputs["sort"])

    t = time.time()
    fails = []
    for template in (("sort",), ("category", "sort"), ("industry", "sort"), ("city", "sort"),
                     ("category", "industry", "sort"), ("category", "city", "sort")):
        got = judge_template(web, form, template, cfg)
        if got["informative"]:
            fails.append(template)
        print(f"  {','.join(template):24s} share {got['share']:.3f}  marginal {got['marginal']}  "
              f"informative {got['informative']}")
    for template in (("category",), ("industry",), ("city",), ("category", "industry")):
        got = judge_template(web, form, template, cfg)
        print(f"  {','.join(template):24s} share {got['share']:.3f}  marginal {got['marginal']}  "
              f"informative {got['informative']}")
    print(f"S  templates with sort informative: {len(fails)} of 6  {_ok(not fails)}")

    state, stats = probe(web, JOBS, planner.ProbeConfig(keywords=False, words_per_round=words_per_round))
    reached = len(stats["reached"] & jobs_truth) / len(jobs_truth)
    sub = stats["submissions"]
    temps = next(iter(state["templates"].values()))
    print("  templates: " + ", ".join(f"{n} {t['status']} ({t.get('share')}, {t.get('marginal')})"
                                      for n, t in temps.items()))
    print(f"I  ISIT (jobs, {len(jobs_truth)} records): {sub} submissions = {sub / product:.1%} of the "
          f"{product} binding combinations ({sub / full:.1%} of {full} with sort, {sub / with_any:.1%} of "
          f"{with_any} with 'Any' and sort); {stats['fetched'] - sub} result pages after the first; "
          f"records reached {reached:.1%}; {stats['rounds']} rounds  {_ok(sub <= 0.1 * product and reached >= 0.9)}")

    nc = build_web("small", seed=seed, n_records=records, jobs_count=False)
    state, stats = probe(nc, JOBS, planner.ProbeConfig(keywords=False, words_per_round=words_per_round))
    temps = next(iter(state["templates"].values()))
    with_sort = [n for n, t in temps.items() if "sort" in n.split(",") and t["status"] != "uninformative"]
    nc_truth = set(nc.ground_truth()["records"].column("url").to_pylist())
    print("  second look: " + ", ".join(f"{n} {t['status']} (order marginal {t.get('order_marginal')})"
                                        for n, t in temps.items() if t["dim"] == 1))
    print(f"N  no stated count (jobs, jobs_count=false): templates with sort not failed: {len(with_sort)}; "
          f"{stats['submissions']} submissions, records reached "
          f"{len(stats['reached'] & nc_truth) / len(nc_truth):.1%}  {_ok(not with_sort)}")

    seed_word = catalogue(web).vocab[30]
    for wpr in (words_per_round, 1):
        state, stats = probe(web, LIBRARY, planner.ProbeConfig(templates=False, seed_words=(seed_word,),
                                                               words_per_round=wpr), max_rounds=5000)
        got, n = coverage_after(state, 100)
        share = got / len(lib_truth)
        print(f"K  keywords alone (library, {len(lib_truth)} books, Zipf vocabulary, seed {seed_word!r}, "
              f"{wpr} per batch): {n} queries in all, reached {len(stats['reached'] & lib_truth) / len(lib_truth):.1%}; "
              f"after the first {min(n, 100)} queries {share:.1%}  {_ok(share >= 0.9)}")
    state, stats = probe(web, JOBS, planner.ProbeConfig(templates=False, words_per_round=words_per_round))
    got, n = coverage_after(state, 100)
    print(f"K  keywords alone (jobs, seeds from the form page): {n} queries, after the first {min(n, 100)} "
          f"{got / len(jobs_truth):.1%}  {_ok(got / len(jobs_truth) >= 0.9)}")

    state, stats = probe(web, LIBRARY, cfg)
    temps = next(iter(state["templates"].values()))
    reached = len(stats["reached"] & lib_truth) / len(lib_truth)
    print("  templates: " + ", ".join(f"{n} {t['status']}" for n, t in temps.items()))
    print(f"L  library with the defaults: {stats['submissions']} submissions, {stats['fetched']} fetches, "
          f"reached {reached:.1%}  {_ok(reached >= 0.9)}")
    print(f"({time.time() - t:.0f} s)")


def crawl(records=10_000, library_records=12_000, seed=1, delay=0.01, max_per_host=2000, rounds=40,
          post_hosts=""):
    import tempfile

    from pipelines import crawl as crawl_mod, inject
    from pipelines.crawldir import CrawlDir
    from tests.simweb import requestlog
    from tests.simweb.process import SimWebProcess
    web = SimWebProcess("small", seed=seed, n_records=records, library=True, library_records=library_records)
    try:
        d = tempfile.mkdtemp(prefix="deepweb-") + "/crawl"
        args = ["--crawl_dir", d, "--resolve_file", str(web.hostmap_file), "--allow_loopback", "true",
                "--deep_web", "forms", "--delay_per_host", str(delay), "--max_per_host", str(max_per_host),
                "--max_pages", str(4 * max_per_host), "--allow_hosts", "jobs.simweb.test,library.simweb.test",
                "--deep_web_post_hosts", post_hosts]
        seeds = [f"http://{h}.simweb.test:{web.port}/" for h in ("jobs", "library")]
        t = time.time()
        assert inject.main(args + [a for s in seeds for a in ("--seed", s)]) == 0
        reports = crawl_mod.run_crawl(["--crawl_dir", d, "--until_empty", "--rounds", str(rounds)], out=lambda s: None)
        log = [r for r in web.requests() if r["start"] >= t]
        c = CrawlDir(d)
        visited = set(c.read_table("visited", c.last_committed(), columns=["url"]).column("url").to_pylist())
        gaps = requestlog.min_gap_per_host(log, measure="end")
        conc = requestlog.max_concurrency_per_host(log)
        for host, table, form_path in (("jobs", "records", "/search"), ("library", "library_records", "/catalogue/find")):
            truth = set(web.ground_truth[table].column("url").to_pylist())
            got = len(truth & visited) / len(truth)
            hl = [r for r in log if r["host"].lower().startswith(host + ".")]
            subs = sum(r["path"].startswith(form_path) for r in hl)
            print(f"C  {host}: {len(hl)} requests ({subs} to {form_path}), records reached {got:.1%}, "
                  f"smallest gap {min(v for k, v in gaps.items() if k.startswith(host)):.4f} s "
                  f"(delay {delay}), most in flight {max(v for k, v in conc.items() if k.startswith(host))}, "
                  f"POST {sum(r['method'] != 'GET' for r in hl)}")
        dw = reports[-1]["deep_web"]
        print(f"C  {len(reports)} rounds, {dw.get('submissions')} submissions, {time.time() - t:.0f} s; crawl dir {d}")
    finally:
        web.stop()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--library_records", type=int, default=12_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--words_per_round", type=int, default=10)
    ap.add_argument("--crawl", action="store_true", help="real rounds over the served web instead")
    ap.add_argument("--delay", type=float, default=0.01)
    ap.add_argument("--post_hosts", default="", help="--crawl: --deep_web_post_hosts (e.g. library.simweb.test)")
    a = ap.parse_args(argv)
    if a.crawl:
        crawl(a.records, a.library_records, a.seed, a.delay, post_hosts=a.post_hosts)
    else:
        run(a.records, a.library_records, a.seed, a.words_per_round)


if __name__ == "__main__":
    main()
