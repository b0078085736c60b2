"""End-to-end: `beamcrawl report` on a whole crawl of the small simulated web (#14).

One crawl of three rounds (with --max_depth 2, so some links are filtered). Every figure of
the text/JSON report and every table of the HTML report is checked against the crawl's
Parquet files as DuckDB reads them (an independent reader), each embedded plot is opened
as a PNG, and bad invocations are one `error:` line with exit status 2.
"""
import base64
import contextlib
import io
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest
from PIL import Image

from pipelines import cli
from pipelines import report as report_mod
from pipelines.crawldir import LAYERED, CrawlDir
from tests.e2e import crawlstate


@pytest.fixture(scope="module")
def crawl(simweb_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("report_crawl") / "crawl"
    crawlstate.start_crawl(simweb_small, d, "--max_depth", "2")
    crawlstate.run_rounds(d, "--rounds", "3")
    return d


def run(argv):
    """report.main(argv) -> (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = report_mod.main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


def whole(d, *extra):
    status, out, err = run(["--crawl_dir", d, "--json", *extra])
    assert status == 0, err
    return json.loads(out)


def sql(d, table, query):
    """Rows of `query` over `table` as of the last committed round, read by DuckDB: the files
    of every committed round, or for a layered table (the frontier: a snapshot and deltas)
    its resolved view, since its files' union also holds rows that have left it."""
    c = CrawlDir(str(d))
    con = duckdb.connect()
    if table in LAYERED:
        view = c.read_table(table, c.last_committed())   # noqa: F841 - DuckDB reads it by name
        con.execute("CREATE VIEW t AS SELECT * FROM view")
    else:
        files = c.table_files(table, c.last_committed())
        con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet({[str(f) for f in files]!r}, union_by_name=true)")
    return con.execute(query).fetchall()


def counts(d, table, column, key=str):
    return {("none" if k is None else key(k)): n
            for k, n in sql(d, table, f"SELECT {column}, count(*) FROM t GROUP BY 1")}


def test_figures_agree_with_the_tables(crawl):
    s = whole(crawl)
    c = CrawlDir(str(crawl))
    last = c.last_committed()
    assert s["rounds"] == {"committed": 4, "first": 0, "last": 3, "fetch_rounds": 3}
    assert s["status_codes"] == counts(crawl, "visited", "http_status")
    assert s["outcomes"] == counts(crawl, "visited", "outcome")
    assert s["content_types"] == counts(crawl, "visited", "content_type")
    assert s["depth"]["visited"] == counts(crawl, "visited", "depth")
    assert s["depth"]["frontier"] == counts(crawl, "frontier", "depth")
    assert s["filtered_by_reason"] == counts(crawl, "filtered", "reason")
    assert s["filtered_by_reason"].get("depth", 0) > 0, "--max_depth 2 filters deeper links"
    hosts = sql(crawl, "visited", "SELECT host, count(*), count(*) FILTER (outcome = 'ok'), "
                                  "sum(bytes) FROM t GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10")
    assert [(h["host"], h["pages"], h["ok"], h["bytes"]) for h in s["top_hosts"]] == \
        [tuple(r) for r in hosts]
    (visited, nbytes), = sql(crawl, "visited", "SELECT count(*), sum(bytes) FROM t")
    assert (s["totals"]["visited"], s["totals"]["bytes"]) == (visited, nbytes)
    assert s["totals"]["links"] == sql(crawl, "links", "SELECT count(*) FROM t")[0][0]
    assert s["totals"]["frontier"] == sql(crawl, "frontier", "SELECT count(*) FROM t")[0][0]
    by_round = dict(sql(crawl, "visited", "SELECT round, count(*) FROM t GROUP BY 1"))
    assert [r["visited"] for r in s["per_round"]] == [by_round.get(n, 0) for n in range(4)]
    assert s["page_sets"] == c.read_report(last)["page_sets"]
    assert [r["page_sets"]["downloaded"] for r in s["per_round"]] == \
        [c.read_report(n)["page_sets"]["downloaded"] for n in range(4)]
    assert s["duplicates"]["duplicate_outcomes"] == s["outcomes"].get("duplicate", 0)


def test_pages_per_second_is_the_pages_over_the_fetch_rounds_wall_time(crawl, tmp_path):
    """A copy of the crawl whose rounds took 7 (inject: no pages), 2, 3 and 5 s: the pages
    DuckDB counts in its visited files over 10 s."""
    d = tmp_path / "crawl"
    shutil.copytree(crawl, d)
    for n, seconds in enumerate((7.0, 2.0, 3.0, 5.0)):
        path = d / "rounds" / f"{n:06d}" / "report.json"
        r = json.loads(path.read_text())
        r["wall_seconds"] = seconds
        path.write_text(json.dumps(r))
    (pages,), = sql(d, "visited", "SELECT count(*) FROM t")
    (last,), = sql(d, "visited", "SELECT count(*) FROM t WHERE round = 3")
    assert pages > last > 0
    s = whole(d)
    assert s["totals"]["wall_seconds"] == 10.0
    assert s["totals"]["pages_per_second"] == pytest.approx(pages / 10.0, abs=0.005)


def test_the_text_report_is_a_table_of_the_same_figures(crawl):
    s = whole(crawl)
    status, out, err = run(["--crawl_dir", crawl])
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"crawl {crawl}: 4 committed rounds (0..3)")
    for code, n in s["status_codes"].items():
        assert any(line.split()[:2] == [code, str(n)] for line in lines), code
    top = s["top_hosts"][0]
    assert any(line.split()[:3] == [top["host"], str(top["pages"]), str(top["ok"])] for line in lines)
    rows = [line.split() for line in lines[lines.index("rounds:") + 2:lines.index("rounds:") + 6]]
    assert [int(r[1]) for r in rows] == [r["visited"] for r in s["per_round"]]


