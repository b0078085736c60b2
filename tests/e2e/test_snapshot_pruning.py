"""--keep_snapshots: only the last rounds keep their frontier/hosts/opic snapshots, so a crawl
directory does not grow as rounds x frontier; the crawl's state is the same as with every
snapshot kept, and reading a pruned snapshot is an error that says why."""
import os

import pytest

from pipelines.crawldir import SNAPSHOT_TABLES, CrawlDir, CrawlStateError
from tests.e2e import crawlstate

ROUNDS = 4


def snapshot_files(d, n):
    c = CrawlDir(str(d))
    return [f for t in SNAPSHOT_TABLES
            for f in (os.listdir(c.table_dir(n, t)) if os.path.isdir(c.table_dir(n, t)) else [])]


@pytest.fixture(scope="module")
def crawls(simweb_small, tmp_path_factory):
    out = {}
    for keep in ("2", "0"):
        d = tmp_path_factory.mktemp(f"keep{keep}") / "crawl"
        # whole snapshots every round (layered tables' pruning: test_frontier_deltas.py)
        crawlstate.start_crawl(simweb_small, d, "--strategy", "opic", "--max_pages", "8", "--compact_ratio", "0")
        crawlstate.run_rounds(d, "--rounds", str(ROUNDS), "--keep_snapshots", keep)
        out[keep] = d
    return out


def test_only_the_last_two_rounds_keep_their_snapshots(crawls):
    d = crawls["2"]
    c = CrawlDir(str(d))
    last = c.last_committed()
    assert last == ROUNDS
    for n in range(last + 1):
        kept = n >= last - 1
        assert bool(snapshot_files(d, n)) == kept, n
        assert c.pruned(n) == (not kept), n
    # every round keeps everything else: its deltas, report and manifest
    assert all(c.read_report(n)["round"] == n for n in range(last + 1))
    assert len(snapshot_files(crawls["0"], 1)) > 0                       # 0 keeps all


def test_pruning_changes_no_state(crawls):
    n = ROUNDS
    crawlstate.assert_same_state(crawlstate.state(crawls["2"], n), crawlstate.state(crawls["0"], n))


def test_reading_a_pruned_snapshot_says_what_happened(crawls):
    c = CrawlDir(str(crawls["2"]))
    with pytest.raises(CrawlStateError, match="was pruned.*--keep_snapshots 0"):
        c.read_table("frontier", 1)
    assert c.read_table("visited", 1).num_rows > 0                        # deltas stay readable


def test_an_interrupted_prune_is_finished_by_the_next(crawls, tmp_path):
    import shutil
    d = tmp_path / "crawl"
    shutil.copytree(crawls["0"], d)
    c = CrawlDir(str(d))
    # as if a prune of round 2 died after its marker and one deletion
    with open(os.path.join(c.round_dir(2), "_PRUNED"), "w") as f:
        f.write('{"tables": ["frontier", "hosts", "opic"]}')
    frontier_dir = c.table_dir(2, "frontier")
    os.remove(os.path.join(frontier_dir, sorted(os.listdir(frontier_dir))[0]))
    assert c.prune_snapshots(2) == [0, 1, 2]
    assert [n for n in range(ROUNDS + 1) if snapshot_files(d, n)] == [3, 4]
    assert c.prune_snapshots(2) == []                                     # nothing left to do
