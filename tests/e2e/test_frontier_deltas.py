"""Frontier and hosts deltas and compaction (issues #12, #53): a round writes only the
frontier rows it changed plus the fps that left, and only the rows of the hosts it fetched,
over the last full snapshot, and writes a table whole again once its deltas pass
--compact_ratio of it. The crawl's state is the same as with a
full frontier every round (--compact_ratio 0), every URL stays in exactly one of visited,
frontier and filtered, a killed round reruns to the same state and layout around a
compaction, and --keep_snapshots prunes the layers no kept view reads."""
import json
import shutil
import signal

import pyarrow.parquet as pq
import pytest

from pipelines.crawldir import CrawlDir, CrawlStateError
from tests.e2e import crawlstate

ROUNDS = 6
RATIO = "0.5"


def layout(d, table="frontier"):
    """Per committed round: "delta" or "full" (its `table`)."""
    c = CrawlDir(str(d))
    return ["delta" if table in c.manifest(n).get("deltas", ()) else "full"
            for n in c.committed_rounds()]


@pytest.fixture(scope="module")
def crawls(simweb_small, tmp_path_factory):
    out = {}
    for name, extra in (("deltas", ["--compact_ratio", RATIO]), ("full", ["--compact_ratio", "0"]),
                        ("pruned", ["--compact_ratio", RATIO, "--keep_snapshots", "2"])):
        d = tmp_path_factory.mktemp(name) / "crawl"
        crawlstate.start_crawl(simweb_small, d, "--max_pages", "6", "--max_per_host", "2", *extra)
        crawlstate.run_rounds(d, "--rounds", str(ROUNDS))
        out[name] = d
    return out


def test_rounds_write_deltas_and_compact_when_the_deltas_pass_the_ratio(crawls):
    kinds = layout(crawls["deltas"])
    assert kinds[0] == "full" and "delta" in kinds, kinds
    first = kinds.index("delta")
    assert "full" in kinds[first:], f"no compaction after the first delta: {kinds}"
    assert set(layout(crawls["full"])) == {"full"}
    c = CrawlDir(str(crawls["deltas"]))
    for n, kind in enumerate(kinds):   # a compaction comes exactly when the deltas passed the ratio
        if n:
            assert (kind == "full") == c.compaction_due("frontier", n - 1, float(RATIO)), n


def test_a_hosts_delta_holds_the_hosts_the_round_fetched_and_compacts_like_the_frontier(crawls):
    kinds = layout(crawls["deltas"], "hosts")
    assert kinds[0] == "full" and "delta" in kinds, kinds
    assert set(layout(crawls["full"], "hosts")) == {"full"}
    c = CrawlDir(str(crawls["deltas"]))
    smaller = 0
    for n, kind in enumerate(kinds):
        if n:
            assert (kind == "full") == c.compaction_due("hosts", n - 1, float(RATIO)), n
        if kind != "delta":
            continue
        files = [c.table_dir(n, "hosts") + "/" + f for f in c.manifest(n)["tables"]["hosts"]]
        written = [h for f in files for h in pq.read_table(f, columns=["host"]).column("host").to_pylist()]
        visited = c.read_table("visited", n, columns=["host", "round"]).to_pylist()
        fetched = {r["host"] for r in visited if r["round"] == n}
        assert len(written) == len(set(written)), n
        assert fetched <= set(written), f"round {n}: fetched hosts without their new row"
        smaller += len(written) < c.read_table("hosts", n).num_rows
    assert smaller, "no delta round wrote fewer rows than the whole hosts table"


def test_same_state_and_reports_as_a_full_frontier_every_round(crawls):
    a, b = CrawlDir(str(crawls["deltas"])), CrawlDir(str(crawls["full"]))
    for n in range(ROUNDS + 1):
        crawlstate.assert_same_state(crawlstate.state(crawls["deltas"], n), crawlstate.state(crawls["full"], n))
        ra, rb = a.read_report(n), b.read_report(n)
        assert ra["frontier_size"] == rb["frontier_size"] == a.read_table("frontier", n).num_rows, n
        assert ra["page_sets"]["pending"] == rb["page_sets"]["pending"], n


