"""End-to-end: crawl the small simulated web to the end and check it against its ground truth."""
import collections
import signal
import time

import pytest

from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from tests.simweb import requestlog

NOT_REQUESTED = ("robots_denied", "forbidden_address")


@pytest.fixture(scope="module")
def full_crawl(simweb_small, tmp_path_factory):
    """The small web crawled until nothing is due, with the server log of that crawl."""
    d = tmp_path_factory.mktemp("small_crawl") / "crawl"
    start = time.time()
    crawlstate.start_crawl(simweb_small, d)
    reports = crawlstate.run_rounds(d, "--until_empty")
    end = time.time()
    log = [r for r in simweb_small.requests() if start <= r["start"] <= end]
    return d, reports, log


def test_visited_set_equals_the_reachable_set_exactly(full_crawl, simweb_small):
    d, _, _ = full_crawl
    c = CrawlDir(str(d))
    visited = c.read_table("visited", c.last_committed())
    urls = visited.column("url").to_pylist()
    assert len(urls) == len(set(urls)), "a URL was visited twice"
    fetched = {u for u, o in zip(urls, visited.column("outcome").to_pylist()) if o not in NOT_REQUESTED}
    reachable = set(simweb_small.ground_truth["reachable"].column("url").to_pylist())
    assert sorted(reachable - fetched) == [], "reachable pages never fetched"
    assert sorted(fetched - reachable) == [], "fetched pages outside the reachable set"
    assert all(h.split(":")[0].endswith("simweb.test") for h in visited.column("host").to_pylist())


def test_no_request_robots_forbids_and_no_url_requested_twice(full_crawl, simweb_small):
    _, _, log = full_crawl
    assert requestlog.disallowed_requests(log, simweb_small.ground_truth) == []
    pages = collections.Counter((r["host"].lower(), r["path"]) for r in log
                                if not r["path"].startswith("/robots"))
    assert [k for k, n in pages.items() if n > 1] == []


def test_gap_between_requests_to_one_host_is_never_below_the_delay(full_crawl):
    _, _, log = full_crawl
    assert log, "the server saw no requests"
    gaps = requestlog.min_gap_per_host(log, measure="end")
    assert min(gaps.values()) >= 0.05 - 0.005, gaps
    assert max(requestlog.max_concurrency_per_host(log).values()) == 1


def test_every_url_is_in_exactly_one_of_visited_frontier_filtered(full_crawl):
    d, _, _ = full_crawl
    c = CrawlDir(str(d))
    n = c.last_committed()
    sets = {t: c.read_table(t, n, columns=["fp"]).column("fp").to_pylist()
            for t in ("visited", "frontier", "filtered")}
    for t, fps in sets.items():
        assert len(fps) == len(set(fps)), f"duplicate URL in {t}"
    v, f, x = (set(sets[t]) for t in ("visited", "frontier", "filtered"))
    assert not (v & f) and not (v & x) and not (f & x)
    links = c.read_table("links", n, columns=["dst_fp"]).column("dst_fp").to_pylist()
    assert set(links) <= v | f | x, "a discovered link target was lost"


def test_reports_count_what_the_tables_hold(full_crawl):
    d, reports, _ = full_crawl
    c = CrawlDir(str(d))
    n = c.last_committed()
    last = reports[-1]
    assert last["page_sets"]["downloaded"] == c.read_table("visited", n).num_rows
    assert last["frontier_size"] == c.read_table("frontier", n).num_rows
    assert last["page_sets"]["pending"] + last["page_sets"]["knowable"] == last["frontier_size"]
    assert sum(r["visited"] for r in reports) == last["page_sets"]["downloaded"]
    first = reports[0]
    assert first["pages_per_second"] > 0 and first["by_status_class"].get("2xx", 0) > 0


# Other ways to run the same rounds. The portable runner runs the round as a portable job
# (pipeline proto, coders and all, through Beam's job service, SDK harness in loopback):
# what Flink and Dataflow run; reads are reshuffled there (`round.spreads_files`).
OTHER_RUNNERS = {
    "two_worker_processes": ("--direct_running_mode=multi_processing", "--direct_num_workers=2"),
    "portable_runner": ("--runner=PortableRunner", "--job_endpoint=embed",
                        "--environment_type=LOOPBACK"),
}


@pytest.mark.slow
@pytest.mark.parametrize("runner", sorted(OTHER_RUNNERS))
def test_same_state_in_process_and_on_another_runner(full_crawl, simweb_small, tmp_path, runner):
    d, reports, _ = full_crawl
    rounds = min(3, len(reports))
    other = tmp_path / runner
    crawlstate.start_crawl(simweb_small, other)
    crawlstate.run_rounds(other, "--rounds", str(rounds), *OTHER_RUNNERS[runner])
    crawlstate.assert_same_state(crawlstate.state(d, rounds), crawlstate.state(other, rounds))


