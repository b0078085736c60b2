"""The command line of every entry point, and the `beamcrawl` console script.

    beamcrawl inject|round|crawl|report|evaluate|demo|show [flags]

Our flags are parsed first by our own parser (built from pipelines.settings), so `--help`
lists them and a misspelt flag is an error, not a silently dropped option. What remains
must be a flag some Beam PipelineOptions class defines; only that is handed to Beam.
Every user-facing failure is one line `error: ...` on stderr and exit status 2.

Importing this module quiets the log lines Beam prints at import time (apitools / bigquery
client not found), so entry points import it before anything that imports Beam.
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import sys
from dataclasses import dataclass

from pipelines import endpoints
from pipelines.settings import (
    COMMAND_FLAGS,
    GROUPS,
    ROUND_SETTINGS,
    USAGE,
    UsageError,
    parse_bool,
)

# Flags a crawl no longer has, refused with the reason (a crawl.json naming one: the value is unused)
RETIRED = {"fetch_engine": "removed: every request is sent by libcurl (pycurl), the fastest engine "
                           "measured (benchmarks/RESULTS.md); drop the flag"}

COMMANDS = {
    "inject": "pipelines.inject",
    "round": "pipelines.round",
    "crawl": "pipelines.crawl",
    "report": "pipelines.report",
    "evaluate": "pipelines.evaluate",
    "demo": "pipelines.demo",
    "show": "pipelines.show",
}
IMPORT_NOISE = ("apitools not found", "bigquery client libraries are not available")


class _DropImportNoise(logging.Filter):
    def filter(self, record):
        return not any(text in str(record.msg) for text in IMPORT_NOISE)


def quiet_import_noise():
    """Our log format on stderr, without the warnings Beam logs while it is imported."""
    root = logging.getLogger()
    if not any(isinstance(f, _DropImportNoise) for f in root.filters):
        root.addFilter(_DropImportNoise())
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


quiet_import_noise()


class Notice(Exception):
    """A command that had nothing to do: its message is printed and the exit status is 0."""


class FlagParser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line) instead of printing usage and exiting,
    and names the closest flag for a misspelt one."""

    def error(self, message):
        raise UsageError(f"{message}; see `{self.prog} --help`")

    def parse_args(self, args=None, namespace=None):
        known, unknown = self.parse_known_args(args, namespace)
        if unknown:
            _refuse_unknown(self.prog, unknown, _flag_names(self), [])
        return known


def parse_flags(parser, argv):
    """parser.parse_args(argv) for a main() that returns its exit status: None and one
    line `error: ...` on stderr for a bad command line."""
    try:
        return parser.parse_args(argv)
    except UsageError as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return None


@dataclass
class CommandLine:
    command: str
    values: dict      # every flag of the command (round settings only when given)
    given: dict       # round settings given on the command line, typed and checked
    beam_argv: list   # the flags handed to Beam


def _help(setting):
    default = "required" if setting.default_text() == "required" else f"default: {setting.default_text()}"
    return f"{setting.help} ({default})".replace("%", "%%")


def _add_flag(group, setting):
    if setting.type is parse_bool:
        group.add_argument(setting.flag, dest=setting.name, nargs="?", const="true", default=None,
                           metavar="true|false", help=_help(setting))
        group.add_argument(f"--no-{setting.name}", dest=setting.name, action="store_const",
                           const="false", help=f"Same as {setting.flag}=false.")
    elif setting.name == "seed":
        group.add_argument(setting.flag, dest="seed", action="append", default=None, metavar="URL",
                           help=_help(setting))
    else:
        group.add_argument(setting.flag, dest=setting.name, default=None,
                           metavar=setting.name.upper(), help=_help(setting))


def build_parser(command):
    """Our parser for `command`: its own flags, then the round settings by group."""
    parser = FlagParser(prog=f"beamcrawl {command}", description=USAGE[command], allow_abbrev=False,
                        usage=f"beamcrawl {command} --crawl_dir DIR [flags]   (or python -m pipelines.{command})")
    own = parser.add_argument_group(f"{command} flags")
    for setting in COMMAND_FLAGS[command]:
        if setting.group == "command":
            _add_flag(own, setting)
    groups = {name: parser.add_argument_group(name, text) for name, text in GROUPS.items()}
    for setting in ROUND_SETTINGS.values():
        _add_flag(groups[setting.group], setting)
    for setting in COMMAND_FLAGS[command]:
        if setting.group != "command":
            _add_flag(groups[setting.group], setting)
    return parser


def beam_parser():
    """A parser holding every flag of every Beam PipelineOptions class, collected as Beam
    itself does (each class's _add_argparse_args)."""
    from apache_beam.options.pipeline_options import (
        PipelineOptions,
        _BeamArgumentParser,
    )
    parser = _BeamArgumentParser(allow_abbrev=False, add_help=False, conflict_handler="resolve")
    todo, seen = list(PipelineOptions.__subclasses__()), set()
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if str(cls) in seen or "_add_argparse_args" not in cls.__dict__:
            continue
        seen.add(str(cls))
        try:
            cls._add_argparse_args(parser)
        except (argparse.ArgumentError, TypeError, ValueError):
            pass   # a third-party options class whose flags clash: Beam would fail on it anyway
    return parser


def _flag_names(parser):
    return [s for a in parser._actions for s in a.option_strings if s.startswith("--")]


