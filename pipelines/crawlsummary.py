"""The whole crawl at a glance: the figures `beamcrawl report` prints, as JSON, and plots.

    crawl_summary(CrawlDir(D))          -> dict (what `report --json` prints)
    summary_text(crawl_summary(...))    -> the terminal table

Two sources, both cheap on a large crawl:
- each committed round's report.json (a few kB each): rounds, growth, the five page sets,
  pages/s, duplicates and refusals as the round counted them;
- the crawl's tables as of the last round (the files its manifests list), read one row
  group at a time and only the columns a figure needs (visited: status, outcome, content
  type, host, depth, bytes; frontier: depth, host; filtered: reason; near_duplicates:
  cluster), aggregated with pyarrow.compute, so memory holds one row group's few columns,
  never a whole table.

Optional report.json fields (later rounds may add some, older rounds lack some) are read
with defaults: a missing field is 0, never an error.
"""
from __future__ import annotations

import collections

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.crawldir import LAYERED, CrawlStateError
from schemas import tables
from transforms.tableio.files import open_parquet, read_row_group
from transforms.tableio.layers import read_layers

TOP = 10
NONE = "none"          # a null value (no HTTP response, no content type)
PAGE_SETS = ("downloaded", "expired", "pending", "knowable", "unknowable")
ERROR_OUTCOMES = (tables.HTTP_ERROR, tables.FAILED, tables.TOO_MANY_REDIRECTS)


def _num(d, key):
    v = (d or {}).get(key)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _add(counter, table, column):
    """counter += value counts of table[column] (null as NONE)."""
    for row in pc.value_counts(table.column(column)).to_pylist():
        value = row["values"]
        counter[NONE if value is None else str(value)] += row["counts"]


def _files_of(crawl, table, upto):
    return crawl.table_files(table, upto)


def _scan(crawl, table, upto, columns):
    """Yield the table's view as of round `upto`, one row group at a time, `columns` only
    (Parquet reads just those column chunks: memory holds one row group's few columns)."""
    schema = tables.TABLES[table]
    if table in LAYERED:   # the frontier, the hosts: a snapshot and deltas, resolved
        yield from read_layers([(f, r) for _, f, r in crawl.view_layers(table, upto)], schema, columns,
                               key=LAYERED[table])
        return
    for path in _files_of(crawl, table, upto):
        try:
            with open_parquet(path) as pf:
                groups = pf.num_row_groups
            for i in range(groups):
                yield read_row_group(path, i, schema, columns)
        except Exception as e:
            raise CrawlStateError(f"{path}: cannot read this Parquet file of table {table!r} "
                                  f"({type(e).__name__}: {e}). Restore it from a backup, or delete "
                                  "the round folder and its later rounds to resume from the round "
                                  "before.") from e


def round_rows(reports):
    """One dict per committed round from its report.json: the growth and speed series."""
    out = []
    for n, r in reports:
        sets = r.get("page_sets") or {}
        stats = r.get("stats") or {}
        seen = r.get("content_seen") or {}
        out.append({
            "round": n,
            "strategy": r.get("strategy"),
            "injected": int(_num(r, "injected")),
            "fetched": int(_num(r, "fetched")),
            "visited": int(_num(r, "visited")),
            "new_urls": int(_num(r, "new_urls")),
            "frontier_size": int(_num(r, "frontier_size")),
            "bytes": int(_num(r, "bytes")),
            "wall_seconds": float(_num(r, "wall_seconds")),
            "pages_per_second": float(_num(r, "pages_per_second")),
            "duplicates": int(_num(r, "duplicates")),
            "exact_duplicates": int(_num(seen, "exact_duplicates")),
            "near_duplicates": int(_num(seen, "near_duplicates")),
            "mirror_hosts_suspected": int(_num(seen, "mirror_hosts_suspected")),
            "filtered": int(sum((r.get("filtered_by_reason") or {}).values())),
            "refused": int(sum((r.get("refused_by_guard") or {}).values())),
            "warc_captures": int(_num(stats, "warc_captures")),
            "warc_bytes": int(_num(stats, "warc_bytes")),
            "page_sets": {k: sets.get(k) for k in PAGE_SETS},
        })
    return out


def _sum_dicts(dicts):
    total = collections.Counter()
    for d in dicts:
        for k, v in (d or {}).items():
            if isinstance(v, (int, float)):
                total[k] += v
    return dict(sorted(total.items()))


def _top(counter, k):
    return dict(counter.most_common(k))


def _sorted_numeric(counter):
    """{key: n} sorted by the key as a number (NONE last)."""
    def key(item):
        return (1, 0) if item[0] == NONE else (0, int(item[0]))
    return dict(sorted(counter.items(), key=key))


