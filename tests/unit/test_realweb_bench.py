"""The pure parts of the real-web benchmark (benchmarks/realweb): the static export of the
simulated web, the nginx config serving it, and the access-log analysis (coverage, robots
violations, duplicate fetches). The crawl itself is a script (benchmarks/realweb/run.py)."""
import http.client
import json
import shutil
import socket
import time

import pytest

from benchmarks.realweb.analyse import Request, RobotsRules, analyse, read_access_log
from benchmarks.realweb.nginx import Nginx, build_conf
from tests.simweb import build_web
from tests.simweb.static import export_static, file_path

STATIC = dict(deep_web=False)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    port = _free_port()
    web = build_web("small", 1, port=port, **STATIC)
    out = tmp_path_factory.mktemp("static")
    manifest = export_static(web, out)
    return web, out, manifest


def _sample_targets(web):
    pages = web.ground_truth()["pages"].to_pydict()
    picked = {}
    for url, status, enc in zip(pages["url"], pages["status"], pages["encoding"]):
        target = url.split(str(web.port), 1)[1]
        kind = ("root" if target == "/" else "query" if "?" in target
                else "redirect" if status == 301 else f"enc-{enc}")
        picked.setdefault(kind, (url.split("/")[2].split(":")[0], target))
    assert {"root", "query", "redirect", "enc-gbk-header", "enc-utf-8"} <= set(picked)
    return picked


def test_export_writes_pages_byte_identical(exported):
    web, out, manifest = exported
    now = web.cfg.sim_start
    for kind, (host, target) in _sample_targets(web).items():
        r = web.respond(host, target, headers={}, now=now)
        if r.status == 301:
            assert manifest["hosts"][host]["redirects"][target] == [301, dict(r.headers)["Location"]]
            continue
        assert (out / "www" / host / file_path(target)).read_bytes() == r.body, kind
    reach = (out / "reachable.txt").read_text().split()
    assert len(reach) == web.ground_truth()["reachable"].num_rows
    # robots.txt: the rules as served, without Crawl-delay; 5xx robots recorded for nginx
    served = web.respond("site0.simweb.test", "/robots.txt", now=now).body
    assert b"Crawl-delay" in served
    written = (out / "www/site0.simweb.test/robots.txt").read_bytes()
    assert written == b"".join(l for l in served.splitlines(True) if not l.startswith(b"Crawl-delay"))
    assert manifest["hosts"]["robots500.simweb.test"]["robots_status"] == 500
    assert not (out / "www/robots404.simweb.test/robots.txt").exists()


def test_export_refuses_dynamic_hosts(tmp_path):
    with pytest.raises(ValueError, match="dynamic"):
        export_static(build_web("small", 1, port=8080), tmp_path)   # jobs.simweb.test is on
    with pytest.raises(ValueError, match="port"):
        export_static(build_web("small", 1, **STATIC), tmp_path)


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx not installed")
def test_nginx_serves_the_export_as_the_simweb_does(exported, tmp_path):
    web, out, manifest = exported
    picked = _sample_targets(web)
    with Nginx(out, web.port, tmp_path / "ng") as ng:
        for kind, (host, target) in picked.items():
            want = web.respond(host, target, headers={}, now=web.cfg.sim_start)
            c = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
            c.request("GET", target, headers={"Host": f"{host.upper()}:{web.port}"})
            got = c.getresponse()
            body = got.read()
            assert got.status == want.status, kind
            if want.status == 200:
                assert body == want.body, kind
                assert got.getheader("Content-Type") == dict(want.headers)["Content-Type"], kind
            else:
                assert got.getheader("Location") == dict(want.headers)["Location"]
            c.close()
        c = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
        c.request("GET", "/robots.txt", headers={"Host": "robots500.simweb.test"})
        assert c.getresponse().status == 500
    log = read_access_log(ng.access_log)
    assert len(log) == len(picked) + 1 and log[0].host == picked["root"][0].lower()


def test_conf_has_one_server_per_host(exported, tmp_path):
    web, out, _ = exported
    conf = build_conf(out, tmp_path, web.port)
    for h in web.hosts:
        assert f"server_name {h.name};" in conf


