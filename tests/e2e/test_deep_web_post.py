"""End-to-end (#17): POST forms only on --deep_web_post_hosts, and per-host query budgets.

A small web (the jobs site and the library) is crawled twice with real rounds:

- with ``--deep_web_post_hosts library.simweb.test`` and ``--deep_web_host_budgets
  jobs.simweb.test=12``: the library's POST form ("suggest a purchase") is submitted by
  keyword probing as form-encoded POSTs (each body once, never resent), its answers are
  digested into records, each POST is its own visited row and frontier fingerprint, and the
  WARC request records carry the method and body (`warcio check` passes); the jobs site gets
  at most 12 submissions while the library keeps the default budget;
- without the flag: the same POST form is recorded and nothing is POSTed.
"""
import collections
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from warcio.archiveiterator import ArchiveIterator

from pipelines import inject
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
# the same small jobs + library web, started once for this module by the same fixture
from tests.e2e.test_deep_web import DELAY, _seeds, web  # noqa: F401
from tests.simweb import requestlog

JOBS_BUDGET = 12


def _crawl(web, d, rounds, *extra):
    args = crawlstate.crawl_args(web, d, "--deep_web", "forms", "--delay_per_host", str(DELAY),
                                 "--deep_web_words_per_round", "10", *extra)
    start = time.time()
    assert inject.main(args + [a for s in _seeds(web) for a in ("--seed", s)]) == 0
    reports = crawlstate.run_rounds(d, "--rounds", str(rounds))
    return reports, [r for r in web.requests() if start <= r["start"] <= time.time()]


@pytest.fixture(scope="module")
def allowed(web, tmp_path_factory):
    d = tmp_path_factory.mktemp("post") / "crawl"
    titles = web.ground_truth["library_records"].column("title").to_pylist()
    common = [w for w, _ in collections.Counter(w.lower() for t in titles for w in t.split()).most_common(3)]
    reports, log = _crawl(web, d, 6, "--deep_web_post_hosts", "library.simweb.test",
                          "--deep_web_seed_words", ",".join(common),
                          "--deep_web_host_budgets", f"jobs.simweb.test={JOBS_BUDGET}")
    return d, reports, log


@pytest.fixture(scope="module")
def refused(web, tmp_path_factory):
    d = tmp_path_factory.mktemp("nopost") / "crawl"
    reports, log = _crawl(web, d, 3)
    return d, reports, log


def test_post_forms_are_submitted_only_on_the_allowed_host(allowed, refused):
    _, _, log = allowed
    posts = [r for r in log if r["method"] == "POST"]
    assert posts and {r["host"].lower() for r in posts} == {"library.simweb.test"}
    assert {r["path"] for r in posts} == {"/suggest"}
    assert all(r["headers"].get("Content-Type") == "application/x-www-form-urlencoded" for r in posts)
    assert all(r["status"] == 200 and dict(parse_qsl(r["body"])).get("title") for r in posts)
    assert [b for b, n in collections.Counter(r["body"] for r in posts).items() if n > 1] == []
    gaps = requestlog.min_gap_per_host(log, measure="end")
    assert min(gaps.values()) >= DELAY - 0.005, gaps
    assert max(requestlog.max_concurrency_per_host(log).values()) == 1
    d, _, log = refused
    assert [r for r in log if r["method"] != "GET"] == []
    lib = crawlstate.deepweb_state(d)["library.simweb.test"]
    assert [f["phase"] for k, f in lib["forms"].items() if f["method"] == "post"] == ["post"]


def test_post_answers_are_digested_and_each_post_is_its_own_request(allowed):
    d, _, log = allowed
    lib = crawlstate.deepweb_state(d)["library.simweb.test"]
    posted = {k: q for k, q in lib["queries"].items() if k.startswith("POST ")}
    done = [q for q in posted.values() if q["state"] == "done"]
    assert done and sum(len(q["records"]) for q in done) > 0
    c = CrawlDir(str(d))
    visited = c.read_table("visited", c.last_committed(), columns=["fp", "url", "method",
                                                                   "request_body", "outcome"]).to_pylist()
    rows = [v for v in visited if v["method"] == "POST"]
    assert len(rows) == len({v["fp"] for v in rows}) == len([r for r in log if r["method"] == "POST"])
    assert {v["url"].rsplit("/", 1)[-1] for v in rows} == {"suggest"}
    assert {v["request_body"] for v in rows} == {r["body"] for r in log if r["method"] == "POST"}
    assert all(v["outcome"] == "ok" for v in rows)


def test_per_host_budget_caps_one_host_and_the_other_keeps_the_default(allowed):
    d, _, log = allowed
    state = crawlstate.deepweb_state(d)
    assert state["jobs.simweb.test"]["sent"] == JOBS_BUDGET     # capped (it would use more)
    assert state["library.simweb.test"]["sent"] > JOBS_BUDGET   # the default 500
    assert len(state["jobs.simweb.test"]["queries"]) == JOBS_BUDGET
    firsts = [r for r in log if r["host"].lower() == "jobs.simweb.test" and r["path"].startswith("/search")
              and "page=" not in r["path"]]                        # submissions, not their result pages
    assert 0 < len(firsts) <= JOBS_BUDGET


def test_warc_request_records_carry_method_and_body(allowed):
    d, _, log = allowed
    paths = sorted(str(p) for p in Path(d).glob("rounds/*/warc/*.warc.gz"))
    assert paths
    bodies = []
    for p in paths:
        with open(p, "rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type == "request" and rec.http_headers.protocol == "POST":
                    bodies.append(rec.content_stream().read().decode())
                    assert rec.http_headers.get_header("Content-Type") == "application/x-www-form-urlencoded"
    assert sorted(bodies) == sorted(r["body"] for r in log if r["method"] == "POST")
    check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", "-v", *paths],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    index = "".join(Path(p).read_text() for p in Path(d).glob("rounds/*/warc/index.cdxj"))
    assert index.count("__wb_method=post") == len(bodies)
