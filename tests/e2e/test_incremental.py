"""End-to-end: incremental crawling (issue #13) of the small simulated web on a simulated
clock: revisits send the last visit's validators, unchanged pages answer 304 (no body, the
bytes counted as saved), changes detected are exactly the web's true changes."""
import posixpath

import pytest

from pipelines.config import RoundConfig
from pipelines.crawldir import CrawlDir
from pipelines.revisits import COMPACTED_FILE, plan_revisits
from schemas import tables
from pipelines.settings import effective_round_settings
from tests.e2e import crawlstate
from tests.simweb.process import SimWebProcess
from transforms.recrawl.state import latest
from transforms.tableio.files import read_view

DAY = 86400.0


@pytest.fixture(scope="module")
def incremental_crawl(tmp_path_factory):
    web = SimWebProcess("small", seed=3, clock_file=True, base_rate_per_day=1.0)
    try:
        t0 = web.web.cfg.sim_start
        web.set_time(t0)
        d = tmp_path_factory.mktemp("incremental") / "crawl"
        crawlstate.start_crawl(web, d, "--mode", "incremental", "--refetch_share", "0.5",
                               "--refetch_policy", "uniform", "--sitemaps", "true")
        # day 0: crawl until nothing new is due (revisits are not due on the same day)
        reports = crawlstate.run_rounds(d, "--until_empty", "--round_time", str(t0))
        times = [t0]
        for k in (1, 2):   # days 1 and 2: one round each, revisits only
            t = t0 + k * DAY
            web.set_time(t)
            reports += crawlstate.run_rounds(d, "--rounds", "1", "--round_time", str(t))
            times.append(t)
        yield web, d, reports, times, web.requests()
    finally:
        web.stop()


def test_revisits_send_validators_and_unchanged_pages_cost_no_body(incremental_crawl):
    web, d, reports, times, log = incremental_crawl
    rec = [r["recrawl"] for r in reports[-3:]]
    assert rec[0]["revisited"] == 0
    assert rec[1]["revisited"] > 50 and rec[2]["revisited"] > 50
    assert rec[1]["not_modified"] > 0 and rec[1]["bytes_saved"] > 0
    conditional = [r for r in log if r.get("headers", {}).get("If-None-Match")]
    c = CrawlDir(str(d))
    state = latest(c.read_table("recrawl", c.last_committed())).to_pylist()
    assert {r["intervals"] for r in state if r["active"]} == {2}   # every page, both days
    # a revisit sends the ETag of the last full response (sitemaps and some documents have none)
    with_etag = sum(1 for r in state if r["active"] and r["etag"])
    assert len(conditional) == 2 * with_etag and with_etag > 50
    assert sum(1 for r in log if r["status"] == 304) == rec[1]["not_modified"] + rec[2]["not_modified"]
    visited = c.read_table("visited", c.last_committed())
    nm = visited.filter(visited.column("outcome").to_numpy(zero_copy_only=False) == "not_modified")
    assert nm.num_rows == rec[1]["not_modified"] + rec[2]["not_modified"]
    assert set(nm.column("bytes").to_pylist()) == {0}


def test_each_304_is_archived_as_a_revisit_record(incremental_crawl):
    from warcio.archiveiterator import ArchiveIterator
    _, d, reports, _, _ = incremental_crawl
    c = CrawlDir(str(d))
    revisits = []
    for n in c.committed_rounds():
        for name in c.manifest(n).get("warc", []):
            with open(f"{c.warc_dir(n)}/{name}", "rb") as f:
                revisits += [(r.rec_headers.get_header("WARC-Target-URI"),
                              r.rec_headers.get_header("WARC-Profile"), r.http_headers.get_statuscode())
                             for r in ArchiveIterator(f) if r.rec_type == "revisit"]
    assert len(revisits) == sum(r["recrawl"]["not_modified"] for r in reports if r.get("recrawl")) > 0
    assert {(p, s) for _, p, s in revisits} == {
        ("http://netpreserve.org/warc/1.1/revisit/server-not-modified", "304")}


def test_changes_detected_are_the_webs_true_changes(incremental_crawl):
    web, d, reports, times, _ = incremental_crawl
    c = CrawlDir(str(d))
    url_index = {web.web.url(i): i for i in range(len(web.web.change_rate))}
    state = c.read_table("recrawl", c.last_committed())
    rows = [r for r in state.to_pylist() if r["last_visit"] is not None and r["intervals"]]
    assert sum(r["url"] in url_index for r in rows) > 50
    wrong = []
    for r in rows:
        i = url_index.get(r["url"])
        if i is None:
            continue
        t1 = r["last_visit"]
        t0 = max(t for t in times if t < t1)   # every page is revisited each round here
        truly = bool(web.web.change_times(i, t0, t1))
        if truly != r["changed"]:
            wrong.append((r["url"], truly, r["changed"]))
    assert wrong == []
    assert any(r["changed"] for r in rows) and not all(r["changed"] for r in rows)


