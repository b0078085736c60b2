"""Helpers for end-to-end tests: run crawls of a simulated web, compare crawl states."""
import os
import subprocess
import sys
from pathlib import Path

from pipelines import crawl as crawl_mod
from pipelines import inject
from pipelines.crawldir import CrawlDir

REPO = Path(__file__).resolve().parents[2]

# Columns that do not depend on wall-clock time, per table.
STABLE = {
    "frontier": ("url", "host", "depth", "inlinks", "anchors", "retries", "source", "first_parent",
                 "discovered_round", "score", "redirects"),
    "visited": ("url", "host", "outcome", "reason", "http_status", "depth", "round", "content_type",
                "redirect_to", "first_parent", "outlinks", "title", "canonical", "meta_robots"),
    "links": ("src", "dst", "anchor", "round"),
    "filtered": ("url", "reason", "round", "first_parent"),
    "hosts": ("host", "robots_state", "robots_status", "crawl_delay", "sitemaps"),
}


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


def _freeze(v):
    if isinstance(v, list):
        return tuple(sorted(_freeze(x) for x in v))
    if isinstance(v, float):
        return round(v, 9)
    return v


def state(crawl_dir, round_no=None):
    """{table: set of rows (stable columns only)} as of a committed round."""
    c = CrawlDir(str(crawl_dir))
    n = c.last_committed() if round_no is None else round_no
    out = {}
    for table, cols in STABLE.items():
        t = c.read_table(table, n, columns=list(cols))
        rows = [tuple(_freeze(r[k]) for k in cols) for r in t.to_pylist()]
        out[table] = rows
    return out


def assert_same_state(a, b):
    for table in STABLE:
        ra, rb = a[table], b[table]
        assert len(ra) == len(set(ra)), f"{table}: duplicate rows"
        sa, sb = set(ra), set(rb)
        assert sa == sb, (f"{table}: {len(sa - sb)} rows only in the first state, {len(sb - sa)} only "
                          f"in the second; e.g. {sorted(sa - sb, key=str)[:2]} / {sorted(sb - sa, key=str)[:2]}")
