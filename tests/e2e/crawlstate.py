"""Helpers for end-to-end tests: run crawls of a simulated web, compare crawl states.

`state(crawl_dir, n)` reads everything committed round n's view holds: every table the crawl
directory commits (crawldir.SNAPSHOT_TABLES + DELTA_TABLES), every column of its schema, and
the round's WARC records; `assert_same_state(a, b)` says two such states are the same crawl.
Only the columns in VARIES are left out, each for the reason given there: they differ
between two correct crawls by design. Two crawls compare equal only when both committed
something and neither holds a row twice.

The URL strings and their fingerprints carry the web's port: compare crawls of one web
process (the session's `simweb_small`, whose clock is frozen so a page is the same bytes
whenever it is fetched).
"""
import collections
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

from pipelines import crawl as crawl_mod
from pipelines import inject
from pipelines.crawldir import DELTA_TABLES, SNAPSHOT_TABLES, CrawlDir
from schemas import tables

REPO = Path(__file__).resolve().parents[2]

# outcomes of a URL that was never requested from its server
NOT_REQUESTED = (tables.ROBOTS_DENIED, tables.FORBIDDEN_ADDRESS)

TABLES = SNAPSHOT_TABLES + DELTA_TABLES

# The columns two correct crawls of the same web may disagree on, per table, and why.
VARIES = {
    "visited": {"fetch_time": "the wall-clock time the request started",
                "elapsed_ms": "how long the request took"},
    "frontier": {"not_before": "a transient failure's backoff: wall-clock time of the failure plus the delay"},
    "hosts": {"robots_fetched_at": "the wall-clock time robots.txt was fetched",
              "last_fetch_time": "the wall-clock time of the host's last request",
              "address_expires": "the wall-clock time of the DNS lookup plus its TTL",
              "robots_unreachable_since": "the wall-clock time of the first failed robots.txt fetch"},
    "recrawl": {"last_visit": "the round's clock: wall-clock time unless --round_time sets it"},
}

# Keys no two rows of a table share (one row per URL, host, ...); other tables: no two equal rows.
KEYS = {"frontier": ("fp",), "hosts": ("host",), "opic": ("fp",), "deepweb": ("host",),
        "visited": ("fp", "round"), "pages": ("fp", "round"), "filtered": ("fp", "round"),
        "near_duplicates": ("fp", "round"), "recrawl": ("fp", "round"), "docfreq": ("term",)}

# WARC record fields compared: round, type, target URI, status or request line, payload digest
# (not WARC-Date, WARC-Record-ID nor the HTTP headers: times, random ids, the server's Date;
# a metadata record's payload without its fetchTimeMs line, a duration)
WARC_COLUMNS = ("round", "type", "uri", "http", "payload")


def columns(table):
    """The columns of `table` that `state` compares."""
    return tuple(n for n in tables.TABLES[table].names if n not in VARIES.get(table, {}))


def crawl_args(web, crawl_dir, *extra, expand_duplicates=True):
    """The e2e crawl flags; expand_duplicates=None leaves --expand_duplicates at its default."""
    expand = [] if expand_duplicates is None else ["--expand_duplicates", str(expand_duplicates).lower()]
    return ["--crawl_dir", str(crawl_dir), "--resolve_file", str(web.hostmap_file),
            "--allow_loopback", "true", "--delay_per_host", "0.05", "--deny_extensions", "",
            "--max_pages", "1000", "--max_per_host", "1000", "--allow_domains", "simweb.test",
            "--sitemaps", "false", "--keep_snapshots", "0", *expand,   # tests read old rounds
            *extra]


def start_crawl(web, crawl_dir, *extra, expand_duplicates=True):
    args = crawl_args(web, crawl_dir, *extra, expand_duplicates=expand_duplicates)
    assert inject.main(args + [a for s in web.seeds for a in ("--seed", s)]) == 0


def run_rounds(crawl_dir, *argv):
    return crawl_mod.run_crawl(["--crawl_dir", str(crawl_dir), *argv], out=lambda s: None)


