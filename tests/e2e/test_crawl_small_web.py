"""End-to-end: crawl the small simulated web to the end and check it against its ground truth."""
import collections
import contextlib
import io
import json
import pathlib
import random
import signal
import time

import duckdb
import pytest

from pipelines import report as report_mod
from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate
from tests.simweb import model as simweb_model
from tests.simweb import requestlog
from tests.simweb.process import SimWebProcess
from transforms.contentseen import fingerprints
from transforms.page import parse as parse_mod


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
    fetched = {u for u, o in zip(urls, visited.column("outcome").to_pylist()) if o not in crawlstate.NOT_REQUESTED}
    reachable = set(simweb_small.ground_truth["reachable"].column("url").to_pylist())
    assert sorted(reachable - fetched) == [], "reachable pages never fetched"
    assert sorted(fetched - reachable) == [], "fetched pages outside the reachable set"
    assert all(h.split(":")[0].endswith("simweb.test") for h in visited.column("host").to_pylist())


def test_no_request_robots_forbids_and_no_url_requested_twice(full_crawl, simweb_small):
    _, _, log = full_crawl
    assert requestlog.disallowed_requests(log, simweb_small.ground_truth) == []
    assert requestlog.requested_twice(log) == []


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


def _pending_counted(c, n):
    """(round n's frontier, how many of its URLs round n+1's generate takes), counted by a
    DuckDB query from round n's caps at round n's time (report.json's round_time): per host
    the due URLs (backoff elapsed, within --max_depth), at most --max_per_host of them, and
    at most --max_pages in all. (Not generate's own code: which URLs it picks does not
    change how many.)"""
    opts = json.loads((pathlib.Path(c.round_dir(n)) / "options.json").read_text())
    now = c.read_report(n)["round_time"]
    frontier = c.read_table("frontier", n)   # noqa: F841 - DuckDB reads it by name
    (count,), = duckdb.connect().execute(
        "SELECT least($pages, coalesce(sum(least(due, $per_host)), 0)) FROM ("
        "  SELECT host, count(*) AS due FROM frontier"
        "  WHERE coalesce(not_before, 0) <= $now AND ($depth = 0 OR coalesce(depth, 0) <= $depth)"
        "  GROUP BY host)",
        {"pages": opts["max_pages"], "per_host": opts["max_per_host"], "now": now,
         "depth": opts["max_depth"] or 0}).fetchall()
    return frontier, int(count)


def test_every_rounds_page_sets_match_the_tables_and_the_ground_truth(full_crawl, simweb_small, tmp_path):
    d, reports, _ = full_crawl
    c = CrawlDir(str(d))
    truth_dir = tmp_path / "truth"
    simweb_small.web.export(truth_dir)
    truth_pages = set(simweb_small.ground_truth["pages"].column("url").to_pylist())
    assert [r["round"] for r in reports] == list(range(1, c.last_committed() + 1))
    knowable_seen = unknowable_seen = 0
    for report in reports:
        n = report["round"]
        sets = c.read_report(n)["page_sets"]
        frontier, pending = _pending_counted(c, n)
        visited = c.read_table("visited", n, columns=["url"]).column("url").to_pylist()
        assert sets["pending"] == pending, n
        assert sets["knowable"] == frontier.num_rows - pending, n
        assert sets["downloaded"] == len(visited) == len(set(visited)), n
        assert sets["expired"] == 0, n                  # batch crawl: nothing is recrawled
        known = set(visited) | set(frontier.column("url").to_pylist()) | \
            set(c.read_table("filtered", n, columns=["url"]).column("url").to_pylist())
        unknowable = len(truth_pages - known)
        assert report_mod.with_ground_truth(c, c.read_report(n), str(truth_dir))["page_sets"]["unknowable"] \
            == unknowable, n
        knowable_seen += sets["knowable"] > 0
        unknowable_seen += unknowable > 0
    # the counts checked are not all zero: a robots-5xx URL waits (knowable), and the deep
    # web's search results are pages no link reaches (unknowable)
    assert knowable_seen and unknowable_seen
    assert reports[0]["page_sets"]["pending"] > 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert report_mod.main(["--crawl_dir", str(d), "--ground_truth", str(truth_dir), "--json"]) == 0
    assert json.loads(out.getvalue())["page_sets"]["unknowable"] == unknowable


def _content_class(truth_pages):
    """url -> the url whose content it serves byte for byte (mirror copies, query-order
    variants, chains of them); a near copy is content of its own."""
    exact = {p["url"]: p["is_duplicate_of"] for p in truth_pages
             if p["dup_kind"] in ("mirror", "query_order")}

    def cls(url):
        while url in exact:
            url = exact[url]
        return url
    return cls


