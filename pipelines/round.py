"""One crawl round: frontier(N-1) -> fetch -> parse -> URL-seen -> score -> round N.

    python -m pipelines.round --runner=DirectRunner --crawl_dir D [flags]

The round reads only committed round N-1, writes everything under rounds/N/, and commits
by writing report.json and then _COMMITTED. A crashed run leaves an uncommitted folder
that the next run deletes before starting, so rerunning gives the same state.
"""
import logging
import math
import sys
import time

import apache_beam as beam
import pyarrow as pa
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipelines import options as opts
from pipelines.cli import run_cli
from pipelines.crawldir import CrawlDir, CrawlStateError
from pipelines import report as report_mod
from pipelines import construction, faults, scoring
from schemas import tables
from strategies.ordering import get_ordering
from transforms import contentdedup, generate, links, seen, write
from transforms import fetcher as fetcher_mod
from transforms import netguard
from transforms.fetchround import FetchAndProcess
from transforms.readparquet import ReadTables
from transforms.urls import UrlFilter

LOG = logging.getLogger("beamcrawl.round")
BUCKET_ROWS = 200_000   # target rows per URL-seen bucket (frontier + seen)
MIN_BUCKETS = 4
DIRECT_RUNNER_NAMES = (None, "DirectRunner", "direct")   # run on the in-process FnApiRunner
VISITED_ROW_GROUP = 16 * 1024   # rows; see contentdedup's phase 2 (bench_contentseen)


def url_filter_from(settings):
    kwargs = dict(
        allow_hosts=tuple(h.lower() for h in opts.settings_csv(settings, "allow_hosts")),
        allow_domains=tuple(d.lower() for d in opts.settings_csv(settings, "allow_domains")),
        url_regex_allow=opts.settings_csv(settings, "url_regex_allow"),
        url_regex_deny=opts.settings_csv(settings, "url_regex_deny"),
        max_url_length=int(settings["max_url_length"]),
        max_depth=int(settings["max_depth"]) or None,
    )
    if settings.get("deny_extensions") is not None:
        kwargs["deny_extensions"] = tuple(e.lower().lstrip(".")
                                          for e in opts.settings_csv(settings, "deny_extensions"))
    return UrlFilter(**kwargs)


def resolve_entries(settings):
    """The resolver override: --resolve entries plus the lines of --resolve_file."""
    entries = list(opts.settings_csv(settings, "resolve"))
    mapping = netguard.parse_resolve_entries(entries) if entries else {}
    if settings.get("resolve_file"):
        mapping.update(netguard.read_resolve_file(settings["resolve_file"]))
    return tuple(sorted((h, p, a) for (h, p), a in mapping.items()))


def fetch_config_from(settings):
    return fetcher_mod.FetchConfig(
        user_agent=settings["user_agent"],
        delay_per_host=float(settings["delay_per_host"]),
        connect_timeout=float(settings["connect_timeout"]),
        read_timeout=float(settings["read_timeout"]),
        deadline=float(settings["deadline"]),
        max_body=int(settings["max_body"]),
        max_redirects=int(settings["max_redirects"]),
        max_crawl_delay=float(settings["max_crawl_delay"]),
        robots_ttl=float(settings["robots_ttl"]),
        obey_robots=bool(settings["obey_robots"]),
        allow_loopback=bool(settings["allow_loopback"]),
        deny_addresses=opts.settings_csv(settings, "deny_addresses"),
        resolve=resolve_entries(settings),
    )


def _param_value(text):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def ordering_from(settings):
    """The strategy object named by --strategy, with its --strategy_params."""
    params = {}
    for item in opts.settings_csv(settings, "strategy_params"):
        key, sep, value = item.partition("=")
        if not sep:
            raise CrawlStateError(f"--strategy_params: {item!r} is not KEY=VALUE")
        params[key.strip()] = _param_value(value.strip())
    try:
        return get_ordering(settings["strategy"], **params)
    except (ValueError, TypeError) as e:
        raise CrawlStateError(f"--strategy {settings['strategy']}: {e}") from None


def scores_per_row(ordering):
    """True when a row's score depends on its own columns only (scored per bucket)."""
    return not (ordering.needs_graph or ordering.needs_host_counts or ordering.uses_opic)


class _LocalScore:
    """Picklable per-bucket scorer for strategies that need no global graph."""

    def __init__(self, ordering):
        self.ordering = ordering

    def __call__(self, table):
        return self.ordering.score(table, None)


def uses_beam_pagerank(ordering, settings, known_links):
    """Graph strategies take the Beam PageRank path when asked, or when the graph is large."""
    if not ordering.needs_graph:
        return False
    path = settings.get("pagerank_path", "auto")
    if path not in ("auto", "memory", "beam"):
        raise CrawlStateError(f"--pagerank_path must be auto, memory or beam, not {path!r}")
    return path == "beam" or (path == "auto" and known_links > int(settings["pagerank_beam_edges"]))


