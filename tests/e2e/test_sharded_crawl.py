"""Three crawler fleets (shards) crawl the small simulated web together (issue #15).

Each fleet is its own crawl directory ROOT/shard-NN; links to another shard's hosts go to
that shard's inbox (pipelines/fleet.py). Together they must fetch exactly what one crawler
fetches (the web's reachable set: tests/e2e/test_crawl_small_web.py), each page once, each
host only by the shard that owns it, and politely (the server's request log). The fleets'
crawls are marked `long` (make test-long); the refused shard flags, which write nothing, run
in the default suite.
"""
import collections
import time

import pytest

from pipelines import cli
from pipelines import round as round_mod
from pipelines.config import shard_config
from pipelines.crawldir import CrawlDir
from pipelines.settings import effective_round_settings
from tests.e2e import crawlstate
from tests.simweb import requestlog

SHARDS = 3


def shard_dir(root, s):
    return root / f"shard-{s:02d}"


def run_fleets(root, shards, *extra, max_passes=30):
    """Round-robin one round per shard until a whole pass runs none. Returns the
    (shard, start, end) of every round run and each shard's reports."""
    windows, reports = [], collections.defaultdict(list)
    for _ in range(max_passes):
        ran = False
        for s in shards:
            start = time.time()
            try:
                reports[s].append(round_mod.run_round(["--crawl_dir", str(shard_dir(root, s)), *extra],
                                                      out=lambda line: None))
            except cli.Notice:
                continue
            windows.append((s, start, time.time()))
            ran = True
        if not ran:
            return windows, reports
    raise AssertionError(f"the fleets still had work after {max_passes} passes")


@pytest.fixture(scope="module")
def fleets(simweb_small, tmp_path_factory):
    root = tmp_path_factory.mktemp("fleets")
    began = time.time()
    for s in range(SHARDS):   # every fleet gets the seeds; each keeps its own, forwards the rest
        crawlstate.start_crawl(simweb_small, shard_dir(root, s), "--num_shards", str(SHARDS),
                               "--shard", str(s))
    windows, reports = run_fleets(root, range(SHARDS))
    log = [r for r in simweb_small.requests() if began <= r["start"] <= time.time()]
    return root, windows, reports, log


def _visited(root, s):
    c = CrawlDir(str(shard_dir(root, s)))
    return c.read_table("visited", c.last_committed(), columns=["url", "host", "outcome"]).to_pylist()


@pytest.mark.slow
@pytest.mark.long   # not in the default suite: make test-long (.ci/run runs it)
def test_three_shards_fetch_exactly_the_reachable_set_each_page_once(fleets, simweb_small):
    root = fleets[0]
    rows = [r for s in range(SHARDS) for r in _visited(root, s)]
    urls = [r["url"] for r in rows]
    assert len(urls) == len(set(urls)), "a URL was visited by two shards or twice"
    fetched = {r["url"] for r in rows if r["outcome"] not in crawlstate.NOT_REQUESTED}
    reachable = set(simweb_small.ground_truth["reachable"].column("url").to_pylist())
    assert sorted(reachable - fetched) == [] and sorted(fetched - reachable) == []


@pytest.mark.slow
@pytest.mark.long   # not in the default suite: make test-long (.ci/run runs it)
def test_each_host_is_fetched_only_by_the_shard_that_owns_it(fleets):
    root = fleets[0]
    settings = effective_round_settings({}, CrawlDir(str(shard_dir(root, 0))).read_config()["round_defaults"])
    part = shard_config(settings).partitioner
    per_shard = {s: {r["host"] for r in _visited(root, s)} for s in range(SHARDS)}
    # ~9 hosts whose names include the run's port: which shard gets which differs per run
    assert sum(1 for hosts in per_shard.values() if hosts) >= 2
    for s, hosts in per_shard.items():
        assert set(part.owners(sorted(hosts)).tolist()) <= {s}


@pytest.mark.slow
@pytest.mark.long   # not in the default suite: make test-long (.ci/run runs it)
def test_links_crossed_between_shards_through_the_inboxes(fleets):
    _, _, reports, _ = fleets
    stats = [r["stats"] for s in range(SHARDS) for r in reports[s]]
    assert sum(x.get("forwarded_urls", 0) for x in stats) > 0
    assert sum(x.get("inbox_urls", 0) for x in stats) > 0