def test_analysis_flags_robots_violations_and_duplicates(exported):
    web, out, _ = exported
    robots = RobotsRules.from_export(out)
    port = web.port
    reachable = set((out / "reachable.txt").read_text().split())
    site0 = [u for u in sorted(reachable) if u.startswith(f"http://site0.simweb.test:{port}/")]
    path = lambda u: u.split(str(port), 1)[1]
    reqs = [Request(1.0, 1.1, 200, "site0.simweb.test", "/robots.txt", "ua", "1")]
    # sequential on one keep-alive connection, two of them logged in the same millisecond
    reqs += [Request(2.0 + i // 2, 2.0 + i // 2, 200, "site0.simweb.test", path(u), "ua", "1")
             for i, u in enumerate(site0)]
    clean = analyse(reqs, reachable, robots, port)
    assert clean["robots_violations"] == 0 and clean["duplicate_fetches"] == 0
    assert clean["covered"] == len(site0) and clean["max_conns_per_host"] == 1
    # planted: a disallowed page (site0 uses template 0: Disallow /private/, Allow /private/a/),
    # the root again written with a dot segment, and a request overlapping another in time
    bad = reqs + [Request(100.0, 100.2, 200, "site0.simweb.test", "/private/b/p1.html", "ua", "2"),
                  Request(100.1, 100.3, 200, "site0.simweb.test", "/x/../", "ua", "3"),
                  Request(101.0, 101.1, 200, "robots500.simweb.test", "/", "ua")]
    res = analyse(bad, reachable, robots, port)
    assert res["robots_violations"] == 2          # /private/b/ and anything on robots500
    assert res["duplicate_fetches"] == 1
    assert res["max_conns_per_host"] == 2
    assert robots.allows("site0.simweb.test", "/private/a/p1.html")
    json.dumps(res)


def test_crawler_entries_name_round_sizes_and_refuse_the_rest(tmp_path):
    """`--crawlers beamcrawl@N` runs beamcrawl with rounds of N pages, in its own crawl dir."""
    import argparse

    from benchmarks.realweb.run import crawler_cmds, crawler_kind
    assert crawler_kind("beamcrawl") == ("beamcrawl", None)
    assert crawler_kind("beamcrawl@10000") == ("beamcrawl", 10000)
    assert crawler_kind("scrapy") == ("scrapy", None)
    for bad in ("beamcrawl@", "beamcrawl@0", "beamcrawl@x", "scrapy@5000", "nutch"):
        with pytest.raises(SystemExit, match="unknown crawler"):
            crawler_kind(bad)
    (tmp_path / "seeds.txt").write_text("http://a.simweb.test:1/\n")
    a = argparse.Namespace(python="py", round_pages=5000, store="none", fetch_threads=32, conns=1,
                           beamcrawl_args=[], politeness_key="host", domain="simweb.test", short=0)
    inject, crawl = crawler_cmds("beamcrawl@10000", a, tmp_path, tmp_path)
    assert inject[inject.index("--max_pages") + 1] == 10000
    assert inject[inject.index("--max_per_host") + 1] == 10000
    assert crawl[crawl.index("--crawl_dir") + 1] == tmp_path / "beamcrawl-crawl-10000"
    inject, crawl = crawler_cmds("beamcrawl", a, tmp_path, tmp_path)
    assert inject[inject.index("--max_pages") + 1] == 5000
    # every exported host is on 127.0.0.1: politeness by host, as Scrapy's per-domain limit
    assert inject[inject.index("--politeness_key") + 1] == "host"
    assert crawl[crawl.index("--crawl_dir") + 1] == tmp_path / "beamcrawl-crawl"
    assert inject[inject.index("--allow_domains") + 1] == "simweb.test" and "--until_empty" in crawl
    # a prebuilt export's domain; --short: the rounds holding about PAGES pages, Scrapy's page cap
    a.domain, a.short, a.port, a.scrapy_python, a.scrapy_delay = "docs.test", 12000, 1, "spy", "0"
    inject, crawl = crawler_cmds("beamcrawl", a, tmp_path, tmp_path)
    assert inject[inject.index("--allow_domains") + 1] == "docs.test"
    assert crawl[crawl.index("--rounds") + 1] == 3 and "--until_empty" not in crawl
    [scrapy] = crawler_cmds("scrapy", a, tmp_path, tmp_path)
    assert scrapy[-1] == 12000


def test_the_benchmark_crawls_with_politeness_by_host_unless_told():
    from benchmarks.realweb.run import parser
    assert parser().parse_args([]).politeness_key == "host"
    assert parser().parse_args(["--politeness_key", "ip"]).politeness_key == "ip"


def test_the_sweep_gives_each_sample_to_the_round_running_then(tmp_path):
    """A round ends when its _COMMITTED appears; samples before it are its own, after it the
    next round's; the per-round rows take pages and wall from report.json."""
    from benchmarks.bench_sweep import RoundSplitter, halves, round_rows
    rounds = tmp_path / "rounds"
    split = RoundSplitter(tmp_path, poll=0.0)

    def commit(r, visited, wall):
        d = rounds / f"{r:06d}"
        d.mkdir(parents=True)
        (d / "report.json").write_text(json.dumps({"visited": visited, "fetched": visited, "wall_seconds": wall,
                                                   "time_split": {"fetch": 1.0, "urlseen": 0.25, "write": 0.5}}))
        (d / "_COMMITTED").write_text("{}")

    commit(0, 0, 0.1)                  # the inject round: no fetch, left out of the rows
    split(10.0, 0, 100, 50, 1.0)       # round 1 runs
    split(11.0, 0, 300, 200, 2.0)
    commit(1, 1000, 2.0)
    split(12.0, 0, 120, 60, 4.0)       # round 1 committed: this sample is round 2's
    split(13.0, 0, 140, 90, 5.0)
    commit(2, 3000, 2.0)
    split(14.0, 0, 10, 10, 5.0)
    commit(3, 4000, 2.0)
    split(15.0, 0, 10, 10, 5.0)
    rows = round_rows(tmp_path, split)
    assert [r["round"] for r in rows] == [1, 2, 3]
    assert [r["pages_before"] for r in rows] == [0, 1000, 4000]
    assert [r["peak_pss_mb"] * 2**20 for r in rows] == [300, 140, 10]
    assert [r["largest_mb"] * 2**20 for r in rows] == [200, 90, 10]
    assert rows[0]["pages_per_s"] == 500 and rows[1]["crawl_db_s"] == 0.75
    # rounds that start in the first half of the 8 000 pages: 4 000 pages in 4 s; then 4 000 in 2 s
    h = halves(rows)
    assert h["first_half_pages_per_s"] == 1000 and h["second_half_pages_per_s"] == 2000


def test_the_sweep_names_the_steps_that_grow_with_the_crawl():
    """Each stage goes to the round whose commit follows it; a step is compared by its mean
    seconds a round over the first and the second half of the pages."""
    from benchmarks.bench_sweep import RoundSplitter, stage_growth
    split = RoundSplitter(".")
    split.commit_at = {0: 100.0, 1: 110.0, 2: 120.0, 3: 130.0}
    rows = [{"round": r, "pages_before": b, "pages": 1000} for r, b in ((1, 0), (2, 1000), (3, 2000))]
    stages = [{"at": 101.0, "seconds": 5.0, "transforms": ["Fetch/Fetch"]},
              {"at": 105.0, "seconds": 1.0, "transforms": ["ContentSeen", "ContentSeen/Probe"]},
              {"at": 111.0, "seconds": 5.0, "transforms": ["Fetch/Fetch"]},
              {"at": 115.0, "seconds": 1.0, "transforms": ["ContentSeen", "ContentSeen/Probe"]},
              {"at": 125.0, "seconds": 4.0, "transforms": ["ContentSeen", "ContentSeen/Probe"]},
              {"at": 99.0, "seconds": 9.0, "transforms": ["Inject/Seeds"]}]    # before round 1: inject's
    growth = dict((k, (a, b)) for k, a, b in stage_growth(stages, split, rows))
    # rounds 1 and 2 start in the first half of the 3 000 pages, round 3 in the second
    assert growth["ContentSeen/Probe"] == (1.0, 4.0)
    assert growth["fetch"] == (5.0, 0.0)
    assert "Inject/Seeds" not in growth and list(growth)[0] == "ContentSeen/Probe"


def test_the_sweep_gives_the_crawl_db_work_a_round_and_a_page_by_crawl_size():
    """Old-side stages (OLD_SIDE) by the pages crawled before their round, in bands of the
    crawl's pages; a tail round (under half the median round) is left out."""
    from benchmarks.bench_sweep import RoundSplitter, old_side_by_size
    split = RoundSplitter(".")
    split.commit_at = {0: 100.0, 1: 110.0, 2: 120.0, 3: 130.0, 4: 140.0}
    rows = [{"round": r, "pages_before": b, "pages": n}
            for r, b, n in ((1, 0, 1500), (2, 1500, 1500), (3, 3000, 2000), (4, 5000, 10))]
    probe = ["ContentSeen", "ContentSeen/ProbeVisited/ProbeNarrow"]
    stages = [{"at": 101.0, "seconds": 3.0, "transforms": ["Fetch/Fetch"]},
              {"at": 102.0, "seconds": 0.5, "transforms": probe},
              {"at": 112.0, "seconds": 0.5, "transforms": ["UrlSeen/BucketSeenHits", "UrlSeen"]},
              {"at": 125.0, "seconds": 2.0, "transforms": probe},
              {"at": 126.0, "seconds": 4.0, "transforms": ["Fetch/Fetch"]},
              {"at": 135.0, "seconds": 9.0, "transforms": probe}]          # the tail round
    bands = old_side_by_size(stages, split, rows, bands=2)
    assert [b["rounds"] for b in bands] == [2, 1]
    assert bands[0]["old_side_s_per_round"] == 0.5
    assert bands[0]["old_side_us_per_page"] == pytest.approx(1e6 / 3000)   # 1 s over 3 000 pages
    assert bands[0]["stages_ms_per_page"] == pytest.approx(4e3 / 3000)     # (3 + 0.5 + 0.5) s
    assert bands[1]["old_side_us_per_page"] == 1000.0 and bands[1]["stages_ms_per_page"] == 3.0
    renamed = [dict(s, transforms=["Other/Step"]) for s in stages]
    assert old_side_by_size(renamed, split, rows) == []


def test_the_crawl_split_counts_short_stages_busy_and_adds_up_to_the_crawls_cpu():
    from benchmarks.crawl_split import CpuSampler, split
    sampler = CpuSampler(pid=0)
    sampler.samples = [(t * 0.05, t * 0.05 * 1.5) for t in range(41)]   # 1.5 cores for 2 s
    # a 0.5 s fetch stage, then 30 stages of 10 ms (each shorter than the sampling period)
    stages = [{"t0": 0.1, "seconds": 0.5, "transforms": ["Fetch/Fetch"]}]
    stages += [{"t0": 0.7 + i * 0.03, "seconds": 0.01, "transforms": [f"S{i}"]} for i in range(30)]
    groups, by_transforms = split(stages, sampler, 0.0, 2.0)
    assert sum(seconds for seconds, _ in groups.values()) == pytest.approx(2.0)
    assert sum(core_seconds for _, core_seconds in groups.values()) == pytest.approx(3.0)
    assert groups["other stages"][1] / groups["other stages"][0] == pytest.approx(1.5)
    assert by_transforms["S7"][1] == pytest.approx(0.015)


def _burn_then_wait(conn):
    started = time.process_time()
    while time.process_time() - started < 0.3:
        pass
    conn.send("burnt")
    conn.recv()   # None: the end


def test_the_crawl_split_gives_each_helper_its_cpu_by_the_name_it_took():
    import os

    from benchmarks.crawl_split import ROLES, CpuSampler
    from transforms.procs import start_helper, stop_helper
    conn, proc = start_helper(_burn_then_wait, name="beamcrawl-page")
    try:
        assert conn.poll(30) and conn.recv() == "burnt"
        sampler = CpuSampler(os.getpid())
        sampler._cpu()
        roles = sampler.by_role()
    finally:
        stop_helper(conn, proc)
    assert roles["page workers"] >= 0.25
    assert ROLES["root"] in roles and "fetch processes" not in roles


def test_the_packing_bench_counts_a_crawls_pages_from_its_last_round_and_names_a_log_without_one(tmp_path):
    from benchmarks.bench_packing import _downloaded
    log = tmp_path / "crawl.log"
    log.write_text("round 1: ...\n  page sets: downloaded 20, expired 0, pending 203\n"
                   "round 2: ...\n  page sets: downloaded 223, expired 0, pending 1038\n20 rounds run\n")
    assert _downloaded(log) == 223
    log.write_text("error: --crawl_dir: no crawl there\n")
    with pytest.raises(SystemExit, match="crawl.log"):
        _downloaded(log)


def test_the_crawl_split_gives_the_crawls_own_process_its_cpu_per_part_from_the_stage_timer():
    from benchmarks.crawl_split import own_cpu
    stages = [{"transforms": ["Fetch/Fetch"], "cpu": 2.0}, {"transforms": ["S1"], "cpu": 0.5},
              {"transforms": ["S2"], "cpu": 0.25}, {"transforms": ["Fetch/CheckScope"], "cpu": 0.1}]
    assert own_cpu(stages, 4.0) == pytest.approx({"fetch stages": 2.1, "other stages": 0.75,
                                                  "between stages": 1.15})
    assert own_cpu([{"transforms": ["S1"]}], 4.0) is None   # an older stage timer's lines
