"""The round's pipeline, wired in the loop's order (see README's map and DESIGN.md):

    frontier(N-1) -> Generate -> Fetch -> ProcessPages -> ApplyContentSeen
                  -> UrlSeen (+ visited/filtered views) -> Score -> write round N

`plan_round` checks the committed inputs before anything is written; `build_round` wires
the steps onto a pipeline. Each step takes its part of the typed `RoundConfig`.
"""
import math

import apache_beam as beam
import pyarrow as pa

from pipelines import report as report_mod
from pipelines.config import settings_signatures
from pipelines.crawldir import LAYERED
from pipelines.linkbatches import LinkBatches, link_batch_size
from pipelines.runner import spreads_files
from pipelines.settings import ROUND_SETTINGS
from schemas import tables
from transforms.archive.step import WriteWarc
from transforms.contentseen.oldside import OLD_COLUMNS
from transforms.contentseen.step import ApplyContentSeen
from transforms.deepweb.step import ProbeForms
from transforms.fetch.step import Fetch
from transforms.generate.select import due_mask
from transforms.generate.step import Generate
from transforms.page.step import ProcessPages
from transforms.page.visited import harvest_stats
from transforms.recrawl.step import UpdateRecrawlState
from transforms.score.modes import LocalScore, scores_per_row, uses_beam_pagerank
from transforms.score.step import BoundFrontier, ScoreByBeamPageRank, ScoreWholeFrontier
from transforms.shard.step import OwnFrontier, RouteCandidates
from transforms.tableio import spill
from transforms.tableio.sideinput import CombinedValue
from transforms.tableio.step import (
    CommitTables,
    ReadSpilled,
    ReadTables,
    ReadView,
    SpillToFiles,
    ViewSpec,
    WriteStats,
    WriteTable,
    sum_dicts,
)
from transforms.urls import refusals
from transforms.urlseen.candidates import candidates_and_edges, filtered_table
from transforms.urlseen.step import ReadmitRefused, UrlSeen

BUCKET_ROWS = 200_000   # target rows per URL-seen bucket (frontier + seen)
MIN_BUCKETS = 4
VISITED_ROW_GROUP = 16 * 1024   # rows; see contentseen's phase 2 (bench_contentseen)
INPUT_TABLES = ("frontier", "visited", "filtered", "hosts", "opic", "links", "deepweb")
MB = 1 << 20
LINKS_PER_PAGE = 100   # links a fetched page is expected to yield, when sizing URL-seen buckets


def _clamp(v, low, high):
    return max(low, min(high, int(v)))


