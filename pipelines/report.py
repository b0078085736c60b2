"""Round reports: counters, the five page sets, and a printed summary.

    beamcrawl report --crawl_dir D [--json] [--html FILE] [--ground_truth DIR]   # the whole crawl
    beamcrawl report --crawl_dir D --round N [--json] [--ground_truth DIR]      # one round

Without --round the command prints the whole crawl (pipelines/crawlsummary.py: rounds,
growth, status codes, content types, top hosts, depths, page sets, duplicates, filters,
pages/s) and --html FILE also writes it as a page with plots (pipelines/reporthtml.py).

The round pipeline writes exact counters to rounds/N/stats.json (summed inside the
pipeline, so they hold on every runner); the driver adds wall time and the page sets and
commits them as report.json. The five sets follow the client's texts: downloaded,
expired (incremental mode: see docs/incremental.md), pending (the URLs the next round's fetch list would
take with this round's settings), knowable (known but not scheduled: the rest of the
frontier), and unknowable (only with a ground truth: pages of the web not yet known).
"""
import json
import sys

# pipelines.cli first: it quiets the log lines Beam prints while it is imported
from pipelines import cli

# isort: split
from apache_beam.io.filesystems import FileSystems

from pipelines.config import settings_signatures
from pipelines import crawlsummary, focused, ordering_report, roundsize
from pipelines.crawldir import CrawlDir, CrawlStateError
from pipelines.settings import UsageError
from transforms.contentseen.clusters import near_report
from transforms.tableio import step as write
from transforms.urls import refusals

STATS_JSON = "stats.json"


def _read_stats(crawl, n):
    path = crawl.round_dir(n) + "/" + STATS_JSON
    if not FileSystems.exists(path):
        return {}
    with FileSystems.open(path) as f:
        return json.loads(f.read().decode("utf-8"))


def beam_metrics(result, namespace) -> dict:
    """{name: value} of a finished pipeline's Beam metrics in `namespace`: counters as
    their value, distributions as their sum ({} if the runner reports no metrics)."""
    from apache_beam.metrics.metric import MetricsFilter
    try:
        found = result.metrics().query(MetricsFilter().with_namespace(namespace))
    except Exception:  # a runner without metrics support
        return {}
    out = {}
    for kind in ("counters", "distributions"):
        for r in found.get(kind, []):
            value = r.committed if r.committed is not None else r.attempted
            if kind == "distributions":
                value = value.sum if value is not None else 0
            out[r.key.metric.name] = out.get(r.key.metric.name, 0) + (value or 0)
    return out


def beam_max(result, namespace, name):
    """The largest value a finished pipeline's Beam distribution `namespace`/`name` saw
    (None if no update, or the runner reports no metrics)."""
    from apache_beam.metrics.metric import MetricsFilter
    try:
        found = result.metrics().query(MetricsFilter().with_namespace(namespace).with_name(name))
    except Exception:  # a runner without metrics support
        return None
    seen = [r.committed if r.committed is not None else r.attempted for r in found.get("distributions", [])]
    seen = [d.max for d in seen if d is not None and d.count]
    return max(seen) if seen else None


