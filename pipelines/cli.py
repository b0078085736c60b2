"""`beamcrawl` console script: beamcrawl inject|round|crawl|report|evaluate [flags]."""
import importlib
import sys

COMMANDS = {
    "inject": "pipelines.inject",
    "round": "pipelines.round",
    "crawl": "pipelines.crawl",
    "report": "pipelines.report",
    "evaluate": "pipelines.evaluate",
}


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
