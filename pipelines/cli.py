"""`beamcrawl` console script: beamcrawl inject|round|crawl|report|evaluate [flags]."""
import importlib
import logging
import sys

COMMANDS = {
    "inject": "pipelines.inject",
    "round": "pipelines.round",
    "crawl": "pipelines.crawl",
    "report": "pipelines.report",
    "evaluate": "pipelines.evaluate",
}


def run_cli(run, argv, describe):
    """An entry point's main(): run(argv), print describe(result); a damaged or missing crawl
    state is one clear line on stderr and exit status 2, not a traceback."""
    from pipelines.crawldir import CrawlStateError
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        result = run(argv)
    except CrawlStateError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(describe(result))
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print("usage: beamcrawl {%s} [flags]   (beamcrawl COMMAND --help lists the flags)"
              % "|".join(COMMANDS), file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[argv[0]])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