def round_report(crawl, round_no, prev, settings, started, ended, result=None):
    """The round's report.json from its stats.json and, given the pipeline `result`, its
    Beam metrics: table-write time (time_split.write) and content-seen's reads of the
    visited view (content_seen.old_side)."""
    stats = _read_stats(crawl, round_no)
    metrics, spilled = {}, {}
    if result is not None:
        written = beam_metrics(result, write.WRITE_METRIC[0]).get(write.WRITE_METRIC[1], 0)
        stats["seconds_write"] = stats.get("seconds_write", 0) + written / 1e6
        metrics = beam_metrics(result, "contentseen")
        spilled = beam_metrics(result, "spill")
        limit = beam_max(result, *write.SPILL_LIMIT)
        if limit is not None:
            spilled["file_limit_bytes"] = limit
    prev_report = crawl.read_report(prev) if prev is not None else {}
    prev_sets = prev_report.get("page_sets", {})
    visited = int(stats.get("visited", 0))
    frontier = int(stats.get("frontier_rows", 0))
    wall = max(ended - started, 1e-9)
    filtered = {k[len("filtered_"):]: v for k, v in stats.items() if k.startswith("filtered_")}
    by_status = {k[len("status_"):]: v for k, v in stats.items() if k.startswith("status_")}
    outcomes = {k[len("outcome_"):]: v for k, v in stats.items() if k.startswith("outcome_")}
    # refused by a setting (the address guard): a visited row, but nothing was downloaded
    refused = {k[len("refused_guard_"):]: v for k, v in stats.items() if k.startswith("refused_guard_")}
    downloaded = (int(prev_sets.get("downloaded", 0)) + visited - sum(refused.values())
                  - int(stats.get("revisited", 0)))
    # pending: what the next round can fetch, cut at that round's size (--round_growth: larger)
    pending = min(int(stats.get("schedulable", 0)), roundsize.round_pages(settings, downloaded))
    return {
        "round": round_no,
        "strategy": settings.get("strategy"),
        "fetched": visited + int(stats.get("retried", 0)),
        "visited": visited,
        "outcomes": outcomes,
        "by_status_class": by_status,
        "bytes": int(stats.get("bytes", 0)),
        "new_urls": int(stats.get("new_urls", 0)),
        "links_to_seen": int(stats.get("links_to_seen", 0)),
        "duplicates": int(outcomes.get("duplicate", 0)),
        "content_seen": dict(
            {k: int(stats.get(k, 0)) for k in
             ("exact_duplicates", "near_duplicates", "mirror_hosts_suspected")},
            # visited-view row groups probed, and read wide for hits (transforms/contentdedup.py)
            old_side={k: int(v) for k, v in sorted(metrics.items())},
            near=near_report(stats)),    # clusters, sizes, largest, per host (docs/duplicates.md)
        "filtered_by_reason": filtered,
        # docs/scope.md "Refused URLs": URLs refused by the guard (by reason), refusals re-read
        # because their setting changed, and the signatures this round refused with
        "refused_by_guard": refused,
        "refusals_reread": int(stats.get("refusals_reread", 0)),
        "refusal_settings": settings_signatures(settings) or {},
        "wall_seconds": round(wall, 3),
        "pages_per_second": round(visited / wall, 2),
        "page_sets": {
            "downloaded": downloaded,
            # visited pages whose estimated P(changed since the last visit) > --expired_threshold,
            # at the round's clock before its revisits (incremental mode; 0 in batch mode)
            "expired": int(stats.get("recrawl_expired", 0)),
            "pending": pending,
            "knowable": max(frontier - pending, 0),
            "unknowable": None,
        },
        "frontier_size": frontier,
        "recrawl": recrawl_report(stats),
        # seconds spent in each step, summed over workers/bundles (fetch: wall time of the
        # fetch bundles; the rest: processing time), beside the round's wall time
        # README "Memory budget": the spill files the round wrote (tableio.step.SpillToFiles)
        # and their bytes before compression, the size a file may reach (--memory_mb / 16)
        # ({} when the runner reports no metrics)
        "spill": {k: int(v) for k, v in sorted(spilled.items())},
        "time_split": {k[len("seconds_"):]: round(v, 3) for k, v in stats.items() if k.startswith("seconds_")},
        "stats": stats,
        # vertical crawling: harvest rate this round and its running curve (pipelines/focused.py)
        **({"harvest": h} if (h := focused.harvest(stats, prev_report, settings)) else {}),
        # deep web (--deep_web forms): forms, submissions, records, templates by status (#17)
        "deep_web": {k[len("deepweb_"):]: v for k, v in stats.items() if k.startswith("deepweb_")},
    }


def recrawl_report(stats):
    """Incremental mode (issue #13): revisits, 304s, bytes saved, the copy's estimated state."""
    if "recrawl_round_time" not in stats:
        return None
    keys = ("budget", "revisits_due", "revisits_scheduled", "expired", "estimated_freshness",
            "rated_pages", "cycle_seconds", "round_time", "compacted_rows", "compacted_to")
    out = {k: stats.get(f"recrawl_{k}") for k in keys}
    out.update({k: int(stats.get(k, 0)) for k in ("revisited", "not_modified", "bytes_saved",
                                                  "changes_detected")})
    return out


def summary(report):
    s = report["page_sets"]
    lines = [
        f"round {report['round']}: visited {report['visited']} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(report['by_status_class'].items())) or 'none'}), "
        f"{report['bytes']} bytes, {report['new_urls']} new URLs, "
        f"{report['wall_seconds']} s, {report['pages_per_second']} pages/s",
        f"  outcomes: {', '.join(f'{k} {v}' for k, v in sorted(report['outcomes'].items())) or 'none'}",
        f"  filtered: {', '.join(f'{k} {v}' for k, v in sorted(report['filtered_by_reason'].items())) or 'none'}",
        f"  page sets: downloaded {s['downloaded']}, expired {s['expired']}, pending {s['pending']}, "
        f"knowable {s['knowable']}"
        + (f", unknowable {s['unknowable']}" if s.get("unknowable") is not None else ""),
    ]
    near = report.get("content_seen", {}).get("near") or {}
    if near.get("clusters"):
        lines.append(f"  near-duplicates: {report['content_seen']['near_duplicates']} pages in "
                     f"{near['clusters']} clusters (largest {near['largest']}); most: " + ", ".join(
                         f"{h['host']} {h['pages']} ({(h['share'] or 0):.0%})" for h in near["hosts"][:3]))
    dw = report.get("deep_web") or {}
    if dw:
        lines.append(f"  deep web: {dw.get('forms', 0)} forms, {dw.get('submissions', 0)} submissions "
                     f"({dw.get('submitted_round', 0)} this round), {dw.get('records', 0)} records on "
                     f"result pages, {dw.get('result_pages', 0)} result pages queued")
    lines += ordering_report.summary_lines(report.get("ordering"))
    lines += focused.summary_line(report)
    return "\n".join(lines + refusal_hints(report))


