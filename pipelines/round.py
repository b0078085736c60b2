"""One crawl round: frontier(N-1) -> fetch -> parse -> URL-seen -> score -> round N.

    python -m pipelines.round --runner=DirectRunner --crawl_dir D [flags]

The round reads only committed round N-1, writes everything under rounds/N/, and commits
by writing report.json and then _COMMITTED, the manifest of the files this run listed
(pipelines/crawldir.py: no rename, no listing). A crashed run leaves an uncommitted folder
that the next run deletes before starting, so rerunning gives the same state. Every flag
is checked, and the round is skipped when nothing is due, before anything is written.
The pipeline itself is wired in pipelines.roundpipeline.
"""
import logging
import sys
import time

# pipelines.cli first: it quiets the log lines Beam prints while it is imported
from pipelines import cli, fleet, roundsize
from pipelines import focused
from pipelines import report as report_mod
from pipelines.config import ConfigError, RoundConfig
from pipelines.crawldir import CrawlDir, CrawlStateError
from pipelines.frontierlayout import frontier_as_delta
from pipelines.hostslayout import hosts_as_delta
from pipelines.revisits import COMPACTED_FILE, plan_revisits, write_compaction
from pipelines.roundpipeline import (build_round, budget_sizes, changed_refusal_settings, discard_spill,
                                    plan_round)
from pipelines.runner import run_pipeline
from pipelines.sweep import sweep
from pipelines.settings import UsageError, effective_round_settings
from transforms import faults
from transforms.fetch.fetchproc import fetch_processes
from transforms.generate.select import due_mask
from transforms.page.pool import auto_processes
from transforms.procs import HELPERS_MIN_PAGES, resolved

LOG = logging.getLogger("beamcrawl.round")
LOOPBACK_NOTE = "note: --allow_loopback: connections to 127.0.0.0/8 and ::1 are allowed"


def round_config(settings, round_no, now):
    """The round's typed config; an unusable setting is a UsageError naming its flag."""
    try:
        return RoundConfig.build(settings, round_no, now)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def _when(t, now):
    wait = t - now
    span = f"{wait:.0f} s" if wait < 120 else f"{wait / 60:.0f} min" if wait < 7200 else f"{wait / 3600:.1f} h"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(t))} (in {span})"


def nothing_due(crawl, prev, now, max_depth):
    """None if generate would pick something from round `prev`'s frontier at `now`, else
    why not. The same rule as generate (due_mask), on only the columns it needs."""
    table = crawl.read_table("frontier", prev, columns=["not_before", "depth"])
    if due_mask(table, now, max_depth).any():
        return None
    if table.num_rows == 0:
        return (f"nothing due: the frontier of round {prev} is empty; add seeds with "
                f"`beamcrawl inject --crawl_dir {crawl.path} --seed URL`. Nothing was written.")
    not_before = table.column("not_before").fill_null(0.0).to_numpy(zero_copy_only=False)
    parts = []
    if max_depth:
        depth = table.column("depth").fill_null(0).to_numpy(zero_copy_only=False)
        too_deep = depth > max_depth
        if too_deep.any():
            parts.append(f"{int(too_deep.sum())} deeper than --max_depth {max_depth}")
        not_before = not_before[~too_deep]
    if len(not_before):
        parts.append(f"{len(not_before)} waiting for a retry backoff, none due before "
                     f"{_when(float(not_before.min()), now)}")
    return (f"nothing due: the frontier has {table.num_rows} URLs, {'; '.join(parts)}. "
            f"Nothing was written; run again later.")


def _uses_helpers(crawl, prev, cfg) -> bool:
    """Whether the round will likely start helper processes (fetch processes, page workers):
    they do and its fetch list can reach HELPERS_MIN_PAGES URLs (the pending frontier as the
    last round left it)."""
    try:
        pending = int(crawl.read_report(prev).get("page_sets", {}).get("pending") or 0)
    except (CrawlStateError, TypeError, ValueError, AttributeError):   # (reported where it is needed)
        return False
    return (bool(resolved(cfg.fetch_processes, lambda: fetch_processes("auto"))
                 or resolved(cfg.page_processes, auto_processes))
            and min(cfg.generate.max_pages, pending) >= HELPERS_MIN_PAGES)