def _wait_for_partial_writes(crawl_dir, round_no, proc, timeout=120):
    """Until the round has written some table file (a write is under way), or the process ended."""
    rd = crawl_dir / "rounds" / f"{round_no:06d}"
    end = time.time() + timeout
    while time.time() < end and proc.poll() is None:
        if any(p.name.endswith(".parquet") or "beam-temp" in str(p) for p in rd.rglob("*")):
            return True
        time.sleep(0.002)
    return False


@pytest.mark.slow
def test_killed_round_reruns_to_the_state_of_an_uninterrupted_crawl(full_crawl, simweb_small, tmp_path):
    d, reports, _ = full_crawl
    target = min(2, len(reports))
    crash = tmp_path / "crash"
    crawlstate.start_crawl(simweb_small, crash)
    if target > 1:
        crawlstate.run_rounds(crash, "--rounds", str(target - 1))
    for point in ("fetch", "writes", "before_commit"):
        env = {"BEAMCRAWL_CRASH_AT": point} if point != "writes" else {}
        proc = crawlstate.run_round_subprocess(crash, env=env)
        if point == "writes":
            assert _wait_for_partial_writes(crash, target, proc), "round ended before any write"
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=300)
        assert proc.returncode == -signal.SIGKILL, (point, proc.stderr.read()[-3000:])
        assert CrawlDir(str(crash)).last_committed() == target - 1, f"killed at {point} yet committed"
    proc = crawlstate.run_round_subprocess(crash)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    crawlstate.assert_same_state(crawlstate.state(d, target), crawlstate.state(crash, target))


def test_mirror_pages_are_flagged_as_duplicates_and_no_distinct_page_is(full_crawl, simweb_small):
    d, reports, _ = full_crawl
    c = CrawlDir(str(d))
    visited = {r["url"]: r for r in c.read_table("visited", c.last_committed()).to_pylist()}
    truth = simweb_small.ground_truth["pages"].to_pylist()
    parent = {p["url"]: p["is_duplicate_of"] for p in truth if p["is_duplicate_of"]}

    def original(url):  # a mirror's query-order variant copies the mirror copy of an original
        while url in parent:
            url = parent[url]
        return url

    mirror_pages = [p["url"] for p in truth if p["dup_kind"] == "mirror" and p["url"] in visited
                    and visited[p["url"]]["http_status"] == 200]
    assert mirror_pages, "the small web has a mirror host"
    flagged = [u for u in mirror_pages if visited[u]["outcome"] == "duplicate"]
    assert len(flagged) >= 0.99 * len(mirror_pages)
    dups = [r for r in visited.values() if r["outcome"] == "duplicate"]
    wrong = [(r["url"], r["duplicate_of"]) for r in dups
             if original(r["url"]) != original(r["duplicate_of"])]
    assert wrong == []
    assert sum(r["content_seen"]["exact_duplicates"] for r in reports) == len(dups)
    assert any(r["content_seen"]["mirror_hosts_suspected"] for r in reports)
    # the visited view is probed narrow every round and read wide only where a hit is
    old = [r["content_seen"]["old_side"] for r in reports[1:]]
    assert all(o.get("old_rows", 0) > 0 for o in old)
    assert all(o.get("wide_exact_rows_read", 0) <= o["old_rows"] for o in old)


def test_planted_near_duplicates_are_found_across_rounds(full_crawl, simweb_small):
    d, reports, _ = full_crawl
    c = CrawlDir(str(d))
    n = c.last_committed()
    fetched = {r["url"] for r in c.read_table("visited", n).to_pylist() if r["outcome"] == "ok"}
    truth = simweb_small.ground_truth["pages"].to_pylist()
    planted = {(p["url"], p["is_duplicate_of"]) for p in truth
               if p["dup_kind"] == "near" and p["url"] in fetched and p["is_duplicate_of"] in fetched}
    found = {frozenset((r["url"], r["of_url"])) for r in c.read_table("near_duplicates", n).to_pylist()}
    assert planted, "the small web plants near-duplicates"
    hits = sum(frozenset(p) in found for p in planted)
    assert hits >= 0.9 * len(planted), (hits, len(planted))
    parent = {p["url"]: p["is_duplicate_of"] for p in truth if p["is_duplicate_of"]}

    def original(url):
        while url in parent:
            url = parent[url]
        return url
    assert all(len({original(u) for u in pair}) == 1 for pair in found), "a near pair of distinct pages"
    assert sum(r["content_seen"]["near_duplicates"] for r in reports) >= hits