def refusal_hints(report):
    """One line per setting that refused URLs this round: which, how many, how to change it."""
    lines = [f"  {refusals.guard_hint(reason, n)}"
             for reason, n in sorted(report.get("refused_by_guard", {}).items())]
    lines += [f"  {refusals.scope_hint(reason, n)}"
              for reason, n in sorted(report.get("filtered_by_reason", {}).items())
              if reason in refusals.SCOPE_FLAGS]
    if report.get("refusals_reread"):
        lines.append(f"  settings changed: {report['refusals_reread']} refused URLs judged again")
    return lines


def with_ground_truth(crawl, report, truth_dir):
    """Fill `unknowable`: pages of the ground truth the crawl does not know at all."""
    import pyarrow.parquet as pq
    n = report["round"]
    truth = set(pq.read_table(truth_dir.rstrip("/") + "/pages.parquet", columns=["url"])
                .column("url").to_pylist())
    known = set()
    for table in ("visited", "frontier", "filtered"):
        known.update(crawl.read_table(table, n, columns=["url"]).column("url").to_pylist())
    report = dict(report)
    report["page_sets"] = dict(report["page_sets"], unknowable=len(truth - known))
    # per round: true PageRank captured so far and the relative AUC (pipelines/ordering_report.py)
    visited = crawl.read_table("visited", n, columns=["url", "round", "fetch_time", "outcome"])
    report["ordering"] = ordering_report.ordering_by_round(
        visited.to_pylist(), ordering_report.truth_pagerank(truth_dir.rstrip("/")))
    return report


def main(argv=None):
    parser = cli.FlagParser(prog="beamcrawl report", description=__doc__.split("\n\n")[0],
                            allow_abbrev=False)
    parser.add_argument("--crawl_dir", required=True, help="Crawl directory (a local path or gs://, s3://, ...).")
    parser.add_argument("--round", type=int, default=None,
                        help="Report this one round (its report.json) instead of the whole crawl; "
                             "with --html: the whole crawl up to this round.")
    parser.add_argument("--ground_truth", default=None,
                        help="Ground-truth directory (pages.parquet; pagerank.parquet or links.parquet): count "
                             "unknowable pages and show, per round, the true PageRank captured and the "
                             "relative AUC of the fetch order.")
    parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
    parser.add_argument("--html", default=None, metavar="FILE",
                        help="Also write the whole-crawl report with plots to FILE (one self-contained "
                             "HTML page, images embedded).")
    parser.add_argument("--top", type=int, default=crawlsummary.TOP,
                        help=f"Hosts and content types listed (default: {crawlsummary.TOP}).")
    try:
        args, beam_argv = cli.parse_with_beam_flags(parser, argv)
    except UsageError as e:
        print(f"error: {cli.one_line(e)}", file=sys.stderr)
        return 2
    crawl = CrawlDir(args.crawl_dir)
    try:
        cli.use_storage(args.crawl_dir, beam_argv)   # --s3_* flags (pipelines.storage)
        if args.top < 1:
            raise UsageError(f"--top {args.top}: must be at least 1")
        crawl.read_config()
        if args.round is not None and args.html is None:
            n = args.round
            if not crawl.is_committed(n):
                raise CrawlStateError(f"{crawl.path} has no committed round {n}; "
                                      f"committed rounds: {_span(crawl.committed_rounds())}")
            report = crawl.read_report(n)
            if args.ground_truth:
                report = with_ground_truth(crawl, report, args.ground_truth)
            print(json.dumps(report, indent=2, sort_keys=True) if args.json else summary(report))
            return 0
        whole = crawlsummary.crawl_summary(crawl, args.round, args.top)
        if args.ground_truth:
            last = with_ground_truth(crawl, whole["last_round"], args.ground_truth)
            whole["page_sets"] = last["page_sets"]
            whole["ordering"] = last["ordering"]
        if args.html:
            from pipelines import reporthtml
            reporthtml.write_html(whole, args.html)
    except (CrawlStateError, UsageError) as e:
        print(f"error: {cli.one_line(e)}", file=sys.stderr)
        return 2
    try:
        if args.json:
            print(json.dumps(whole, indent=2, sort_keys=True))
        else:
            text = crawlsummary.summary_text(whole)
            print("\n".join([text] + ordering_report.summary_lines(whole.get("ordering"))))
    except BrokenPipeError:   # e.g. piped into head
        sys.stderr.close()
    if args.html:
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def _span(rounds):
    return f"{rounds[0]}..{rounds[-1]}" if rounds else "none"


if __name__ == "__main__":
    sys.exit(main())
