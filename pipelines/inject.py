"""Start a crawl (round 0) or add seeds to one (a new round that fetches nothing).

    python -m pipelines.inject --crawl_dir D --seeds FILE | --seed URL [--seed URL ...] [round flags]

Round flags given here (scope, strategy, politeness, --resolve_file ...) become the crawl's
defaults in crawl.json, so later `round`/`crawl` runs need only --crawl_dir; on an existing
crawl each changed default is printed. Everything is checked before anything is written.
Seeds go through the same normalise / filter / URL-seen path as links: a seed already known
is not added twice (and reported as known), an out-of-scope one is not injected.
"""
import os
import sys
import time

# pipelines.cli first: it quiets the log lines Beam prints while it is imported
from pipelines import cli, fleet

# isort: split
from apache_beam.io.filesystems import FileSystems

from pipelines import report as report_mod
from pipelines.crawldir import DELTA_TABLES, CrawlDir
from pipelines.round import round_config
from pipelines.roundpipeline import budget_sizes, build_round, plan_round
from pipelines.runner import run_pipeline
from pipelines.sweep import sweep
from pipelines.settings import ROUND_SETTINGS, UsageError, effective_round_settings
from schemas import tables
from transforms.urls import canonical as urls_mod


def read_seed_lines(path):
    try:
        with FileSystems.open(path) as f:
            text = f.read().decode("utf-8-sig")
    except Exception as e:
        raise UsageError(f"--seeds {path}: cannot read this file ({type(e).__name__}); "
                         "give a readable text file with one URL per line") from e
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def seed_bundles(raw_urls, url_filter):
    """Normalised seed bundles for the candidates path, and (url, reason) of rejected ones."""
    kept, rejected = [], []
    for raw in raw_urls:
        url = urls_mod.normalize(raw)
        if url is None:
            rejected.append((raw, "not an absolute http(s) URL"))
            continue
        why = url_filter.reason(url, 0)
        if why is not None:
            rejected.append((url, why))
            continue
        kept.append(url)
    kept = list(dict.fromkeys(kept))
    bundles = [{"src": None, "src_fp": 0, "depth": 0, "source": tables.SOURCE_SEED,
                "redirects": 0, "dst": kept, "anchor": [""] * len(kept)}] if kept else []
    return bundles, rejected


def _check_crawl_dir_path(path):
    if "://" not in path and os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--crawl_dir {path} is a file, not a directory; give a new or "
                         "existing crawl directory")


def changed_defaults(old_defaults, new_defaults):
    """(flag, old, new) of each round default the new defaults change."""
    old = effective_round_settings({}, old_defaults)
    new = effective_round_settings({}, new_defaults)
    return [(ROUND_SETTINGS[k].flag, old[k], new[k]) for k in ROUND_SETTINGS if old[k] != new[k]]


def run_inject(argv):
    cmd = cli.parse_command_line("inject", argv)
    path = cmd.values["crawl_dir"]
    _check_crawl_dir_path(path)
    crawl = CrawlDir(path)
    raw = list(cmd.values["seed"])
    if cmd.values["seeds"]:
        raw.extend(read_seed_lines(cmd.values["seeds"]))
    if not raw:
        raise UsageError("no seeds: give --seeds FILE or --seed URL")
    existing = crawl.exists()
    config = crawl.read_config() if existing else {"created": time.time()}
    old_defaults = config.get("round_defaults", {})
    new_defaults = dict(old_defaults, **cmd.given)
    settings = effective_round_settings({}, new_defaults)
    changes = changed_defaults(old_defaults, new_defaults) if existing else []
    prev = crawl.last_committed() if existing else None
    round_no = 0 if prev is None else prev + 1
    now = time.time()
    cfg = round_config(settings, round_no, now)
    bundles, rejected = seed_bundles(raw, cfg.scope)
    if not bundles:
        url, why = rejected[0]
        raise UsageError(f"none of the {len(raw)} seeds is an in-scope http(s) URL (e.g. {url}: {why}); "
                         "nothing was written")
    fleet.check_layout(crawl, cfg.shard)
    plan = plan_round(crawl, prev)
    # checked: from here on, write
    for url, why in rejected:
        print(f"warning: seed {url} not injected: {why}", file=sys.stderr)
    if not existing or changes:
        crawl.write_config(dict(config, round_defaults=new_defaults))
    crawl.discard_uncommitted(round_no)
    sweep(crawl, prev)
    attempt = crawl.new_attempt()
    crawl.write_json(round_no, "options.json", settings)
    fleet.write_read_through(crawl, round_no, cfg.shard, fleet.read_through(crawl, prev))
    run_pipeline(lambda p: build_round(p, crawl, cfg, plan, attempt, seeds=bundles, do_fetch=False),
                 cmd.beam_argv, eager_heap=budget_sizes(cfg.memory_mb)["eager_heap"])
    report = report_mod.round_report(crawl, round_no, prev, settings, now, time.time())
    report["injected"] = len(bundles[0]["dst"])
    report["forwarded_seeds"] = int(report["stats"].get("forwarded_urls", 0))   # other shards' hosts
    report["known_seeds"] = report["injected"] - report["new_urls"] - report["forwarded_seeds"]
    report["changed_defaults"] = [[flag, old, new] for flag, old, new in changes]
    crawl.commit(round_no, report, crawl.read_parts(round_no, attempt),
                 full_tables=() if prev is not None else DELTA_TABLES)
    sweep(crawl, round_no)
    return report


def _shown(value):
    return "(built-in)" if value is None else repr(value) if value == "" else str(value)


def describe(report):
    lines = [f"changed default {flag}: {_shown(old)} -> {_shown(new)}"
             for flag, old, new in report["changed_defaults"]]
    known = report["known_seeds"]
    lines.append(f"round {report['round']}: injected {report['new_urls']} new seeds"
                 + (f", {known} already known (not added again)" if known else "")
                 + (f", {report['forwarded_seeds']} sent to the shards that own their hosts"
                    if report.get("forwarded_seeds") else "")
                 + f"; frontier {report['frontier_size']} URLs")
    return "\n".join(lines)


def main(argv=None):
    return cli.run_cli(run_inject, argv, describe)


if __name__ == "__main__":
    sys.exit(main())