@pytest.mark.slow
@pytest.mark.long   # not in the default suite: make test-long (.ci/run runs it)
def test_server_log_each_page_once_each_host_from_one_shard_politely(fleets, simweb_small):
    _, windows, _, log = fleets
    assert requestlog.requested_twice(log) == []

    def shard_at(t):
        return next(s for s, a, b in windows if a <= t <= b)
    by_host = collections.defaultdict(set)
    for r in log:
        by_host[r["host"].lower()].add(shard_at(r["start"]))
    assert {h: s for h, s in by_host.items() if len(s) > 1} == {}
    assert requestlog.disallowed_requests(log, simweb_small.ground_truth) == []
    gaps = requestlog.min_gap_per_host([r for r in log if not r["path"].startswith("/robots")])
    assert gaps and min(gaps.values()) >= 0.05 * 0.9
    assert max(requestlog.max_concurrency_per_host(log).values()) == 1


def test_a_sharded_crawl_dir_must_be_named_for_its_shard(simweb_small, tmp_path, capsys):
    d = tmp_path / "shard-00"
    args = crawlstate.crawl_args(simweb_small, d, "--num_shards", "3", "--shard", "1")
    from pipelines import inject
    assert inject.main(args + ["--seed", simweb_small.seeds[0]]) == 2
    err = capsys.readouterr().err
    assert "shard-01" in err and not d.exists()


@pytest.mark.parametrize("flags,fragment", [
    (("--num_shards", "3", "--shard", "3"), "--shard 3: must be below --num_shards 3"),
    (("--num_shards", "3", "--remove_shard", "5"), "--remove_shard"),
    (("--num_shards", "2", "--remove_shard", "0,1"), "every shard is removed"),
    (("--num_shards", "2", "--partition", "hash_mod", "--shard_weights", "1,2"), "only --partition consistent"),
])
def test_unusable_shard_flags_are_refused_before_anything_is_written(simweb_small, tmp_path, capsys,
                                                                     flags, fragment):
    from pipelines import inject
    d = tmp_path / "shard-00"
    assert inject.main(crawlstate.crawl_args(simweb_small, d, *flags) + ["--seed", simweb_small.seeds[0]]) == 2
    assert fragment in capsys.readouterr().err and not d.exists()


@pytest.mark.slow
@pytest.mark.long   # not in the default suite: make test-long (.ci/run runs it)
def test_a_removed_shard_hands_its_hosts_along_the_ring(simweb_small, tmp_path):
    """After one round each, shard 1 leaves: its last round (with --remove_shard 1) fetches
    nothing and forwards its frontier; shards 0 and 2 take over only shard 1's hosts."""
    root = tmp_path / "fleets"
    for s in range(SHARDS):
        crawlstate.start_crawl(simweb_small, shard_dir(root, s), "--num_shards", str(SHARDS), "--shard", str(s))
    for s in range(SHARDS):   # one round each
        try:
            round_mod.run_round(["--crawl_dir", str(shard_dir(root, s))], out=lambda line: None)
        except cli.Notice:
            pass
    before = {s: {r["url"] for r in _visited(root, s)} for s in range(SHARDS)}
    hosts_before = {s: {r["host"] for r in _visited(root, s)} for s in range(SHARDS)}
    run_fleets(root, [1, 0, 2], "--remove_shard", "1")
    after = {s: [r for r in _visited(root, s)] for s in range(SHARDS)}
    assert {r["url"] for r in after[1]} == before[1], "the removed shard fetched after leaving"
    fetched = [r["url"] for s in range(SHARDS) for r in after[s] if r["outcome"] not in crawlstate.NOT_REQUESTED]
    reachable = set(simweb_small.ground_truth["reachable"].column("url").to_pylist())
    assert set(fetched) == reachable
    twice = {u for u, n in collections.Counter(fetched).items() if n > 1}
    assert twice <= before[1], "only pages the removed shard had fetched may be fetched again"
    settings = effective_round_settings({"remove_shard": "1"},
                                        CrawlDir(str(shard_dir(root, 0))).read_config()["round_defaults"])
    part = shard_config(settings).partitioner
    for s in (0, 2):   # a surviving shard gains hosts only from shard 1, never from the other
        gained = {r["host"] for r in after[s]} - hosts_before[s]
        assert gained.isdisjoint(hosts_before[2 - s])
        assert set(part.owners(sorted({r["host"] for r in after[s]})).tolist()) <= {s}
