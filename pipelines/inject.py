"""Start a crawl (round 0) or add seeds to one (a new round that fetches nothing).

    python -m pipelines.inject --crawl_dir D --seeds FILE | --seed URL [--seed URL ...] [round flags]

Round flags given here (scope, strategy, politeness, --resolve_file ...) become the crawl's
defaults in crawl.json, so later `round`/`crawl` runs need only --crawl_dir.
Seeds go through the same normalise / filter / URL-seen path as links: a seed already known
is not added twice, an out-of-scope one is recorded as filtered.
"""
import sys
import time

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import options as opts
from pipelines.cli import run_cli
from pipelines import report as report_mod
from pipelines.round import round_config
from pipelines.roundpipeline import build_round, plan_round
from pipelines.runner import run_pipeline
from pipelines.crawldir import DELTA_TABLES, CrawlDir, CrawlStateError
from schemas import tables
from transforms.urls import canonical as urls_mod


def read_seed_lines(path):
    try:
        with FileSystems.open(path) as f:
            text = f.read().decode("utf-8-sig")
    except Exception as e:
        raise CrawlStateError(f"cannot read seeds file {path}: {e}") from e
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


def run_inject(argv):
    parsed = PipelineOptions(argv)
    crawl = CrawlDir(opts.crawl_dir_of(parsed))
    inject = parsed.view_as(opts.InjectOptions)
    raw = list(inject.seed or [])
    if inject.seeds:
        raw.extend(read_seed_lines(inject.seeds))
    if not raw:
        raise CrawlStateError("no seeds: give --seeds FILE or --seed URL")
    given = opts.explicit_flags(argv)
    values = parsed.view_as(opts.RoundOptions).get_all_options()
    if crawl.exists():
        config = crawl.read_config()
        prev = crawl.last_committed()
    else:
        config = {"round_defaults": {k: values[k] for k in opts.ROUND_SETTINGS if k in given},
                  "created": time.time()}
        crawl.write_config(config)
        prev = None
    settings = opts.effective_round_settings(parsed.view_as(opts.RoundOptions), argv,
                                             config.get("round_defaults", {}))
    round_no = 0 if prev is None else prev + 1
    now = time.time()
    cfg = round_config(settings, round_no, now)
    bundles, rejected = seed_bundles(raw, cfg.scope)
    for url, why in rejected:
        print(f"warning: seed {url} not injected: {why}", file=sys.stderr)
    if not bundles:
        raise CrawlStateError("none of the seeds is an in-scope http(s) URL")
    plan = plan_round(crawl, prev)
    crawl.discard_uncommitted(round_no)
    crawl.write_json(round_no, "options.json", settings)
    run_pipeline(lambda p: build_round(p, crawl, cfg, plan, seeds=bundles, do_fetch=False), argv)
    report = report_mod.round_report(crawl, round_no, prev, settings, now, time.time())
    report["injected"] = len(bundles[0]["dst"])
    crawl.commit(round_no, report, full_tables=() if prev is not None else DELTA_TABLES)
    return report


def main(argv=None):
    return run_cli(run_inject, argv, lambda r: f"injected {r['injected']} seeds as round {r['round']}; frontier {r['frontier_size']} URLs")

if __name__ == "__main__":
    sys.exit(main())