def spreads_files(p):
    """True on a distributed runner: a round's input files are spread over its workers
    (a Reshuffle after the file list). The in-process runner gains nothing from it."""
    runner = p.options.view_as(StandardOptions).runner
    return runner not in DIRECT_RUNNER_NAMES + ("FnApiRunner",)


def _read(p, label, files, schema, columns=None, with_positions=False):
    return p | f"Read{label}" >> ReadTables(files, schema, columns, with_positions,
                                            reshuffle=spreads_files(p))


def _schedulable(table, now, max_depth):
    """Per-host count of frontier rows the next generate could pick."""
    due = table.filter(pa.array(generate.due_mask(table, now, max_depth)))
    if due.num_rows == 0:
        return {}
    g = due.group_by("host").aggregate([("fp", "count")])
    return dict(zip(g.column("host").to_pylist(), g.column("fp_count").to_pylist()))


INPUT_TABLES = ("frontier", "visited", "filtered", "hosts", "opic", "links")


def plan_round(crawl, prev):
    """The input files of a round after `prev`, each checked, and their row counts.

    Runs before anything is written, so a damaged crawl directory stops the round with
    a CrawlStateError naming the file, and nothing is overwritten.
    """
    files = {name: (crawl.table_files(name, prev) if prev is not None else []) for name in INPUT_TABLES}
    rows = {name: crawl.validate_files(name, f) for name, f in files.items()}
    return files, rows


def build_round(p, crawl, prev, round_no, settings, now, plan, seeds=(), do_fetch=True):
    """Wire the round's pipeline onto `p`. Returns nothing; outputs go to rounds/round_no/."""
    t, rows = plan
    buckets = max(MIN_BUCKETS, math.ceil((rows["frontier"] + rows["visited"] + rows["filtered"])
                                         / BUCKET_ROWS))
    ordering = ordering_from(settings)
    url_filter = url_filter_from(settings)
    max_depth = int(settings["max_depth"])

    frontier = _read(p, "Frontier", t["frontier"], tables.FRONTIER)
    visited_view = _read(p, "Visited", t["visited"], tables.VISITED, contentdedup.OLD_COLUMNS,
                         with_positions=True)
    # URL-seen reads the fp column of these files itself, inside its map-side probe
    seen_files = p | "SeenFiles" >> beam.Create(t["visited"] + t["filtered"],
                                                reshuffle=spreads_files(p))
    hosts = _read(p, "Hosts", t["hosts"], tables.HOSTS)
    stats = []

    if do_fetch:
        fetch_list = frontier | "Generate" >> generate.Generate(
            now, int(settings["max_pages"]), int(settings["max_per_host"]), max_depth)
        fetched = {"fetch_list": fetch_list, "hosts": hosts} | "FetchAndProcess" >> FetchAndProcess(
            fetch_config_from(settings), int(settings["fetch_threads"]), bool(settings["sitemaps"]),
            round_no, now, settings, url_filter)
        content = ({"visited": fetched["visited"], "links": fetched["links"], "pages": fetched["pages"],
                    "old": visited_view}
                   | "ContentSeen" >> contentdedup.ApplyContentSeen(
                       round_no, bool(settings["expand_duplicates"]), float(settings["near_duplicates"])))
        result_tables, link_bundles = fetched["results"], content["links"]
        filtered_bundles, new_hosts = fetched["filtered"], fetched["hosts"]
        visited_fps = content["visited"] | "VisitedFps" >> beam.Map(lambda t: t.select(["fp"]))
        stats.extend([fetched["stats"], content["stats"]])
        # small row groups: content-seen reads url/minhash of only the row groups with hits
        content["visited"] | "WriteVisited" >> write.WriteTable(
            crawl.table_prefix(round_no, "visited"), tables.VISITED, VISITED_ROW_GROUP)
        content["pages"] | "WritePages" >> write.WriteTable(
            crawl.table_prefix(round_no, "pages"), tables.PAGES)
        content["near"] | "WriteNear" >> write.WriteTable(
            crawl.table_prefix(round_no, "near_duplicates"), tables.NEAR_DUPLICATES)
    else:
        result_tables = p | "NoResults" >> beam.Create([], reshuffle=False).with_output_types(pa.Table)
        link_bundles = p | "NoLinks" >> beam.Create([], reshuffle=False)
        filtered_bundles = p | "NoFiltered" >> beam.Create([], reshuffle=False)
        new_hosts = hosts
        visited_fps = p | "NoVisited" >> beam.Create([], reshuffle=False).with_output_types(pa.Table)

    if seeds:
        seed_bundles = p | "Seeds" >> beam.Create(list(seeds), reshuffle=False)
        link_bundles = (link_bundles, seed_bundles) | "WithSeeds" >> beam.Flatten()

    cand_and_edges = (link_bundles
                      | "BatchLinks" >> beam.BatchElements(min_batch_size=1, max_batch_size=2000)
                      | "LinkTables" >> beam.Map(links.candidates_and_edges, round_no))
    candidates = cand_and_edges | "Candidates" >> beam.Map(lambda ce: ce[0])
    edges = cand_and_edges | "Edges" >> beam.Map(lambda ce: ce[1])
    filtered = (filtered_bundles
                | "BatchFiltered" >> beam.BatchElements(min_batch_size=1, max_batch_size=2000)
                | "FilteredTables" >> beam.Map(links.filtered_table))

    score_fn = _LocalScore(ordering) if scores_per_row(ordering) else None
    merged = {"frontier": frontier, "seen": seen_files, "results": result_tables,
              "candidates": candidates, "filtered": filtered} | "UrlSeen" >> seen.UrlSeen(
        buckets, round_no, score_fn)
    new_frontier = merged["frontier"]
    if score_fn is None and uses_beam_pagerank(ordering, settings, rows["links"]):
        old_edges = _read(p, "Links", t["links"], tables.LINKS, ["src_fp", "dst_fp"])
        nodes = ((visited_view | "VisitedNodeFps" >> beam.Map(lambda e: e[2].select(["fp"])),
                  visited_fps, new_frontier) | "GraphNodes" >> beam.Flatten()
                 | "NodeTables" >> beam.Map(lambda t: t.select(["fp"])))
        new_frontier = ({"frontier": new_frontier, "nodes": nodes,
                         "edges": (old_edges, edges) | "AllEdges" >> beam.Flatten()}
                        | "ScoreByBeamPageRank" >> scoring.ScoreByBeamPageRank(
                            int(settings["pagerank_iterations"]), getattr(ordering, "damping", 0.85),
                            buckets))
    elif score_fn is None:
        scored = ({"frontier": new_frontier, "edges": edges, "visited": visited_fps}
                  | "ScoreWholeFrontier" >> scoring.ScoreWholeFrontier(ordering, crawl, prev))
        new_frontier = scored["frontier"]
        stats.append(scored["stats"])
        scored["opic"] | "WriteOpic" >> write.WriteTable(crawl.table_prefix(round_no, "opic"), tables.OPIC)
    stats.append(merged["stats"])
    pending = (new_frontier
               | "Schedulable" >> beam.Map(_schedulable, now, max_depth)
               | "SumSchedulable" >> beam.CombineGlobally(write.sum_dicts)
               | "Pending" >> beam.Map(lambda per_host, cap=int(settings["max_per_host"]),
                                       k=int(settings["max_pages"]):
                                       {"pending": min(k, sum(min(c, cap) for c in per_host.values()))}))
    stats.append(pending)

    new_frontier | "WriteFrontier" >> write.WriteTable(
        crawl.table_prefix(round_no, "frontier"), tables.FRONTIER)
    merged["filtered"] | "WriteFiltered" >> write.WriteTable(
        crawl.table_prefix(round_no, "filtered"), tables.FILTERED)
    edges | "WriteLinks" >> write.WriteTable(crawl.table_prefix(round_no, "links"), tables.LINKS)
    new_hosts | "WriteHosts" >> write.WriteTable(crawl.table_prefix(round_no, "hosts"), tables.HOSTS)
    (tuple(stats) | "AllStats" >> beam.Flatten()
     | "WriteStats" >> write.WriteStats(crawl.round_dir(round_no) + "/" + report_mod.STATS_JSON))