def budget_sizes(memory_mb):
    """What --memory_mb sizes (docs/memory.md): pages fetched but not yet parsed,
    bytes per link spill file, links per link batch, URL-seen rows per bucket; and whether
    the round's process hands freed memory back at once (`eager_heap`: below the default
    budget; `runner.lean_allocators`)."""
    m = int(memory_mb)
    return {"ready_pages": _clamp(m // 4, 16, 1024), "spill_bytes": m * MB // 16,
            "link_batch": _clamp(m * 50, 10_000, 200_000), "bucket_rows": _clamp(m * 200, 20_000, BUCKET_ROWS),
            "eager_heap": m < ROUND_SETTINGS["memory_mb"].default}


def url_seen_buckets(rows, max_pages, bucket_rows):
    """URL-seen buckets: the committed rows plus the links this round may bring, so one
    bucket's merge stays within the budget however large the round."""
    new_links = max_pages * LINKS_PER_PAGE
    return max(MIN_BUCKETS, math.ceil((rows["frontier"] + rows["visited"] + rows["filtered"]
                                       + new_links) / bucket_rows))


def discard_spill(crawl, round_no):
    """Delete round `round_no`'s spill files (after its pipeline finished, before the commit)."""
    return spill.discard(crawl.round_dir(round_no))


def plan_round(crawl, prev):
    """The input files of a round after `prev`, each checked, and their row counts.

    Runs before anything is written, so a damaged crawl directory stops the round with
    a CrawlStateError naming the file, and nothing is overwritten.
    """
    files = {name: (crawl.table_files(name, prev) if prev is not None else []) for name in INPUT_TABLES}
    rows = {name: crawl.validate_files(name, f) for name, f in files.items()}
    return files, rows


def _read(p, label, files, schema, columns=None, with_positions=False):
    return p | f"Read{label}" >> ReadTables(files, schema, columns, with_positions,
                                            reshuffle=spreads_files(p))


def _view_spec(crawl, table, upto, files):
    """LAYERED `table`'s view as of committed round `upto` (empty when it has no `files`)."""
    layers = [(f, r) for _, f, r in crawl.view_layers(table, upto)] if files else [([], [])]
    return ViewSpec(layers, tables.TABLES[table], key=LAYERED[table])


def _schedulable(table, now, max_depth):
    """Per-host count of frontier rows the next generate could pick."""
    due = table.filter(pa.array(due_mask(table, now, max_depth)))
    if due.num_rows == 0:
        return {}
    g = due.group_by("host").aggregate([("fp", "count")])
    return dict(zip(g.column("host").to_pylist(), g.column("fp_count").to_pylist()))


def _pending(per_host, cap):
    """The due URLs the next round's Generate could pick, at most `cap` a host (`schedulable`;
    the report cuts it at the next round's size: its pending page set, pipelines/roundsize.py)."""
    return {"schedulable": sum(min(c, cap) for c in per_host.values())}


def previous_signatures(crawl, round_no):
    """The refusal signatures round `round_no - 1` ran with: from its report, else from its
    options.json; None when unknown (then every refusal counts as possibly stale)."""
    prev = round_no - 1
    if prev < 0 or not crawl.is_committed(prev):
        return None
    sigs = crawl.read_report(prev).get("refusal_settings")
    if sigs:
        return sigs
    try:
        return settings_signatures(crawl.read_json(prev, "options.json"))
    except Exception:  # an old round without options.json
        return None


def changed_refusal_settings(crawl, cfg) -> list:
    """Refusal keys (urls.refusals) whose settings differ from the previous round's: this
    round re-reads the refusals they decided. A round with nothing due could still run to
    re-admit them (pipelines.round's nothing_due may consult this)."""
    return refusals.changed(cfg.signatures, previous_signatures(crawl, cfg.round_no))


def _stale_refusal_files(files, changed):
    """(table, path) of the seen files that may hold refusals a changed setting decided."""
    out = []
    if refusals.GUARD in changed:
        out += [("visited", f) for f in files["visited"]]
    if any(k != refusals.GUARD for k in changed):
        out += [("filtered", f) for f in files["filtered"]]
    return out


def _counts_after(old, merged, now, max_depth):
    """Frontier delta: per-host due counts and rows of the frontier after this round, as the
    old view's, minus those of the rows URL-seen read (`hits`: each was rewritten into the
    delta or removed), plus the delta's. The old view is the one Generate reads (no reread)."""
    def counts(t, sign):
        return {**{h: sign * c for h, c in _schedulable(t, now, max_depth).items()},
                _ROWS: sign * t.num_rows}
    return ((old | "OldCounts" >> beam.Map(counts, 1), merged["hits"] | "HitCounts" >> beam.Map(counts, -1),
             merged["frontier"] | "DeltaCounts" >> beam.Map(counts, 1)) | "CountsAfter" >> beam.Flatten())


_ROWS = ("frontier_rows",)   # not a host name: the row count travels with the host counts


def build_round(p, crawl, cfg, plan, attempt, seeds=(), do_fetch=True, revisits=None, inbox=(),
                frontier_delta=False, hosts_delta=False):
    """Wire round `cfg.round_no`'s pipeline onto `p`; its outputs go to rounds/N/, and the
    list of its parts to `crawl.parts_listing(N, attempt)` (read by the round's commit).

    `cfg`: the round's RoundConfig; `plan`: plan_round's (files, rows) of the committed
    inputs; `seeds`: candidates bundles to inject; `do_fetch` False for an inject round;
    `inbox`: other shards' outbox files for this shard (pipelines.fleet.plan_inbox);
    `frontier_delta`, `hosts_delta`: write the frontier, the hosts table (the fetched hosts' rows)
    as a delta (pipelines.frontierlayout, hostslayout).
    """
    files, rows = plan
    round_no, gen = cfg.round_no, cfg.generate
    out = lambda table: crawl.table_prefix(round_no, table)   # noqa: E731
    written, schemas = [], {}   # every table's parts, listed by one CommitTables

    def write(pcoll, label, table, schema, *args):
        schemas[out(table)] = schema
        written.append(pcoll | label >> WriteTable(out(table), schema, *args))
    sizes = budget_sizes(cfg.memory_mb)
    buckets = url_seen_buckets(rows, gen.max_pages if do_fetch else 0, sizes["bucket_rows"])

    # the frontier's consistent view: the last full snapshot and the deltas since (crawldir)
    view = _view_spec(crawl, "frontier", round_no - 1, files["frontier"])
    # a delta round reads only what Generate and the due counts need (URL-seen reads the rows
    # it touches itself); a full rewrite, or a shard that sends rows away, reads every column
    narrow = frontier_delta and not cfg.shard
    frontier = p | "ReadFrontier" >> ReadView(view, Generate.READ_COLUMNS if narrow else None,
                                              reshuffle=spreads_files(p))
    if cfg.shard:   # a sharded crawl: only this shard's hosts (the rest go to their owners)
        owned = frontier | "OwnFrontier" >> OwnFrontier(cfg.shard)
        frontier = owned["frontier"]
    visited_view = _read(p, "Visited", files["visited"], tables.VISITED, OLD_COLUMNS,
                         with_positions=True)
    # URL-seen reads the fp column of these files itself, inside its map-side probe
    seen_files = p | "SeenFiles" >> beam.Create(
        [("visited", f) for f in files["visited"]] + [("filtered", f) for f in files["filtered"]],
        reshuffle=spreads_files(p))
    hosts = p | "ReadHosts" >> ReadView(_view_spec(crawl, "hosts", round_no - 1, files["hosts"]),
                                        reshuffle=spreads_files(p))   # layered too: hostslayout
    stats = [owned["stats"]] if cfg.shard else []

    if do_fetch:
        # Generate: the top max_pages due URLs by score, at most max_per_host per host
        fetch_list = frontier | "Generate" >> Generate(cfg.now, gen.max_pages, gen.max_per_host,
                                                       gen.max_depth, revisits.rows if revisits is not None else None,
                                                       spread=spreads_files(p))
        # Fetch: one element per host, each host sequentially with its delay (the hosts' URL
        # tables wait for their fetch in table files under the spill directory)
        spill_dir = crawl.round_dir(round_no) + f"/{spill.DIRNAME}"
        fetched = {"fetch_list": fetch_list, "hosts": hosts} | "Fetch" >> Fetch(
            cfg.fetch, cfg.fetch_threads, cfg.sitemaps, cfg.scope, cfg.progress_seconds,
            sizes["ready_pages"], cfg.fetch_processes, (f"{spill_dir}/fetch_list", sizes["spill_bytes"]),
            other_hosts=not hosts_delta)
        # Page: each fetched page's fate (visited row, links, filtered, stored body)
        # (the round's link bundles wait for content-seen, and its visited rows for their
        # host's template, in spill files, not in memory)
        to_files = lambda name: SpillToFiles(f"{spill_dir}/{name}", sizes["spill_bytes"])  # noqa: E731
        paged = ({"pages": fetched["pages"], "bundles": fetched["sitemaps"], "results": fetched["results"],
                  "planned": fetched["planned"]}
                 | "ProcessPages" >> ProcessPages(cfg.page, cfg.page_processes, to_files,
                                                  inflight_pages=sizes["ready_pages"]))
        links = paged["links"] | "ReadSpilledLinks" >> ReadSpilled()
        # Content-seen: exact and near duplicates against every committed round
        content = ({"visited": paged["visited"], "visited_files": paged["visited_files"], "links": links,
                    "pages": paged["pages"], "old": visited_view}
                   | "ContentSeen" >> ApplyContentSeen(
                       round_no, cfg.contentseen.expand_duplicates, cfg.contentseen.near_threshold, to_files))
        result_tables, link_bundles, new_hosts = paged["results"], content["links"], fetched["hosts"]
        filtered_bundles = ((paged["filtered"], fetched["filtered"])
                            | "AllFilteredBundles" >> beam.Flatten())
        visited_fps = content["visited"] | "VisitedFps" >> beam.Map(lambda t: t.select(["fp"]))
        stats.extend([fetched["stats"], paged["stats"], content["stats"]])
        if cfg.page.focus is not None:   # vertical: relevant pages of the round (the harvest)
            stats.append(content["visited"] | "HarvestStats" >> beam.Map(
                harvest_stats, cfg.page.focus.threshold))
        # small row groups: content-seen reads url/minhash of only the row groups with hits
        write(content["visited"], "WriteVisited", "visited", tables.VISITED, VISITED_ROW_GROUP)
        write(content["pages"], "WritePages", "pages", tables.PAGES)
        write(content["near"], "WriteNear", "near_duplicates", tables.NEAR_DUPLICATES)
        if paged["docfreq"] is not None:   # vertical: this round's document frequencies
            write(paged["docfreq"], "WriteDocFreq", "docfreq", tables.DOCFREQ)
        if cfg.warc_max_bytes:   # Archive: the fetches as WARC files and their CDXJ index
            stats.append(paged["archive"] | "WriteWarc" >> WriteWarc(
                crawl.warc_dir(round_no), round_no, cfg.warc_max_bytes, {"round": str(round_no)}))
    else:
        result_tables = p | "NoResults" >> beam.Create([], reshuffle=False).with_output_types(pa.Table)
        link_bundles = p | "NoLinks" >> beam.Create([], reshuffle=False)
        filtered_bundles = p | "NoFiltered" >> beam.Create([], reshuffle=False)
        new_hosts = hosts
        visited_fps = p | "NoVisited" >> beam.Create([], reshuffle=False).with_output_types(pa.Table)

    # Deep web: forms and their results -> the next submissions, as frontier candidates
    deepweb_state = _read(p, "DeepWeb", files["deepweb"], tables.DEEPWEB)
    if do_fetch and cfg.deepweb is not None:
        probed = ({"found": paged["deepweb"], "state": deepweb_state}
                  | "ProbeForms" >> ProbeForms(round_no, cfg.deepweb, cfg.scope))
        link_bundles = (link_bundles, probed["links"]) | "WithSubmissions" >> beam.Flatten()
        filtered_bundles = (filtered_bundles, probed["filtered"]) | "WithFilteredSubmissions" >> beam.Flatten()
        write(probed["forms"], "WriteForms", "forms", tables.FORMS)
        deepweb_state = probed["state"]
        stats.append(probed["stats"])
    write(deepweb_state, "WriteDeepWeb", "deepweb", tables.DEEPWEB)

    if seeds:
        seed_bundles = p | "Seeds" >> beam.Create(list(seeds), reshuffle=False)
        link_bundles = (link_bundles, seed_bundles) | "WithSeeds" >> beam.Flatten()

    # links as columnar tables: URL-seen candidates and link-graph edges
    batch = link_batch_size(sizes["link_batch"], buckets)
    cand_and_edges = (link_bundles
                      | "BatchLinks" >> LinkBatches(batch)
                      | "LinkTables" >> beam.Map(candidates_and_edges, round_no))
    candidates = cand_and_edges | "Candidates" >> beam.Map(lambda ce: ce[0])
    if do_fetch and cfg.recrawl is not None and cfg.recrawl.incremental:
        # Recrawl state: this round's visits (and sitemap lastmods) as a delta (issue #13)
        recrawl = ({"visited": content["visited"], "fetch_list": fetch_list, "candidates": candidates}
                   | "RecrawlState" >> UpdateRecrawlState(revisits.prev_rows if revisits is not None else {},
                                                          round_no, cfg.now))
        write(recrawl["state"], "WriteRecrawl", "recrawl", tables.RECRAWL)
        plan_stats = {k: v for k, v in dict((revisits.stats if revisits is not None else {}),
                                                recrawl_round_time=cfg.now).items() if v is not None}
        stats.extend([recrawl["stats"], p | "RecrawlPlan" >> beam.Create([plan_stats])])
    edges = cand_and_edges | "Edges" >> beam.Map(lambda ce: ce[1])
    filtered = (filtered_bundles
                | "BatchFiltered" >> beam.BatchElements(min_batch_size=1, max_batch_size=2000)
                | "FilteredTables" >> beam.Map(filtered_table))

    # Refusals: in a round whose guard or scope settings changed, the refusals the old
    # settings decided are judged again (docs/scope.md "Refused URLs"); other rounds read none
    stale_files = _stale_refusal_files(files, changed_refusal_settings(crawl, cfg))
    if stale_files:
        readmitted = (p | "RefusalFiles" >> beam.Create(stale_files, reshuffle=spreads_files(p))
                      | "ReadmitRefused" >> ReadmitRefused(cfg.signatures, cfg.scope))
        candidates = (candidates, readmitted["candidates"]) | "WithReadmitted" >> beam.Flatten()
        filtered = (filtered, readmitted["filtered"]) | "WithRefusedAgain" >> beam.Flatten()
        stats.append(readmitted["stats"])

    if cfg.shard:   # other shards' hosts to their outboxes; their URLs for us from our inbox
        inbox_tables = _read(p, "Inbox", inbox, tables.OUTBOX)
        stats.append(inbox_tables | "InboxStats" >> beam.Map(lambda t: {"inbox_urls": t.num_rows}))
        routed = ((candidates, owned["away"], inbox_tables) | "AllCandidates" >> beam.Flatten()
                  | "RouteCandidates" >> RouteCandidates(cfg.shard, crawl.table_dir(round_no, "outbox")))
        candidates = routed["candidates"]
        written.extend(routed["written"])
        schemas.update(routed["schemas"])
        stats.append(routed["stats"])

    # URL-seen: CoGroupByKey on fingerprint buckets of frontier, seen hits, results, links
    ordering = cfg.score.ordering
    score_fn = LocalScore(ordering) if scores_per_row(ordering) else None
    # (a fetching round's bucket parts wait for their merge in table files, not in the shuffle)
    merged = {"frontier": frontier, "seen": seen_files, "results": result_tables,
              "candidates": candidates, "filtered": filtered} | "UrlSeen" >> UrlSeen(
        buckets, round_no, score_fn, cfg.signatures, view if frontier_delta else None,
        spill=(f"{spill_dir}/urlseen", sizes["spill_bytes"]) if do_fetch else None)
    new_frontier = merged["frontier"]
    # Score: strategies that need more than a row see the whole frontier (or the Beam PageRank)
    if score_fn is None and uses_beam_pagerank(ordering, cfg.score.pagerank_path,
                                               cfg.score.pagerank_beam_edges, rows["links"]):
        old_edges = _read(p, "Links", files["links"], tables.LINKS, ["src_fp", "dst_fp"])
        nodes = ((visited_view | "VisitedNodeFps" >> beam.Map(lambda e: e[2].select(["fp"])),
                  visited_fps, new_frontier) | "GraphNodes" >> beam.Flatten()
                 | "NodeTables" >> beam.Map(lambda t: t.select(["fp"])))
        new_frontier = ({"frontier": new_frontier, "nodes": nodes,
                         "edges": (old_edges, edges) | "AllEdges" >> beam.Flatten()}
                        | "ScoreByBeamPageRank" >> ScoreByBeamPageRank(
                            cfg.score.pagerank_iterations, getattr(ordering, "damping", 0.85), buckets))
    elif score_fn is None:
        scored = ({"frontier": new_frontier, "edges": edges, "visited": visited_fps}
                  | "ScoreWholeFrontier" >> ScoreWholeFrontier(
                      ordering, {name: files[name] for name in ("opic", "links", "visited")}))
        new_frontier = scored["frontier"]
        stats.append(scored["stats"])
        write(scored["opic"], "WriteOpic", "opic", tables.OPIC)
    stats.append(merged["stats"])
    new_filtered = merged["filtered"]
    if cfg.max_buffer:   # MAX_BUFFER: the lowest-scored URLs leave as filtered (buffer_full)
        bounded = new_frontier | "BoundFrontier" >> BoundFrontier(cfg.max_buffer, round_no)
        new_frontier = bounded["frontier"]
        new_filtered = (new_filtered, bounded["filtered"]) | "WithBufferFull" >> beam.Flatten()
        stats.append(bounded["stats"])
    if frontier_delta:   # the delta and the fps that left are written; counts from the old view
        write(merged["removed"], "WriteFrontierRemoved", "frontier_removed", tables.REMOVED)
        counts = (_counts_after(frontier, merged, cfg.now, gen.max_depth)
                  | "SumSchedulable" >> CombinedValue(sum_dicts))
        stats.append(counts | "FrontierRows" >> beam.Map(lambda c: {"frontier_rows": c.get(_ROWS, 0)}))
        pending = counts | "Pending" >> beam.Map(
            lambda c, cap: _pending({h: n for h, n in c.items() if h != _ROWS}, cap), gen.max_per_host)
    else:
        pending = (new_frontier
                   | "Schedulable" >> beam.Map(_schedulable, cfg.now, gen.max_depth)
                   | "SumSchedulable" >> CombinedValue(sum_dicts)
                   | "Pending" >> beam.Map(_pending, gen.max_per_host))
    stats.append(pending)

    # write round N: frontier, filtered, links, hosts and the counters of the report
    write(new_frontier, "WriteFrontier", "frontier", tables.FRONTIER)
    write(new_filtered, "WriteFiltered", "filtered", tables.FILTERED)
    write(edges, "WriteLinks", "links", tables.LINKS)
    write(new_hosts, "WriteHosts", "hosts", tables.HOSTS)
    (tuple(written) | "AllWritten" >> beam.Flatten()
     | "CommitTables" >> CommitTables(schemas, crawl.parts_listing(round_no, attempt), attempt))
    (tuple(stats) | "AllStats" >> beam.Flatten()
     | "WriteStats" >> WriteStats(crawl.round_dir(round_no) + "/" + report_mod.STATS_JSON))