def test_every_url_stays_in_one_of_visited_frontier_filtered_and_state_is_append_only(incremental_crawl):
    _, d, reports, _, _ = incremental_crawl
    c = CrawlDir(str(d))
    n = c.last_committed()
    visited = set(c.read_table("visited", n, columns=["fp"]).column("fp").to_pylist())
    frontier = set(c.read_table("frontier", n, columns=["fp"]).column("fp").to_pylist())
    filtered = set(c.read_table("filtered", n, columns=["fp"]).column("fp").to_pylist())
    assert not (visited & frontier) and not (visited & filtered) and not (frontier & filtered)
    state = latest(c.read_table("recrawl", n))
    assert set(state.column("fp").to_pylist()) <= visited
    # the state is deltas: round N's files hold only round N's rows
    for k in range(1, n + 1):
        rounds = set(c.read_table("recrawl", k).column("round").to_pylist())
        assert max(rounds) == k
    # downloaded counts pages, not revisits; the expired set and freshness are reported
    assert reports[-1]["page_sets"]["downloaded"] == len(visited)
    assert reports[-2]["page_sets"]["expired"] == 0   # day 1: no rate estimated yet
    assert reports[-1]["page_sets"]["expired"] > 0
    assert 0 < reports[-1]["recrawl"]["estimated_freshness"] < 1


def test_batch_mode_revisits_nothing(simweb_small, tmp_path):
    d = tmp_path / "batch"
    crawlstate.start_crawl(simweb_small, d, "--max_pages", "5")
    reports = crawlstate.run_rounds(d, "--rounds", "1")
    assert reports[0]["recrawl"] is None and reports[0]["page_sets"]["expired"] == 0
    assert not CrawlDir(str(d)).table_files("recrawl", 1)


def test_sitemap_lastmod_is_recorded_as_the_pages_true_last_change(incremental_crawl):
    web, d, _, times, _ = incremental_crawl
    c = CrawlDir(str(d))
    n = c.last_committed()
    rows = c.read_table("recrawl", n).to_pylist()
    index = {web.web.url(i): i for i in range(len(web.web.change_rate))}
    hints = [r for r in rows if r["last_visit"] is None and r["round"] == n and r["url"] in index]
    assert len(hints) > 20, "the revisited sitemaps gave no lastmod"
    for r in hints:   # sitemap lastmod has whole seconds
        assert abs(r["lastmod"] - web.web.version(index[r["url"]], times[-1])[1]) < 1.0


def _plan(d, times, policy, max_pages):
    c = CrawlDir(str(d))
    settings = effective_round_settings({"mode": "incremental", "refetch_policy": policy,
                                         "max_pages": max_pages, "refetch_share": 0.5}, {})
    cfg = RoundConfig.build(settings, c.last_committed() + 1, times[-1] + DAY)
    return plan_revisits(c, c.last_committed(), cfg)


@pytest.mark.parametrize("policy", ["proportional", "optimal", "importance", "sampling", "cluster"])
def test_every_policy_plans_revisits_within_its_budget_from_the_crawled_state(incremental_crawl, policy):
    _, d, _, times, _ = incremental_crawl
    plan = _plan(d, times, policy, 400)
    # every page was revisited in the last round: with f = K/N per page and round a page is
    # due when its share of the budget is >= 1/K; K = 200 > N makes the faster ones due
    assert plan.stats["recrawl_budget"] == 200
    assert 0 < len(plan) <= 200 and len(plan) <= plan.stats["recrawl_revisits_due"]
    assert set(plan.prev_rows) == set(plan.rows.column("fp").to_pylist())
    assert plan.stats["recrawl_cycle_seconds"] == DAY
    # with a budget below the pages (50 of ~150) each policy chooses, and not as uniform does
    # (a policy that fell back to uniform frequencies would pick uniform's pages)
    small, uniform = _plan(d, times, policy, 100), _plan(d, times, "uniform", 100)
    assert small.stats["recrawl_budget"] == 50 and 0 < len(small) <= 50 and 0 < len(uniform) <= 50
    assert set(small.rows.column("fp").to_pylist()) != set(uniform.rows.column("fp").to_pylist())


def test_recrawl_deltas_are_compacted_into_the_same_view(incremental_crawl):
    _, d, reports, _, _ = incremental_crawl
    c = CrawlDir(str(d))
    n = c.last_committed()
    rounds = c.committed_rounds()
    full = [k for k in rounds if "recrawl" in c.manifest(k).get("full", ())]
    # day 2 plans from day 0's and day 1's deltas: two rows per page, so it compacts
    assert full and full[-1] == n and reports[-1]["recrawl"]["compacted_rows"] >= 2 * reports[-1]["recrawl"]["compacted_to"]
    every = read_view([posixpath.join(c.table_dir(k, "recrawl"), f)
                       for k in rounds for f in c.manifest(k)["tables"].get("recrawl", [])
                       if f != COMPACTED_FILE], tables.RECRAWL)
    view = c.read_table("recrawl", n)
    assert view.num_rows < every.num_rows
    key = [("fp", "ascending")]
    assert latest(view).sort_by(key).to_pylist() == latest(every).sort_by(key).to_pylist()
