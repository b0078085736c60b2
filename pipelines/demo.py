"""`make demo`: start the simulated web on loopback, crawl it for a few rounds, print reports.

    python -m pipelines.demo [--config small|medium] [--rounds 4] [--crawl_dir demo-crawl]

Everything stays on 127.0.0.0/8: the simulated web (tests/simweb) binds loopback addresses
only and the crawler reaches its host names through --resolve_file.
"""
import argparse
import shutil
import sys
from pathlib import Path

from pipelines import crawl as crawl_mod
from pipelines import inject
from pipelines import report as report_mod
from pipelines.crawldir import CrawlDir


def main(argv=None):
    parser = argparse.ArgumentParser(prog="beamcrawl demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="medium", help="simulated web size (default: medium)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--max_pages", type=int, default=400)
    parser.add_argument("--crawl_dir", default="demo-crawl")
    args = parser.parse_args(argv)

    from tests.simweb.process import SimWebProcess  # the simulated web ships in tests/
    crawl_dir = Path(args.crawl_dir).resolve()
    shutil.rmtree(crawl_dir, ignore_errors=True)
    print(f"starting the simulated web ({args.config}, seed {args.seed}) on loopback ...")
    web = SimWebProcess(args.config, seed=args.seed, workdir=crawl_dir.parent / (crawl_dir.name + "-simweb"))
    try:
        print(f"  {len(web.hostmap_lines)} hosts, host map in {web.hostmap_file}")
        flags = ["--crawl_dir", str(crawl_dir), "--resolve_file", str(web.hostmap_file),
                 "--allow_loopback", "true", "--delay_per_host", "0.2", "--max_pages", str(args.max_pages),
                 "--max_per_host", "50", "--allow_domains", "simweb.test"]
        if inject.main(flags + [a for s in web.seeds for a in ("--seed", s)]) != 0:
            return 1
        crawl_mod.run_crawl(["--crawl_dir", str(crawl_dir), "--rounds", str(args.rounds)])
        c = CrawlDir(str(crawl_dir))
        truth = crawl_dir.parent / (crawl_dir.name + "-simweb") / "truth"
        web.web.export(truth)
        final = report_mod.with_ground_truth(c, c.read_report(c.last_committed()), str(truth))
        print("\nlast round against the simulated web's ground truth:")
        print(report_mod.summary(final))
        print(f"\ncrawl directory: {crawl_dir}")
        print(f"  python -m pipelines.report --crawl_dir {crawl_dir} --json")
        print(f"  duckdb -c \"SELECT outcome, count(*) FROM '{crawl_dir}/rounds/*/visited/*.parquet' GROUP BY 1\"")
    finally:
        web.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