def next_round(cmd, out=print, noted=None):
    """Run the next round of the crawl `cmd` (a cli.CommandLine) names; return its report.

    `noted`: notes already said by this command (a crawl says the loopback note once)."""
    noted = set() if noted is None else noted
    crawl = CrawlDir(cmd.values["crawl_dir"])
    config = crawl.read_config()
    prev = crawl.last_committed()
    if prev is None:
        raise CrawlStateError(f"{crawl.path} has no committed round; run "
                              f"`beamcrawl inject --crawl_dir {crawl.path} --seed URL` first.")
    round_no = prev + 1
    settings = effective_round_settings(cmd.given, config.get("round_defaults", {}))
    if settings["round_growth"]:   # a round's size grows with the pages downloaded so far
        settings = roundsize.sized(settings, crawl.read_report(prev).get("page_sets", {}).get("downloaded", 0))
    now = time.time() if cmd.values.get("round_time") is None else cmd.values["round_time"]
    cfg = round_config(settings, round_no, now)   # bad flags fail before any write
    cfg = focused.with_docfreq(cfg, crawl, prev)   # vertical: the crawl's document frequencies
    fleet.check_layout(crawl, cfg.shard)
    plan = plan_round(crawl, prev)
    delta = frontier_as_delta(crawl, prev, cfg, settings)   # else a full frontier (compaction)
    hosts_delta = hosts_as_delta(crawl, prev, cfg, settings)   # else the whole hosts table
    revisits = plan_revisits(crawl, prev, cfg)   # incremental mode: due revisits (else empty)
    inbox, inbox_rows, read_through = fleet.plan_inbox(crawl, prev, cfg.shard)   # other shards' URLs
    why_not = nothing_due(crawl, prev, now, cfg.generate.max_depth)
    if why_not and not len(revisits) and not inbox_rows and not changed_refusal_settings(crawl, cfg):
        raise cli.Notice(why_not)   # (a changed guard/scope setting: the round re-admits refusals)
    if settings["allow_loopback"] and "loopback" not in noted:
        noted.add("loopback")
        out(LOOPBACK_NOTE)
    if crawl.discard_uncommitted(round_no):
        LOG.warning("discarded the partial output of an interrupted run of round %d", round_no)
    sweep(crawl, prev)   # what a run killed between its commit and its sweep left
    started = time.time()
    attempt = crawl.new_attempt()
    crawl.write_json(round_no, "options.json", settings)
    fleet.write_read_through(crawl, round_no, cfg.shard, read_through)
    result = run_pipeline(lambda p: build_round(p, crawl, cfg, plan, attempt, revisits=revisits, inbox=inbox,
                                                frontier_delta=delta, hosts_delta=hosts_delta), cmd.beam_argv,
                          helpers=_uses_helpers(crawl, prev, cfg),
                          eager_heap=budget_sizes(cfg.memory_mb)["eager_heap"])
    discard_spill(crawl, round_no)   # the round's spill files (memory budget) are read by now
    report = report_mod.round_report(crawl, round_no, prev, settings, started, time.time(), result)
    report["round_time"] = now          # the clock generate and the due tests ran at
    report["runtime_patches"] = list(result.runtime_patches)   # pipelines.patches it ran with
    faults.crash_point("before_commit")
    parts = crawl.read_parts(round_no, attempt)   # what this run's pipeline wrote, and only that
    # incremental: the recrawl deltas compacted into this round's table when they grew;
    # the frontier written as a delta over the last full snapshot (frontierlayout)
    full = write_compaction(crawl, round_no, revisits)
    if full:
        parts["recrawl"] = parts.get("recrawl", []) + [COMPACTED_FILE]
    deltas = tuple(t for t, as_delta in (("frontier", delta), ("hosts", hosts_delta)) if as_delta)
    crawl.commit(round_no, report, parts, full_tables=full, delta_tables=deltas)
    sweep(crawl, round_no)   # failed bundles' parts, the listing: nothing a reader reads
    # old rounds' frontier/hosts/opic: only the last committed round's are ever read again
    crawl.prune_snapshots(int(settings.get("keep_snapshots") or 0))
    return report


def run_round(argv, out=print):
    """Run the next round of the crawl named by argv's --crawl_dir; return its report.
    Raises cli.Notice (nothing written) when nothing is due."""
    return next_round(cli.parse_command_line("round", argv), out)


def main(argv=None):
    return cli.run_cli(run_round, argv, report_mod.summary)


if __name__ == "__main__":
    sys.exit(main())