class _Page(HTMLParser):
    """The images (alt, src) and tables ({id: [[cell text]]}) of an HTML page."""

    def __init__(self):
        super().__init__()
        self.images, self.tables, self._table, self._row, self._cell = [], {}, None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append((a.get("alt"), a.get("src", "")))
        elif tag == "table":
            self._table = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None


def test_html_report_embeds_real_plots_and_tables_of_the_crawl(crawl, tmp_path):
    path = tmp_path / "out" / "report.html"
    status, out, err = run(["--crawl_dir", crawl, "--html", path])
    assert status == 0 and err.strip() == f"wrote {path}"
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    alts = [alt for alt, _ in page.images]
    assert alts == ["Growth per round", "The five page sets", "Pages per second", "HTTP status codes",
                    "Outcomes", "Content types", "Top hosts", "Depth", "Filtered URLs by reason"]
    for alt, src in page.images:
        assert src.startswith("data:image/png;base64,"), alt
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        image = Image.open(io.BytesIO(data))
        image.verify()                                  # a whole, well-formed PNG
        image = Image.open(io.BytesIO(data))
        assert image.format == "PNG" and image.size[0] >= 500 and image.size[1] >= 250, (alt, image.size)
        lo, hi = image.convert("L").getextrema()
        assert hi - lo > 100, f"{alt}: a blank image"
    assert {r[0]: int(r[1]) for r in page.tables["table-status_codes"][1:]} == \
        counts(crawl, "visited", "http_status")
    assert {r[0]: int(r[1]) for r in page.tables["table-filtered"][1:]} == counts(crawl, "filtered", "reason")
    assert {r[0]: (int(r[1]), int(r[2])) for r in page.tables["table-depth"][1:]} == {
        k: (counts(crawl, "visited", "depth").get(k, 0), counts(crawl, "frontier", "depth").get(k, 0))
        for k in set(counts(crawl, "visited", "depth")) | set(counts(crawl, "frontier", "depth"))}
    hosts = sql(crawl, "visited", "SELECT host, count(*) FROM t GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10")
    assert [(r[0], int(r[1])) for r in page.tables["table-top_hosts"][1:]] == [tuple(h) for h in hosts]
    c = CrawlDir(str(crawl))
    assert [[int(x) for x in r] for r in page.tables["table-growth"][1:]] == [
        [n, r["visited"], r["new_urls"], r["frontier_size"], r["page_sets"]["downloaded"]]
        for n, r in ((n, c.read_report(n)) for n in range(4))]


