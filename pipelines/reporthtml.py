"""`beamcrawl report --html FILE`: the whole-crawl report as one self-contained HTML page.

Each section is a plot (a matplotlib PNG embedded as a data: URI, drawn with the Agg
backend on a Figure of its own: no pyplot, no display, no global state) beside the table
of the same figures, so the page is for people who would rather look than read and still
says every number. Input: a pipelines.crawlsummary.crawl_summary() dict.
"""
from __future__ import annotations

import base64
import html
import io

from pipelines.crawlsummary import NONE, PAGE_SETS
from pipelines.settings import UsageError

WIDTH, HEIGHT, DPI = 7.0, 3.4, 100      # 700 x 340 pixels per plot
COLOURS = {"downloaded": "#3b7dd8", "pending": "#f0a030", "knowable": "#9aa5b1",
           "expired": "#c0504d", "unknowable": "#555555"}


def _figure():
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise UsageError("--html needs matplotlib (pip install matplotlib); the text and --json "
                         "reports work without it") from e
    fig = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _barh(ax, labels, values, colour="#3b7dd8"):
    labels, values = list(labels)[::-1], list(values)[::-1]   # largest on top
    ax.barh(range(len(values)), values, color=colour)
    ax.set_yticks(range(len(values)), [str(x) for x in labels], fontsize=8)
    ax.xaxis.get_major_locator().set_params(integer=True)
    for i, v in enumerate(values):
        ax.annotate(str(v), (v, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)


def _bars(ax, labels, values, colour="#3b7dd8"):
    ax.bar(range(len(values)), values, color=colour)
    ax.set_xticks(range(len(values)), [str(x) for x in labels], fontsize=8)
    ax.yaxis.get_major_locator().set_params(integer=True)


def plot_growth(s):
    rows = s["per_round"]
    fig, ax = _figure()
    x = [r["round"] for r in rows]
    ax.plot(x, [r["page_sets"].get("downloaded") or 0 for r in rows], "o-", label="downloaded (total)")
    ax.plot(x, [r["frontier_size"] for r in rows], "s-", label="frontier")
    ax.plot(x, [r["new_urls"] for r in rows], "^--", label="new URLs in the round")
    ax.set_xlabel("round")
    ax.set_ylabel("URLs")
    ax.set_xticks(x)
    ax.legend(fontsize=8)
    ax.set_title("Growth per round")
    return fig


def plot_page_sets(s):
    rows = s["per_round"]
    fig, ax = _figure()
    x = [r["round"] for r in rows]
    bottom = [0] * len(rows)
    for name in PAGE_SETS:
        values = [r["page_sets"].get(name) or 0 for r in rows]
        if any(values):
            ax.bar(x, values, bottom=bottom, label=name, color=COLOURS[name])
            bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(x)
    ax.set_xlabel("round")
    ax.set_ylabel("URLs")
    ax.legend(fontsize=8)
    ax.set_title("The page sets after each round")
    return fig


def plot_speed(s):
    rows = [r for r in s["per_round"] if r["visited"]]
    if not rows:
        return None
    fig, ax = _figure()
    ax.bar([r["round"] for r in rows], [r["pages_per_second"] for r in rows], color="#3b7dd8")
    ax.set_xticks([r["round"] for r in rows])
    ax.set_xlabel("round")
    ax.set_ylabel("pages/s")
    ax.set_title(f"Pages per second (whole crawl: {s['totals']['pages_per_second']})")
    return fig


def _counts_plot(title, d, horizontal=False, colour="#3b7dd8"):
    if not d:
        return None
    fig, ax = _figure()
    (_barh if horizontal else _bars)(ax, d.keys(), d.values(), colour)
    ax.set_title(title)
    return fig


def plot_depth(s):
    v, f = s["depth"]["visited"], s["depth"]["frontier"]
    keys = sorted(set(v) | set(f), key=lambda k: (k == NONE, int(k) if k != NONE else 0))
    if not keys:
        return None
    fig, ax = _figure()
    xs = range(len(keys))
    ax.bar([i - 0.2 for i in xs], [v.get(k, 0) for k in keys], width=0.4, label="visited")
    ax.bar([i + 0.2 for i in xs], [f.get(k, 0) for k in keys], width=0.4, label="frontier",
           color=COLOURS["pending"])
    ax.set_xticks(list(xs), keys, fontsize=8)
    ax.set_xlabel("link depth from the nearest seed")
    ax.legend(fontsize=8)
    ax.set_title("Depth")
    return fig


def plot_ordering(s):
    rows = s.get("ordering") or []
    if not rows:
        return None
    fig, ax = _figure()
    x = [r["round"] for r in rows]
    ax.plot(x, [r["pr_share"] for r in rows], "o-", label="true PageRank fetched so far")
    ax.plot(x, [r["relative_auc"] for r in rows], "s--", label="relative AUC (1.0 = perfect order)")
    ax.set_xticks(x)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("round")
    ax.legend(fontsize=8)
    ax.set_title("Ordering against the ground truth")
    return fig


def sections(s):
    """[(id, title, figure or None, table headers, table rows)] in page order."""
    per_round = s["per_round"]
    ctypes = dict(s["content_types"])
    if s.get("content_types_other"):
        ctypes["(other)"] = s["content_types_other"]
    depth_keys = sorted(set(s["depth"]["visited"]) | set(s["depth"]["frontier"]),
                        key=lambda k: (k == NONE, int(k) if k != NONE else 0))
    ordering = [("ordering", "Ordering against the ground truth", plot_ordering(s),
                 ["round", "fetched", "PageRank share", "relative AUC"],
                 [(r["round"], r["fetched"], r["pr_share"], r["relative_auc"]) for r in s["ordering"]])
                ] if s.get("ordering") else []
    return [
        ("growth", "Growth per round", plot_growth(s),
         ["round", "visited", "new URLs", "frontier", "downloaded"],
         [(r["round"], r["visited"], r["new_urls"], r["frontier_size"],
           r["page_sets"].get("downloaded")) for r in per_round]),
        ("page_sets", "The five page sets", plot_page_sets(s),
         ["round"] + list(PAGE_SETS),
         [[r["round"]] + [r["page_sets"].get(k) for k in PAGE_SETS] for r in per_round]),
        ("speed", "Pages per second", plot_speed(s),
         ["round", "visited", "seconds", "pages/s", "bytes"],
         [(r["round"], r["visited"], r["wall_seconds"], r["pages_per_second"], r["bytes"])
          for r in per_round if r["visited"]]),
        ("status_codes", "HTTP status codes", _counts_plot("HTTP status codes (none: no response)",
                                                          s["status_codes"]),
         ["status", "URLs"], list(s["status_codes"].items())),
        ("outcomes", "Outcomes", _counts_plot("Outcomes of visited URLs", s["outcomes"], True),
         ["outcome", "URLs"], list(s["outcomes"].items())),
        ("content_types", "Content types", _counts_plot("Content types", ctypes, True),
         ["content type", "URLs"], list(ctypes.items())),
        ("top_hosts", "Top hosts", _counts_plot(
            f"Top hosts by visited URLs (of {s['totals']['hosts_visited']})",
            {h["host"]: h["pages"] for h in s["top_hosts"]}, True),
         ["host", "pages", "ok", "errors", "bytes"],
         [(h["host"], h["pages"], h["ok"], h["errors"], h["bytes"]) for h in s["top_hosts"]]),
        ("depth", "Depth", plot_depth(s), ["depth", "visited", "frontier"],
         [(k, s["depth"]["visited"].get(k, 0), s["depth"]["frontier"].get(k, 0)) for k in depth_keys]),
        ("filtered", "Filtered URLs by reason", _counts_plot(
            "Filtered URLs by reason", s["filtered_by_reason"], True, COLOURS["knowable"]),
         ["reason", "URLs"], list(s["filtered_by_reason"].items())),
    ] + ordering


def _table_html(sid, headers, rows):
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f"<td>{'' if v is None else html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f'<table id="table-{sid}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def render_html(s) -> str:
    t, d = s["totals"], s["duplicates"]
    facts = [
        ("rounds", f"{s['rounds']['committed']} committed ({s['rounds']['first']}..{s['rounds']['last']})"),
        ("strategy", s.get("strategy")),
        ("visited", f"{t['visited']} URLs, {t['bytes']} bytes, on {t['hosts_visited']} hosts"),
        ("known", f"{t['known_urls']} URLs on {t['hosts_known']} hosts; frontier {t['frontier']}; "
                  f"{t['links']} links"),
        ("speed", f"{t['pages_per_second']} pages/s over {t['wall_seconds']} s of rounds"),
        ("page sets", ", ".join(f"{k} {s['page_sets'].get(k)}" for k in PAGE_SETS)),
        ("duplicates", f"{d['exact_duplicates']} exact, {d['duplicate_outcomes']} visited as "
                       f"duplicate, {d['near_duplicates']} pages in {d['near_clusters']} near-duplicate "
                       f"clusters, {d['mirror_hosts_suspected']} suspected mirror hosts"),
        ("refused by the address guard", ", ".join(f"{k} {v}" for k, v in s["refused_by_guard"].items())
         or "none"),
        ("archive", f"{s['archive']['captures']} WARC captures in {s['archive']['files']} files, "
                    f"{s['archive']['bytes']} bytes"),
    ]
    parts = [f"<h1>Crawl report: {html.escape(s['crawl_dir'])}</h1>",
             '<table id="table-summary"><tbody>' + "".join(
                 f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in facts)
             + "</tbody></table>"]
    for sid, title, fig, headers, rows in sections(s):
        parts.append(f'<section id="{sid}"><h2>{html.escape(title)}</h2>')
        if fig is not None:
            parts.append(f'<img alt="{html.escape(title)}" src="data:image/png;base64,{_png(fig)}">')
        parts.append(_table_html(sid, headers, rows) if rows else "<p>none</p>")
        parts.append("</section>")
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;"
             "padding:2px 8px;text-align:left}img{max-width:100%}")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>beamcrawl report: {html.escape(s['crawl_dir'])}</title><style>{style}</style>"
            "</head><body>\n" + "\n".join(parts) + "\n</body></html>\n")


def write_html(s, path) -> None:
    """Render the report and write it to `path` (local, or any Beam filesystem)."""
    page = render_html(s).encode("utf-8")
    from apache_beam.io.filesystems import FileSystems
    try:
        with FileSystems.create(path) as f:
            f.write(page)
    except Exception as e:
        raise UsageError(f"--html {path}: cannot write this file ({type(e).__name__}: {e}); "
                         "give a file path that can be written (its folder is created)") from e