def _expected_default_crawl(truth, visited):
    """Level by level from the seeds over the ground truth's follow graph, a page's links
    expanded only if its content was not fetched in an earlier round (a tie inside one
    round goes to the page the crawl kept; exactly one may be kept). -> {url: level}."""
    pages = {p["url"]: p for p in truth["pages"].to_pylist()}
    out = collections.defaultdict(list)
    for l in truth["links"].to_pylist():
        if not l["nofollow"]:
            out[l["src"]].append(l["dst"])
    cls = _content_class(pages.values())
    level = {u: 0 for u in truth["seeds"].column("url").to_pylist()}
    frontier, seen_content, k = sorted(level), set(), 0
    while frontier:
        nxt = set()
        fresh = collections.defaultdict(list)
        for u in frontier:
            p = pages[u]
            if not p["robots_allowed"]:
                continue
            if p["status"] == 301:
                nxt.add(p["redirect_to"])
            elif p["kind"] == "html" and cls(u) not in seen_content:
                fresh[cls(u)].append(u)
        for c, members in fresh.items():
            kept = [u for u in members if visited[u]["outcome"] != "duplicate"] if len(members) > 1 else members
            assert len(kept) == 1, (c, members)
            nxt.update(out[kept[0]])
            seen_content.add(c)
        k += 1
        frontier = sorted(v for v in nxt if v not in level)
        level.update((v, k) for v in frontier)
    return level


@pytest.fixture(scope="module")
def default_crawl(simweb_small, tmp_path_factory):
    """The small web crawled until nothing is due with --expand_duplicates at its default."""
    d = tmp_path_factory.mktemp("small_default") / "crawl"
    crawlstate.start_crawl(simweb_small, d, expand_duplicates=None)
    crawlstate.run_rounds(d, "--until_empty")
    return d


def test_default_crawl_does_not_expand_duplicates_and_misses_exactly_what_only_they_reach(
        default_crawl, simweb_small):
    c = CrawlDir(str(default_crawl))
    n = c.last_committed()
    assert json.loads((pathlib.Path(c.round_dir(1)) / "options.json").read_text())["expand_duplicates"] is False
    visited = {r["url"]: r for r in c.read_table("visited", n).to_pylist()}
    truth = simweb_small.ground_truth
    level = _expected_default_crawl(truth, visited)
    pages = {p["url"]: p for p in truth["pages"].to_pylist()}
    expected = {u for u in level if pages[u]["robots_allowed"]}
    fetched = {u for u, r in visited.items() if r["outcome"] not in crawlstate.NOT_REQUESTED}
    assert sorted(expected - fetched) == [], "pages the default crawl should reach were not fetched"
    assert sorted(fetched - expected) == [], "fetched pages reachable only through duplicates"
    # every page in the round of its level: the crawl is breadth-first, nothing is capped
    assert {u: visited[u]["round"] - 1 for u in fetched} == {u: level[u] for u in fetched}
    reachable = set(truth["reachable"].column("url").to_pylist())
    only_through_duplicates = reachable - set(level)
    assert expected <= reachable and len(only_through_duplicates) >= 5, sorted(only_through_duplicates)
    # duplicates are recorded, their links are not
    dups = {u for u, r in visited.items() if r["outcome"] == "duplicate"}
    cls = _content_class(pages.values())
    assert dups and all(cls(u) == cls(visited[u]["duplicate_of"]) for u in dups)
    srcs = set(c.read_table("links", n, columns=["src"]).column("src").to_pylist())
    assert sorted(dups & srcs) == []


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
        try:
            if any(p.name.endswith(".parquet") or "beam-temp" in str(p) for p in rd.rglob("*")):
                return True
        except FileNotFoundError:   # the round clears its folder of an earlier attempt meanwhile
            pass
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

    def version(row):   # the simweb's ETag is "<page hex>-<change version hex>"
        return (row["etag"] or "").strip('"').rpartition("-")[2] or None

    def same_content(u):
        # /news/ pages change about hourly: a mirror copy fetched after its original changed
        # is other content, rightly not a duplicate. Each fetch's ETag says which version it got.
        orig = visited.get(original(u))
        return orig is None or version(orig) is None or version(orig) == version(visited[u])

    fetched = [p["url"] for p in truth if p["dup_kind"] == "mirror" and p["url"] in visited
               and visited[p["url"]]["http_status"] == 200]
    mirror_pages = [u for u in fetched if same_content(u)]
    assert mirror_pages, "the small web has a mirror host"
    assert len(mirror_pages) >= len(fetched) - 2, "most mirror pages are fetched at their original's version"
    # The first copy is the smallest (round, fp): when a mirror page and its original are
    # fetched in the same round, either may be first (fingerprints hash the port, which
    # varies per run). So a mirror page is handled when it or its original is flagged.
    def flagged_pair(u):
        orig = visited.get(original(u))
        return visited[u]["outcome"] == "duplicate" or (
            orig is not None and orig["outcome"] == "duplicate" and orig["duplicate_of"] == u)

    flagged = [u for u in mirror_pages if flagged_pair(u)]
    assert len(flagged) >= 0.99 * len(mirror_pages), sorted(set(mirror_pages) - set(flagged))
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