def test_per_round_report_and_ground_truth_still_work(crawl, simweb_small, tmp_path):
    c = CrawlDir(str(crawl))
    status, out, _ = run(["--crawl_dir", crawl, "--round", "2"])
    assert status == 0 and out.strip() == report_mod.summary(c.read_report(2))
    status, out, _ = run(["--crawl_dir", crawl, "--round", "2", "--json"])
    assert json.loads(out) == c.read_report(2)
    truth = tmp_path / "truth"
    simweb_small.web.export(truth)
    s = whole(crawl, "--ground_truth", truth)
    assert s["page_sets"]["unknowable"] > 0
    assert [o["round"] for o in s["ordering"]] == [1, 2, 3]
    status, out, _ = run(["--crawl_dir", crawl, "--ground_truth", truth, "--html", tmp_path / "r.html"])
    assert "ordering vs ground truth" in out
    page = _Page()
    page.feed((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert page.images[-1][0] == "Ordering against the ground truth"
    assert [[float(x) for x in r] for r in page.tables["table-ordering"][1:]] == \
        [[o["round"], o["fetched"], o["pr_share"], o["relative_auc"]] for o in s["ordering"]]


def test_reports_missing_optional_fields_still_read(crawl, tmp_path):
    """Older rounds lack fields, later ones may add some: a missing field counts as 0."""
    d = tmp_path / "crawl"
    shutil.copytree(crawl, d)
    path = d / "rounds" / "000002" / "report.json"
    r = json.loads(path.read_text())
    for key in ("content_seen", "stats", "refused_by_guard", "pages_per_second", "duplicates", "strategy"):
        r.pop(key)
    r["page_sets"].pop("expired")
    r["some_later_field"] = {"x": 1}
    path.write_text(json.dumps(r))
    s = whole(d)
    assert s["per_round"][2]["pages_per_second"] == 0 and s["per_round"][2]["page_sets"]["expired"] is None
    assert s["totals"]["visited"] == whole(crawl)["totals"]["visited"]
    status, _, err = run(["--crawl_dir", d, "--html", tmp_path / "r.html"])
    assert status == 0, err


def _snapshot(d):
    d = Path(d)
    return sorted((str(p), p.stat().st_size) for p in d.rglob("*")) if d.exists() else None


@pytest.mark.parametrize("case, fragment", [
    ("missing", "is not a crawl directory"),
    ("not_a_crawl", "is not a crawl directory"),
    ("no_round", "has no committed round"),
    ("round_9", "has no committed round 9; committed rounds: 0..3"),
    ("html_is_a_folder", "--html"),
    ("top_0", "--top 0: must be at least 1"),
])
def test_bad_input_is_one_error_line_and_exit_2(case, fragment, crawl, tmp_path, capsys):
    d, extra = tmp_path / "x", []
    if case == "not_a_crawl":
        d.mkdir()
        (d / "notes.txt").write_text("hello")
    elif case == "no_round":
        d.mkdir()
        (d / "crawl.json").write_text(json.dumps({"schema_version": 1}))
    elif case in ("round_9", "html_is_a_folder", "top_0"):
        d = crawl
        extra = {"round_9": ["--round", "9"], "html_is_a_folder": ["--html", tmp_path],
                 "top_0": ["--top", "0"]}[case]
    before = _snapshot(d)
    capsys.readouterr()
    assert cli.main(["report", "--crawl_dir", str(d), *map(str, extra)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], captured.err
    assert captured.out == ""
    assert _snapshot(d) == before