def run_round_subprocess(crawl_dir, *argv, env=None, timeout=300):
    """`python -m pipelines.round` in a child process (for crash tests)."""
    return subprocess.Popen([sys.executable, "-m", "pipelines.round", "--crawl_dir", str(crawl_dir), *argv],
                            cwd=REPO, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def deepweb_state(crawl_dir, n=None):
    """{host name without port: its deep-web probing state (parsed JSON)} as of round n."""
    c = CrawlDir(str(crawl_dir))
    t = c.read_table("deepweb", c.last_committed() if n is None else n, columns=["host", "state"])
    return {h.split(":")[0]: json.loads(s) for h, s in zip(t.column("host").to_pylist(),
                                                           t.column("state").to_pylist())}


def _freeze(v):
    """A cell as a hashable, comparable value: lists as sorted tuples (anchors and sitemaps
    are merged in arrival order), floats to 9 decimals (sums in another order), NaN as a name."""
    if isinstance(v, list):
        return tuple(sorted((_freeze(x) for x in v), key=repr))
    if isinstance(v, float):
        return "nan" if math.isnan(v) else round(v, 9)
    return v


def _rows(c, table, n):
    cols = columns(table)
    t = c.read_table(table, n, columns=list(cols))
    if table == "docfreq":   # deltas per round; the view is their sum per term
        sums = collections.Counter()
        for term, df in zip(t.column("term").to_pylist(), t.column("df").to_pylist()):
            sums[term] += df
        return cols, sorted(sums.items())
    return cols, [tuple(_freeze(r[k]) for k in cols) for r in t.to_pylist()]


def _warc_rows(c, n):
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems
    from warcio.archiveiterator import ArchiveIterator
    out = []
    for k in c.committed_rounds():
        if k > n:
            break
        for name in c.manifest(k).get("warc", []):
            # through Beam's FileSystems, as the crawler writes them: the crawl may be on s3://
            with FileSystems.open(FileSystems.join(c.warc_dir(k), name),
                                  compression_type=CompressionTypes.UNCOMPRESSED) as f:
                for r in ArchiveIterator(f):
                    if r.rec_type == "warcinfo":
                        continue
                    payload = r.content_stream().read()
                    if r.rec_type == "metadata":
                        payload = b"\n".join(line for line in payload.splitlines()
                                             if not line.startswith(b"fetchTimeMs:"))
                    h = r.http_headers   # "HTTP/1.1 200 OK", "GET /p HTTP/1.1"
                    http = f"{h.protocol} {h.statusline}" if h else None
                    out.append((k, r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), http,
                                hashlib.sha1(payload).hexdigest()))
    return out


def state(crawl_dir, round_no=None):
    """{"round": n, "tables": {table: (column names, rows)}} as of committed round n (the
    last by default): every table, every column but VARIES's, and the WARC records ("warc")."""
    c = CrawlDir(str(crawl_dir))
    n = c.last_committed() if round_no is None else round_no
    out = {t: _rows(c, t, n) for t in TABLES}
    out["warc"] = (WARC_COLUMNS, _warc_rows(c, n))
    return {"round": n, "tables": out}


def _check_side(name, s, nonempty):
    for table, (cols, rows) in s["tables"].items():
        key = KEYS.get(table)
        idx = [cols.index(k) for k in key] if key else range(len(cols))
        keys = [tuple(r[i] for i in idx) for r in rows]
        twice = [k for k, m in collections.Counter(keys).items() if m > 1]
        assert not twice, f"{name} state, {table}: {len(twice)} {key or 'rows'} held twice, e.g. {twice[:2]}"
    empty = [t for t in nonempty if not s["tables"][t][1]]
    assert not empty, f"{name} state (round {s['round']}) has no rows in {empty}: nothing to compare"


def assert_same_state(a, b, nonempty=None):
    """`a` and `b` (from `state`) hold the same rows in every table. Both must be free of
    duplicates and hold rows in `nonempty` (default: the frontier of round 0, the visited
    pages and links of a later round)."""
    assert a["round"] == b["round"], f"states of rounds {a['round']} and {b['round']}"
    if nonempty is None:
        nonempty = ("frontier",) if a["round"] == 0 else ("visited", "links")
    _check_side("first", a, nonempty)
    _check_side("second", b, nonempty)
    for table, (cols, ra) in a["tables"].items():
        rb = b["tables"][table][1]
        ca, cb = collections.Counter(ra), collections.Counter(rb)
        if ca != cb:
            only_a, only_b = sorted(ca - cb, key=repr), sorted(cb - ca, key=repr)
            raise AssertionError(
                f"{table}: {len(only_a)} rows only in the first state, {len(only_b)} only in the second; "
                f"{_example(cols, only_a, only_b)}")


def _example(cols, only_a, only_b):
    """The first row only in one state, named by its first columns, and how it differs from
    its closest row only in the other (just the columns that differ)."""
    if not only_a or not only_b:
        row = (only_a or only_b)[0]
        return "e.g. " + ", ".join(f"{c}={v!r}" for c, v in list(zip(cols, row))[:4])
    ra = only_a[0]
    rb = min(only_b, key=lambda r: sum(x != y for x, y in zip(ra, r)))
    differ = {c: (x, y) for c, x, y in zip(cols, ra, rb) if x != y}
    name = ", ".join(f"{c}={v!r}" for c, v in list(zip(cols, ra))[:2])
    return f"e.g. the row {name}: columns {sorted(differ)} differ: " + "; ".join(
        f"{c} {str(x)[:80]} / {str(y)[:80]}" for c, (x, y) in differ.items())
