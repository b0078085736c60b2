"""`make demo`: start the simulated web on loopback, crawl it for a few rounds, print reports.

    python -m pipelines.demo [--config small|medium] [--rounds 4] [--crawl_dir demo-crawl]

Everything stays on 127.0.0.0/8: the simulated web (tests/simweb) binds loopback addresses
only and the crawler reaches its host names through --resolve_file. The simulated web
ships only in a source checkout, so it is imported when the demo runs, never before.
"""
import importlib
import os
import shlex
import shutil
import sys
from pathlib import Path

# pipelines.cli first: it quiets the log lines Beam prints while it is imported
from pipelines import cli

SIMWEB = "tests.simweb.process"   # by name: installed packages never import tests/
DUCKDB_QUERY = ("import duckdb, sys; duckdb.sql('SELECT outcome, count(*) AS pages FROM read_parquet(?) "
                "GROUP BY 1 ORDER BY 2 DESC', params=[sys.argv[1]]).show()")


def python_command():
    """How to call this interpreter from a fresh shell in the current directory."""
    venv = Path(".venv/bin/python")
    if venv.exists() and Path(sys.executable).resolve() == venv.resolve():
        return str(venv)
    return shlex.quote(sys.executable)


def next_commands(crawl_dir, python=None):
    """Shell commands that open the demo's crawl: its last report, and its visited table
    through python's duckdb module (no duckdb CLI needed)."""
    py = python or python_command()
    d = shlex.quote(str(crawl_dir))
    visited = shlex.quote(f"{crawl_dir}/rounds/*/visited/*.parquet")
    return [f"{py} -m pipelines.report --crawl_dir {d} --json",
            f"{py} -c \"{DUCKDB_QUERY}\" {visited}"]


def load_simweb():
    """The simulated web's process class, or None outside a source checkout."""
    try:
        return importlib.import_module(SIMWEB).SimWebProcess
    except ImportError:
        return None


def main(argv=None):
    parser = cli.FlagParser(prog="beamcrawl demo", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--config", default="medium", help="simulated web size: small or medium (default: medium)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the simulated web (default: 1)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds to crawl (default: 4)")
    parser.add_argument("--max_pages", type=int, default=400, help="URLs fetched per round (default: 400)")
    parser.add_argument("--crawl_dir", default="demo-crawl", help="crawl directory, replaced (default: demo-crawl)")
    args = cli.parse_flags(parser, argv)
    if args is None:
        return 2
    SimWebProcess = load_simweb()
    if SimWebProcess is None:
        print("error: the demo needs a source checkout: it runs the simulated web in tests/simweb, "
              "which an installed beamcrawl does not include; clone the repository and run `make demo`",
              file=sys.stderr)
        return 2
    from pipelines import crawl as crawl_mod
    from pipelines import inject
    from pipelines import report as report_mod
    from pipelines.crawldir import CrawlDir

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
        if crawl_mod.main(["--crawl_dir", str(crawl_dir), "--rounds", str(args.rounds)]) != 0:
            return 1
        c = CrawlDir(str(crawl_dir))
        truth = crawl_dir.parent / (crawl_dir.name + "-simweb") / "truth"
        web.web.export(truth)
        final = report_mod.with_ground_truth(c, c.read_report(c.last_committed()), str(truth))
        print("\nlast round against the simulated web's ground truth:")
        print(report_mod.summary(final))
        shown = os.path.relpath(crawl_dir) if crawl_dir.is_relative_to(Path.cwd()) else crawl_dir
        print(f"\ncrawl directory: {crawl_dir}\nnext, from this directory:")
        for command in next_commands(shown):
            print(f"  {command}")
    finally:
        web.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