@pytest.fixture(scope="module")
def neardup_crawl(tmp_path_factory):
    """The `neardup` web (240 planted near-duplicate pairs, each of a distinct original)
    crawled until nothing is due."""
    web = SimWebProcess("neardup", seed=1, workdir=tmp_path_factory.mktemp("simweb_neardup"))
    try:
        d = tmp_path_factory.mktemp("neardup_crawl") / "crawl"
        crawlstate.start_crawl(web, d)
        reports = crawlstate.run_rounds(d, "--until_empty")
        yield web, d, reports
    finally:
        web.stop()


def _true_text(web, url):
    """The visible text the web means: the body decoded with the codec it was encoded in."""
    host, path = url.split("/", 3)[2].split(":")[0], "/" + url.split("/", 3)[3]
    page = web.web.routes[web.web.by_name[host].idx][path]
    r = web.web.respond(host, path, {}, now=web.web.cfg.sim_start)
    codec = simweb_model.ENCODINGS[web.web.encoding[page]][0]
    return parse_mod.parse_html(r.body, url, f"text/html; charset={codec}").text


def _jaccard(a, b):
    a, b = set(fingerprints.shingles(a)), set(fingerprints.shingles(b))
    return len(a & b) / len(a | b)


def test_hundreds_of_planted_near_duplicates_are_found_across_rounds_and_nothing_else(neardup_crawl):
    web, d, reports = neardup_crawl
    c = CrawlDir(str(d))
    n = c.last_committed()
    visited = {r["url"]: r for r in c.read_table("visited", n).to_pylist()}
    truth = web.ground_truth["pages"].to_pylist()
    fetched = {u for u, r in visited.items() if r["outcome"] == "ok"}
    planted = {frozenset((p["url"], p["is_duplicate_of"])) for p in truth
               if p["dup_kind"] == "near" and p["url"] in fetched and p["is_duplicate_of"] in fetched}
    assert len(planted) >= 200
    # the planted pairs really are near-duplicates (word bigrams, as content-seen shingles
    # them), and distinct pages are far from it
    texts = {u: _true_text(web, u) for pair in planted for u in pair}
    assert min(_jaccard(*(texts[u] for u in pair)) for pair in planted) > fingerprints.THRESHOLD
    originals = sorted(p["url"] for p in truth if p["kind"] == "html" and not p["dup_kind"]
                       and p["url"] in fetched)
    rng = random.Random(1)
    sample = [rng.sample(originals, 2) for _ in range(300)]
    assert max(_jaccard(_true_text(web, a), _true_text(web, b)) for a, b in sample) < 0.5
    # recall >= 0.9 at precision 1.0, over pairs fetched in one round and across rounds
    # reported: each row's (page, of page) edge, and every two pages of one cluster
    rows = c.read_table("near_duplicates", n).to_pylist()
    found = {frozenset((r["url"], r["of_url"])) for r in rows}
    clusters = collections.defaultdict(set)
    for r in rows:
        if r.get("cluster_fp") is not None:
            clusters[r["cluster_fp"]].update((r["url"], r["of_url"]))
    found |= {frozenset((a, b)) for m in clusters.values() for a in m for b in m if a < b}
    parent = {p["url"]: p["is_duplicate_of"] for p in truth if p["dup_kind"] in ("mirror", "query_order")}

    def same_content(pair):     # exact copies the truth lists (none here: no mirror host)
        a, b = pair
        while a in parent:
            a = parent[a]
        while b in parent:
            b = parent[b]
        return a == b
    assert sorted(map(sorted, {p for p in found if p not in planted and not same_content(p)})) == []
    hits = planted & found
    assert len(hits) >= 0.9 * len(planted), (len(hits), len(planted))
    across = {p for p in planted if len({visited[u]["round"] for u in p}) == 2}
    assert len(across) >= 50 and len(across & found) >= 0.9 * len(across), (len(across & found), len(across))
    assert sum(r["content_seen"]["near_duplicates"] for r in reports) >= len(hits)