def visited_figures(crawl, upto, top=TOP):
    """Status codes, outcomes, content types, hosts and depths of every visited row."""
    status, outcome, ctype, depth = (collections.Counter() for _ in range(4))
    hosts = collections.defaultdict(lambda: [0, 0, 0, 0])   # pages, ok, errors, bytes
    rows = total_bytes = 0
    cols = ["http_status", "outcome", "content_type", "host", "depth", "bytes"]
    for t in _scan(crawl, "visited", upto, cols):
        rows += t.num_rows
        for counter, column in ((status, "http_status"), (outcome, "outcome"),
                                (ctype, "content_type"), (depth, "depth")):
            _add(counter, t, column)
        total_bytes += pc.sum(t.column("bytes")).as_py() or 0
        flags = pa.table({
            "host": pc.fill_null(t.column("host"), NONE),
            "ok": pc.cast(pc.equal(t.column("outcome"), tables.OK), pa.int64()),
            "err": pc.cast(pc.is_in(t.column("outcome"), pa.array(ERROR_OUTCOMES)), pa.int64()),
            "bytes": pc.fill_null(t.column("bytes"), 0)})
        grouped = flags.group_by("host").aggregate(
            [("host", "count"), ("ok", "sum"), ("err", "sum"), ("bytes", "sum")])
        for g in grouped.to_pylist():
            h = hosts[g["host"]]
            h[0] += g["host_count"]
            h[1] += g["ok_sum"] or 0
            h[2] += g["err_sum"] or 0
            h[3] += g["bytes_sum"] or 0
    ranked = sorted(hosts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return {
        "visited_rows": rows,
        "bytes": int(total_bytes),
        "status_codes": _sorted_numeric(status),
        "outcomes": dict(outcome.most_common()),
        "content_types": _top(ctype, top),
        "content_types_other": sum(ctype.values()) - sum(_top(ctype, top).values()),
        "host_names": set(hosts) - {NONE},
        "hosts": {"visited": len(hosts),
                  "top": [{"host": h, "pages": v[0], "ok": v[1], "errors": v[2], "bytes": v[3]}
                          for h, v in ranked[:top]]},
        "depth_visited": _sorted_numeric(depth),
    }


def frontier_figures(crawl, upto):
    depth, hosts = collections.Counter(), set()
    rows = 0
    for t in _scan(crawl, "frontier", upto, ["depth", "host"]):
        rows += t.num_rows
        _add(depth, t, "depth")
        hosts.update(pc.unique(t.column("host")).to_pylist())
    return {"frontier_rows": rows, "host_names": hosts - {None},
            "depth_frontier": _sorted_numeric(depth)}


def filtered_figures(crawl, upto):
    reasons = collections.Counter()
    for t in _scan(crawl, "filtered", upto, ["reason"]):
        _add(reasons, t, "reason")
    return dict(reasons.most_common())


def near_figures(crawl, upto):
    rows, clusters = 0, set()
    for t in _scan(crawl, "near_duplicates", upto, ["cluster_fp", "cluster_round", "of_fp"]):
        rows += t.num_rows
        # files written before clusters have no cluster_fp: the pair's of_fp stands for it
        head = pc.coalesce(t.column("cluster_fp"), t.column("of_fp"))
        clusters.update(pc.unique(head).to_pylist())
    return {"pages_in_clusters": rows, "clusters": len(clusters - {None})}


def link_count(crawl, upto):
    """Rows of the links view, from the files' footers only."""
    return crawl.validate_files("links", _files_of(crawl, "links", upto))


def crawl_summary(crawl, upto=None, top=TOP):
    """The whole-crawl report as of committed round `upto` (default: the last)."""
    config = crawl.read_config()
    rounds = [n for n in crawl.committed_rounds() if upto is None or n <= upto]
    if not rounds:
        raise CrawlStateError(
            f"{crawl.path} has no committed round{'' if upto is None else f' up to {upto}'}: "
            f"start the crawl with `beamcrawl inject --crawl_dir {crawl.path} --seed URL`, "
            "or rerun the round that crashed.")
    if upto is not None and upto not in rounds:
        raise CrawlStateError(f"{crawl.path} has no committed round {upto}; committed rounds: "
                              f"{rounds[0]}..{rounds[-1]}")
    last = rounds[-1]
    reports = [crawl.read_report(n) for n in rounds]
    per_round = round_rows(zip(rounds, reports))
    reports_last = reports[-1]
    fetch_rounds = [r for r in per_round if r["fetched"] or r["visited"]]
    wall = sum(r["wall_seconds"] for r in fetch_rounds)
    visited = visited_figures(crawl, last, top)
    frontier = frontier_figures(crawl, last)
    near = near_figures(crawl, last)
    return {
        "crawl_dir": crawl.path,
        "schema_version": config.get("schema_version"),
        "strategy": reports_last.get("strategy"),
        "rounds": {"committed": len(rounds), "first": rounds[0], "last": last,
                   "fetch_rounds": len(fetch_rounds)},
        "totals": {
            "visited": visited["visited_rows"],
            "fetched": sum(r["fetched"] for r in per_round),
            "bytes": visited["bytes"],
            "known_urls": visited["visited_rows"] + frontier["frontier_rows"],
            "frontier": frontier["frontier_rows"],
            "links": link_count(crawl, last),
            "hosts_visited": visited["hosts"]["visited"],
            "hosts_known": len(visited["host_names"] | frontier["host_names"]),
            "wall_seconds": round(wall, 3),
            "pages_per_second": round(sum(r["visited"] for r in fetch_rounds) / wall, 2) if wall else 0.0,
        },
        "page_sets": dict(reports_last.get("page_sets") or {}),
        "per_round": per_round,
        "status_codes": visited["status_codes"],
        "status_classes": _sum_dicts(r.get("by_status_class") for r in reports),
        "outcomes": visited["outcomes"],
        "content_types": visited["content_types"],
        "content_types_other": visited["content_types_other"],
        "top_hosts": visited["hosts"]["top"],
        "depth": {"visited": visited["depth_visited"], "frontier": frontier["depth_frontier"]},
        "duplicates": {
            "duplicate_outcomes": int(visited["outcomes"].get(tables.DUPLICATE, 0)),
            "exact_duplicates": sum(r["exact_duplicates"] for r in per_round),
            "near_duplicates": near["pages_in_clusters"],
            "near_clusters": near["clusters"],
            "mirror_hosts_suspected": max((r["mirror_hosts_suspected"] for r in per_round), default=0),
        },
        "filtered_by_reason": filtered_figures(crawl, last),
        "refused_by_guard": _sum_dicts(r.get("refused_by_guard") for r in reports),
        "archive": {"captures": sum(r["warc_captures"] for r in per_round),
                    "bytes": sum(r["warc_bytes"] for r in per_round),
                    "files": sum(len(crawl.manifest(n).get("warc") or ()) for n in rounds)},
        "last_round": reports_last,
    }


def _table(headers, rows, indent="  "):
    """Rows as aligned text columns; numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) for i in range(len(headers))]
    out = []
    for r in cells:
        out.append(indent + "  ".join(c.rjust(w) if num else c.ljust(w)
                                      for c, w, num in zip(r, widths, numeric)).rstrip())
    return out


def _pairs(title, d, total=None):
    if not d:
        return [f"{title}: none"]
    total = total or sum(v for v in d.values() if isinstance(v, (int, float))) or 1
    return [f"{title}:"] + _table(["", "count", "share"],
                                  [(k, v, f"{v / total:.1%}") for k, v in d.items()])


def summary_text(s):
    """The terminal table of a crawl_summary()."""
    t, sets = s["totals"], s["page_sets"]
    lines = [
        f"crawl {s['crawl_dir']}: {s['rounds']['committed']} committed rounds "
        f"({s['rounds']['first']}..{s['rounds']['last']}), strategy {s.get('strategy')}",
        f"  visited {t['visited']} URLs ({t['bytes']} bytes) on {t['hosts_visited']} hosts; "
        f"frontier {t['frontier']}; {t['links']} links; "
        f"{t['pages_per_second']} pages/s over {t['wall_seconds']} s of rounds",
        "  page sets: " + ", ".join(f"{k} {sets.get(k)}" for k in PAGE_SETS
                                    if sets.get(k) is not None or k != "unknowable"),
        "",
        "rounds:",
    ]
    lines += _table(["round", "visited", "new URLs", "frontier", "downloaded", "pending",
                     "knowable", "bytes", "seconds", "pages/s"],
                    [(r["round"], r["visited"], r["new_urls"], r["frontier_size"],
                      r["page_sets"].get("downloaded"), r["page_sets"].get("pending"),
                      r["page_sets"].get("knowable"), r["bytes"], r["wall_seconds"],
                      r["pages_per_second"]) for r in s["per_round"]])
    lines += [""] + _pairs("status codes", s["status_codes"])
    lines += [""] + _pairs("outcomes", s["outcomes"])
    ctypes = dict(s["content_types"])
    if s.get("content_types_other"):
        ctypes["(other)"] = s["content_types_other"]
    lines += [""] + _pairs("content types", ctypes)
    lines += ["", f"top hosts (of {t['hosts_visited']}):"]
    lines += _table(["host", "pages", "ok", "errors", "bytes"],
                    [(h["host"], h["pages"], h["ok"], h["errors"], h["bytes"]) for h in s["top_hosts"]])
    depths = sorted(set(s["depth"]["visited"]) | set(s["depth"]["frontier"]),
                    key=lambda k: (k == NONE, int(k) if k != NONE else 0))
    lines += ["", "depth:"]
    lines += _table(["depth", "visited", "frontier"],
                    [(d, s["depth"]["visited"].get(d, 0), s["depth"]["frontier"].get(d, 0)) for d in depths])
    d = s["duplicates"]
    lines += ["", f"duplicates: {d['exact_duplicates']} exact (content seen before), "
                  f"{d['duplicate_outcomes']} visited as duplicate, {d['near_duplicates']} pages in "
                  f"{d['near_clusters']} near-duplicate clusters, "
                  f"{d['mirror_hosts_suspected']} suspected mirror hosts"]
    lines += [""] + _pairs("filtered (by reason)", s["filtered_by_reason"])
    if s["refused_by_guard"]:
        lines += [""] + _pairs("refused by the address guard", s["refused_by_guard"])
    a = s["archive"]
    if a["files"]:
        lines += ["", f"archive: {a['captures']} WARC captures, {a['bytes']} bytes in {a['files']} files"]
    return "\n".join(lines)
