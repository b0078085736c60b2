"""One crawl round: frontier(N-1) -> fetch -> parse -> URL-seen -> score -> round N.

    python -m pipelines.round --runner=DirectRunner --crawl_dir D [flags]

The round reads only committed round N-1, writes everything under rounds/N/, and commits
by writing report.json and then _COMMITTED. A crashed run leaves an uncommitted folder
that the next run deletes before starting, so rerunning gives the same state.
The pipeline itself is wired in pipelines.roundpipeline.
"""
import logging
import sys
import time

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import options as opts
from pipelines import report as report_mod
from pipelines.cli import run_cli
from pipelines.config import ConfigError, RoundConfig
from pipelines.crawldir import CrawlDir, CrawlStateError
from pipelines.roundpipeline import build_round, plan_round
from pipelines.runner import run_pipeline
from transforms import faults

LOG = logging.getLogger("beamcrawl.round")


def round_config(settings, round_no, now):
    """The round's typed config; an unusable setting is a CrawlStateError naming its flag."""
    try:
        return RoundConfig.build(settings, round_no, now)
    except ConfigError as e:
        raise CrawlStateError(str(e)) from None


def run_round(argv):
    """Run the next round of the crawl named by argv's --crawl_dir; return its report."""
    parsed = PipelineOptions(argv)
    crawl = CrawlDir(opts.crawl_dir_of(parsed))
    config = crawl.read_config()
    prev = crawl.last_committed()
    if prev is None:
        raise CrawlStateError(f"{crawl.path} has no committed round; run "
                              f"`python -m pipelines.inject --crawl_dir {crawl.path} --seed URL` first.")
    round_no = prev + 1
    settings = opts.effective_round_settings(parsed.view_as(opts.RoundOptions), argv,
                                             config.get("round_defaults", {}))
    now = opts.now_or(parsed.view_as(opts.RoundOptions).round_time)
    cfg = round_config(settings, round_no, now)   # bad flags fail before any write
    plan = plan_round(crawl, prev)
    if crawl.discard_uncommitted(round_no):
        LOG.warning("discarded the partial output of an interrupted run of round %d", round_no)
    if settings["allow_loopback"]:
        LOG.warning("--allow_loopback: connections to 127.0.0.0/8 and ::1 are allowed")
    started = time.time()
    crawl.write_json(round_no, "options.json", settings)
    result = run_pipeline(lambda p: build_round(p, crawl, cfg, plan), argv)
    report = report_mod.round_report(crawl, round_no, prev, settings, started, time.time(), result)
    faults.crash_point("before_commit")
    crawl.commit(round_no, report)
    return report


def main(argv=None):
    return run_cli(run_round, argv, report_mod.summary)


if __name__ == "__main__":
    sys.exit(main())
