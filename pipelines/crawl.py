"""Run rounds one after another, each its own pipeline, resuming from the last committed.

    python -m pipelines.crawl --crawl_dir D --rounds R | --max_total_pages P | --until_empty [round flags]

A crash at any point loses at most the round in progress: run the same command again
and it continues from the last committed round.
"""
import sys

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import options as opts
from pipelines.cli import run_cli
from pipelines import report as report_mod
from pipelines import round as round_mod
from pipelines.crawldir import CrawlDir, CrawlStateError


def run_crawl(argv, out=print):
    parsed = PipelineOptions(argv)
    c = parsed.view_as(opts.CrawlOptions)
    if c.rounds is None and c.max_total_pages is None and not c.until_empty:
        raise CrawlStateError("say when to stop: --rounds R, --max_total_pages P or --until_empty")
    crawl = CrawlDir(opts.crawl_dir_of(parsed))
    crawl.read_config()
    last = crawl.last_committed()
    downloaded = crawl.read_report(last)["page_sets"]["downloaded"] if last is not None else 0
    reports, done = [], 0
    while True:
        if c.rounds is not None and done >= c.rounds:
            break
        if c.max_total_pages is not None and downloaded >= c.max_total_pages:
            break
        round_argv = list(argv)
        if c.max_total_pages is not None:  # the last round takes only what the budget leaves
            config = crawl.read_config().get("round_defaults", {})
            per_round = opts.effective_round_settings(parsed.view_as(opts.RoundOptions), argv,
                                                      config)["max_pages"]
            remaining = c.max_total_pages - downloaded
            if remaining < int(per_round):
                round_argv += ["--max_pages", str(remaining)]
        report = round_mod.run_round(round_argv)
        reports.append(report)
        done += 1
        downloaded = report["page_sets"]["downloaded"]
        out(report_mod.summary(report))
        if report["page_sets"]["pending"] == 0 and report["frontier_size"] == 0:
            break  # nothing left at all
        if c.until_empty and report["page_sets"]["pending"] == 0 and report["fetched"] == 0:
            break  # nothing due now and nothing fetched: only deferred retries remain
    return reports


def main(argv=None):
    return run_cli(run_crawl, argv, lambda reports: f"{len(reports)} rounds run")

if __name__ == "__main__":
    sys.exit(main())
