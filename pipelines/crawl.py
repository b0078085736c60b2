"""Run rounds one after another, each its own pipeline, resuming from the last committed.

    python -m pipelines.crawl --crawl_dir D --rounds R | --max_total_pages P | --until_empty [round flags]

A crash at any point loses at most the round in progress: run the same command again
and it continues from the last committed round. When nothing is due the crawl says so
and stops without committing an empty round.
"""
import dataclasses
import sys

# pipelines.cli first: it quiets the log lines Beam prints while it is imported
from pipelines import cli, roundsize
from pipelines import focused
from pipelines import report as report_mod
from pipelines import round as round_mod
from pipelines.crawldir import CrawlDir
from pipelines.settings import UsageError, effective_round_settings


def run_crawl(argv, out=print):
    cmd = cli.parse_command_line("crawl", argv)
    v = cmd.values
    if v["rounds"] is None and v["max_total_pages"] is None and not v["until_empty"]:
        raise UsageError("say when to stop: --rounds R, --max_total_pages P or --until_empty")
    crawl = CrawlDir(v["crawl_dir"])
    crawl.read_config()
    last = crawl.last_committed()
    downloaded = crawl.read_report(last)["page_sets"]["downloaded"] if last is not None else 0
    reports, noted = [], set()
    while True:
        if v["rounds"] is not None and len(reports) >= v["rounds"]:
            break
        if v["max_total_pages"] is not None and downloaded >= v["max_total_pages"]:
            break
        round_cmd = cmd
        if v["max_total_pages"] is not None:  # the last round takes only what the budget leaves
            defaults = crawl.read_config().get("round_defaults", {})
            settings = effective_round_settings(cmd.given, defaults)
            given = roundsize.within_budget(cmd.given, settings, downloaded, v["max_total_pages"] - downloaded)
            if given is not cmd.given:
                round_cmd = dataclasses.replace(cmd, given=given)
        try:
            report = round_mod.next_round(round_cmd, out, noted)
        except cli.Notice as e:
            out(str(e))
            break
        reports.append(report)
        downloaded = report["page_sets"]["downloaded"]
        out(report_mod.summary(report))
        if focused.stop_reason(report):   # --mode vertical: the harvest rate fell below the floor
            out(focused.stop_reason(report))
            break
        if report["page_sets"]["pending"] == 0 and report["frontier_size"] == 0:
            break  # nothing left at all
        if v["until_empty"] and report["page_sets"]["pending"] == 0 and report["fetched"] == 0:
            break  # nothing due now and nothing fetched: only deferred retries remain
    return reports


def main(argv=None):
    return cli.run_cli(run_crawl, argv, lambda reports: f"{len(reports)} rounds run")


if __name__ == "__main__":
    sys.exit(main())