def pipeline_options(argv):
    """PipelineOptions for argv; DirectRunner runs on the FnApiRunner (no Prism download)."""
    options = PipelineOptions(argv)
    std = options.view_as(StandardOptions)
    if std.runner in DIRECT_RUNNER_NAMES:
        from apache_beam.runners.portability.fn_api_runner import fn_runner
        return options, fn_runner.FnApiRunner()
    return options, None


def run_pipeline(builder, argv):
    construction.install()
    options, runner = pipeline_options(argv)
    p = beam.Pipeline(runner=runner, options=options) if runner else beam.Pipeline(options=options)
    builder(p)
    result = p.run()
    state = result.wait_until_finish()
    if state not in (None, "DONE", beam.runners.runner.PipelineState.DONE):
        raise RuntimeError(f"pipeline ended in state {state}")
    return result


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
    uses_beam_pagerank(ordering_from(settings), settings, 0)  # bad flags fail before any write
    plan = plan_round(crawl, prev)
    if crawl.discard_uncommitted(round_no):
        LOG.warning("discarded the partial output of an interrupted run of round %d", round_no)
    if settings["allow_loopback"]:
        LOG.warning("--allow_loopback: connections to 127.0.0.0/8 and ::1 are allowed")
    now = opts.now_or(parsed.view_as(opts.RoundOptions).round_time)
    started = time.time()
    crawl.write_json(round_no, "options.json", settings)
    result = run_pipeline(lambda p: build_round(p, crawl, prev, round_no, settings, now, plan), argv)
    report = report_mod.round_report(crawl, round_no, prev, settings, started, time.time(), result)
    faults.crash_point("before_commit")
    crawl.commit(round_no, report)
    return report


def main(argv=None):
    return run_cli(run_round, argv, report_mod.summary)

if __name__ == "__main__":
    sys.exit(main())