def _refuse_unknown(prog, unknown, ours, beams):
    for arg in unknown:
        if arg == "--":
            break
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]
            if name[2:] in RETIRED:
                raise UsageError(f"{name} was {RETIRED[name[2:]]}")
            close = difflib.get_close_matches(name, ours + beams, n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}?" if close else f"see `{prog} --help`"
            raise UsageError(f"unknown flag {name}; {hint}")
    raise UsageError(f"unexpected argument {unknown[0]!r}; flags take the form --name value "
                     f"(see `{prog} --help`)")


def _refuse_other_commands_flag(command, arg):
    name = arg.split("=", 1)[0]
    for other, flags in COMMAND_FLAGS.items():
        if other != command and name in {s.flag for s in flags} - {s.flag for s in COMMAND_FLAGS[command]}:
            raise UsageError(f"{name} is a flag of `beamcrawl {other}`, not of `beamcrawl {command}`")


BEAM_DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"


def _import_runner(rest):
    """A runner given by module path (`--runner pipelines.daskrunner.DaskRunner`) defines its
    options (--dask_client_address) in its module: import it so they are known. Beam's own
    DaskRunner is refused (its bugs would commit a wrong round)."""
    for i, arg in enumerate(rest):
        value = (arg.split("=", 1)[1] if arg.startswith("--runner=") else
                 rest[i + 1] if arg == "--runner" and i + 1 < len(rest) else None)
        if value and (value.lower() in ("dask", "daskrunner") or value == BEAM_DASK_RUNNER):
            raise UsageError(f"--runner {value}: Beam 2.77's own DaskRunner loses outputs and recomputes "
                             f"side inputs (docs/beam-dask-bugs.md); use --runner "
                             f"pipelines.daskrunner.DaskRunner")
        if value and "." in value:
            module = value.rsplit(".", 1)[0]
            try:
                importlib.import_module(module)
            except ImportError as e:
                raise UsageError(f"--runner {value}: cannot import {module} ({e}); install the "
                                 f"runner's package (e.g. apache-beam[dask] for the DaskRunner)") from None


def parse_command_line(command, argv):
    """Our flags typed and checked, and the rest (Beam's flags) left for Beam."""
    parser = build_parser(command)
    known, rest = parser.parse_known_args(list(argv))
    if rest:
        _import_runner(rest)
        _, unknown = beam_parser().parse_known_args(rest)
        if unknown:
            _refuse_other_commands_flag(command, unknown[0])
            _refuse_unknown(parser.prog, unknown, _flag_names(parser), _flag_names(beam_parser()))
    raw = vars(known)
    given = {name: s.coerce(raw[name]) for name, s in ROUND_SETTINGS.items() if raw[name] is not None}
    values = dict(given)
    for s in COMMAND_FLAGS[command]:
        value = raw[s.name]
        if s.name == "seed":
            values["seed"] = [s.coerce(v) for v in value or ()]
        else:
            values[s.name] = s.default if value is None else s.coerce(value)
    if not values.get("crawl_dir"):
        raise UsageError(f"--crawl_dir is required: a local path or gs://, s3://, ... URL "
                         f"(see `beamcrawl {command} --help`)")
    use_storage(values["crawl_dir"], rest)
    endpoints.check(rest)
    return CommandLine(command, values, given, rest)


def use_storage(crawl_dir, beam_argv):
    """Beam's filesystem options (`--s3_*` ...) set in this process for `crawl_dir`, which
    is checked (pipelines.storage): before the command reads or writes anything."""
    from pipelines import storage
    storage.check(crawl_dir, storage.use(beam_argv))


def parse_with_beam_flags(parser, argv):
    """(`parser`'s flags parsed, Beam's flags among argv): for a command with a parser of
    its own (report, show) that takes Beam's filesystem flags too. Beam's flags are taken
    out with their values first, so a flag's value is never taken for a positional
    argument; anything else unknown is refused by `parser`."""
    ours = set(_flag_names(parser))
    beams = {s: a for a in beam_parser()._actions for s in a.option_strings}
    mine, theirs, i = [], [], 0
    argv = list(sys.argv[1:] if argv is None else argv)   # None: the command line, as argparse
    while i < len(argv):
        name = argv[i].split("=", 1)[0]
        if name.startswith("--") and name not in ours and name in beams:
            n = 1 + (beams[name].nargs != 0 and "=" not in argv[i])
            theirs += argv[i:i + n]
            i += n
        else:
            mine.append(argv[i])
            i += 1
    return parser.parse_args(mine), theirs


def one_line(error):
    return " ".join(str(error).split()) or type(error).__name__


def run_cli(run, argv, describe):
    """An entry point's main(): run(argv), print describe(result). A bad invocation or a
    damaged crawl state is one line `error: ...` on stderr and exit status 2."""
    from pipelines.config import ConfigError
    from pipelines.crawldir import CrawlStateError
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        result = run(argv)
    except SystemExit as e:   # --help
        return e.code or 0
    except Notice as e:
        print(e)
        return 0
    except (UsageError, ConfigError, CrawlStateError) as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    print(describe(result))
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: beamcrawl {{{'|'.join(COMMANDS)}}} [flags]   (beamcrawl COMMAND --help lists the flags)",
              file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[argv[0]])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
