"""End-to-end (#17): crawl the jobs site and the library with --deep_web forms.

A small web (150 jobs, 200 books) is crawled from the two forms' pages until nothing is
due: both sites' records are reached through their forms (the library with no code of its
own), the server log shows per-host politeness, no POST and no repeated request, sort is
only ever submitted as ISIT's samples, and the probing state is in the crawl directory;
a round killed before its commit reruns to the same probing state.
"""
import signal
import time
from urllib.parse import parse_qsl, urlsplit

import pytest

from pipelines import inject
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from tests.simweb import requestlog
from tests.simweb.process import SimWebProcess

WEB = dict(n_records=150, library=True, library_records=200, library_vocab=300,
           library_max_results=60)
DELAY = 0.02


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    p = SimWebProcess("small", seed=1, workdir=tmp_path_factory.mktemp("simweb_deep"), clock_file=True, **WEB)
    try:
        yield p
    finally:
        p.stop()


def _seeds(web):
    return [f"http://{h}:{web.port}/" for h in ("jobs.simweb.test", "library.simweb.test")]


def _start(web, d):
    args = crawlstate.crawl_args(web, d, "--deep_web", "forms", "--delay_per_host", str(DELAY),
                                 "--deep_web_words_per_round", "40")
    assert inject.main(args + [a for s in _seeds(web) for a in ("--seed", s)]) == 0


@pytest.fixture(scope="module")
def crawl(web, tmp_path_factory):
    d = tmp_path_factory.mktemp("deep") / "crawl"
    start = time.time()
    _start(web, d)
    reports = crawlstate.run_rounds(d, "--until_empty", "--rounds", "25")
    log = [r for r in web.requests() if start <= r["start"] <= time.time()]
    return d, reports, log


def test_records_of_both_sites_are_reached_through_their_forms(crawl, web):
    d, reports, _ = crawl
    c = CrawlDir(str(d))
    visited = set(c.read_table("visited", c.last_committed(), columns=["url"]).column("url").to_pylist())
    for table in ("records", "library_records"):
        truth = set(web.ground_truth[table].column("url").to_pylist())
        assert len(truth & visited) >= 0.9 * len(truth), (table, len(truth & visited), len(truth))
    assert reports[-1]["deep_web"]["forms"] == 3   # jobs, the library's search and its POST form


def test_politeness_holds_no_post_and_nothing_requested_twice(crawl):
    _, _, log = crawl
    assert log
    gaps = requestlog.min_gap_per_host(log, measure="end")
    assert min(gaps.values()) >= DELAY - 0.005, gaps
    assert max(requestlog.max_concurrency_per_host(log).values()) == 1
    assert [r for r in log if r["method"] != "GET" or r["path"].startswith("/suggest")] == []
    assert requestlog.requested_twice(log) == []


def test_presentation_inputs_are_submitted_only_as_samples(crawl):
    _, _, log = crawl
    jobs = [dict(parse_qsl(urlsplit(r["path"]).query)) for r in log
            if r["host"].lower().startswith("jobs.") and r["path"].startswith("/search")]
    assert {q.get("sort") for q in jobs} == {"date", "salary", "title"}
    assert sum(q.get("sort") != "date" for q in jobs) == 2          # the two samples
    lib = [dict(parse_qsl(urlsplit(r["path"]).query)) for r in log
           if r["host"].lower().startswith("library.") and r["path"].startswith("/catalogue")]
    assert sum(q.get("order") != "rel" for q in lib) == 2


def test_probing_state_and_forms_are_in_the_crawl_directory(crawl):
    d, _, _ = crawl
    state = crawlstate.deepweb_state(d)
    jobs, lib = state["jobs.simweb.test"], state["library.simweb.test"]
    (jt,), (lt,) = jobs["templates"].values(), lib["templates"].values()
    assert jt["sort"]["status"] == "uninformative" and lt["order"]["status"] == "uninformative"
    assert jt["category"]["share"] >= 0.2 and jt["category"]["status"] in ("done", "covered")
    words = [w for f in lib["forms"].values() for w in f.get("kw", {}).get("used", [])]
    assert words and all(q["state"] in ("done", "lost") for q in lib["queries"].values())
    assert sum(q["new"] for q in lib["queries"].values()) == len(lib["records"])
    c = CrawlDir(str(d))
    forms = c.read_table("forms", c.last_committed()).to_pylist()
    assert {(f["action"].split("/", 3)[-1], f["method"]) for f in forms} == {
        ("search", "get"), ("catalogue/find", "get"), ("suggest", "post")}


@pytest.mark.slow
@pytest.mark.long
def test_killed_round_reruns_to_the_same_probing_state(crawl, web, tmp_path):
    d, reports, _ = crawl
    target = 2
    crash = tmp_path / "crash"
    _start(web, crash)
    crawlstate.run_rounds(crash, "--rounds", str(target - 1))
    proc = crawlstate.run_round_subprocess(crash, env={"BEAMCRAWL_CRASH_AT": "before_commit"})
    proc.wait(timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()[-3000:]
    assert CrawlDir(str(crash)).last_committed() == target - 1
    proc = crawlstate.run_round_subprocess(crash)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert crawlstate.deepweb_state(crash, target) == crawlstate.deepweb_state(d, target)
    crawlstate.assert_same_state(crawlstate.state(d, target), crawlstate.state(crash, target))