def test_every_url_is_in_exactly_one_of_visited_frontier_filtered(crawls):
    c = CrawlDir(str(crawls["deltas"]))
    for n in range(ROUNDS + 1):
        sets = {t: c.read_table(t, n, columns=["fp"]).column("fp").to_pylist()
                for t in ("visited", "frontier", "filtered")}
        for t, fps in sets.items():
            assert len(fps) == len(set(fps)), (n, t)
        v, f, x = (set(sets[t]) for t in ("visited", "frontier", "filtered"))
        assert not (v & f) and not (v & x) and not (f & x), n
        links = c.read_table("links", n, columns=["dst_fp"]).column("dst_fp").to_pylist()
        assert set(links) <= v | f | x, f"round {n}: a link target was lost"


def test_keep_snapshots_prunes_the_layers_no_kept_view_reads(crawls):
    d = crawls["pruned"]
    c = CrawlDir(str(d))
    last = c.last_committed()
    assert layout(d) == layout(crawls["deltas"])
    live = {r for k in (last - 1, last) for r, _, _ in c.view_layers("frontier", k)}
    for n in range(last + 1):
        has = bool(c.manifest(n)["tables"]["frontier"]) and (c.round_dir(n) and
                                                              any((d / "rounds" / f"{n:06d}" / "frontier").glob("*.parquet")))
        assert has == (n in live and bool(c.manifest(n)["tables"]["frontier"])), n
    for n in (last - 1, last):   # the kept views read as the unpruned crawl's
        crawlstate.assert_same_state(crawlstate.state(d, n), crawlstate.state(crawls["deltas"], n))
    old = min(live) - 1
    with pytest.raises(CrawlStateError, match="was pruned"):
        c.read_table("frontier", old)


@pytest.mark.slow
def test_killed_rounds_rerun_to_the_same_state_and_layout_around_a_compaction(crawls, tmp_path):
    src = crawls["deltas"]
    kinds = layout(src)
    first = kinds.index("delta")
    compaction = first + kinds[first:].index("full")
    for target in (first, compaction):   # a delta round, then the round that compacts
        crash = tmp_path / f"crash{target}"
        shutil.copytree(src, crash)
        for n in range(target, ROUNDS + 1):
            shutil.rmtree(crash / "rounds" / f"{n:06d}")
        for point in ("before_commit",):
            proc = crawlstate.run_round_subprocess(crash, env={"BEAMCRAWL_CRASH_AT": point})
            proc.wait(timeout=300)
            assert proc.returncode == -signal.SIGKILL, proc.stderr.read()[-3000:]
            assert CrawlDir(str(crash)).last_committed() == target - 1
            assert (crash / "rounds" / f"{target:06d}" / "frontier").exists()   # partial output left
        proc = crawlstate.run_round_subprocess(crash)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        assert layout(crash) == kinds[:target + 1]
        crawlstate.assert_same_state(crawlstate.state(src, target), crawlstate.state(crash, target))
        manifest = json.loads((crash / "rounds" / f"{target:06d}" / "_COMMITTED").read_text())
        assert ("frontier" in manifest["deltas"]) == (kinds[target] == "delta")


def test_a_damaged_removal_file_is_named_and_nothing_is_written(crawls, tmp_path, capsys):
    from pipelines import round as round_mod
    from tests.e2e.test_crawl_state import _snapshot
    d = tmp_path / "crawl"
    shutil.copytree(crawls["deltas"], d)
    kinds = layout(d)
    target = next(n for n, k in enumerate(kinds) if k == "delta"
                  and list((d / "rounds" / f"{n:06d}" / "frontier_removed").glob("*.parquet")))
    for n in range(target + 1, ROUNDS + 1):
        shutil.rmtree(d / "rounds" / f"{n:06d}")
    f = next((d / "rounds" / f"{target:06d}" / "frontier_removed").glob("*.parquet"))
    f.write_bytes(f.read_bytes()[:20])
    before = _snapshot(d)
    assert round_mod.main(["--crawl_dir", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(f) in err
    assert _snapshot(d) == before
