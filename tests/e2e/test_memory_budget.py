"""End-to-end: --memory_mb changes how a round holds its data, never what it commits."""
import math
from pathlib import Path

import pytest

from pipelines.roundpipeline import budget_sizes
from tests.e2e import crawlstate
from transforms.tableio import spill


@pytest.fixture(scope="module")
def two_crawls(simweb_small, tmp_path_factory):
    dirs, reports = {}, {}
    for budget in ("default", "64"):
        d = tmp_path_factory.mktemp(f"budget_{budget}") / "crawl"
        extra = () if budget == "default" else ("--memory_mb", budget)
        crawlstate.start_crawl(simweb_small, d, *extra)
        reports[budget] = crawlstate.run_rounds(d, "--rounds", "3")
        dirs[budget] = d
    return dirs, reports


def test_a_small_budget_commits_the_same_crawl(two_crawls):
    dirs, _ = two_crawls
    crawlstate.assert_same_state(crawlstate.state(dirs["default"]), crawlstate.state(dirs["64"]))


def test_the_small_budgets_rounds_went_through_spill_files_of_its_size(two_crawls):
    """Each fetching round's link bundles, visited rows and URL-seen parts crossed their stage
    boundary as spill files (report.json "spill", Beam's spill counters), the same bytes under
    either budget, each file cut at the budget's size: the writers were given 4 MB files under
    --memory_mb 64 and 64 MB under the default (spill.file_limit_bytes). (The small web's rounds
    spill ~0.1 MB, so no file is full; tests/unit/test_spill.py cuts files.)"""
    _, reports = two_crawls
    chunk, default_chunk = budget_sizes(64)["spill_bytes"], budget_sizes(1024)["spill_bytes"]
    assert (chunk, default_chunk) == (4 << 20, 64 << 20)
    for small, default in zip(reports["64"], reports["default"]):
        spilled = small["spill"]
        assert spilled.get("files", 0) > 0 and spilled.get("bytes", 0) > 0, (small["round"], spilled)
        assert spilled["files"] >= math.ceil(spilled["bytes"] / chunk)
        assert spilled["bytes"] == default["spill"]["bytes"], small["round"]
        assert (spilled.get("file_limit_bytes"), default["spill"].get("file_limit_bytes")) == (chunk, default_chunk)


def test_no_spill_files_outlive_their_round(two_crawls):
    for d in two_crawls[0].values():
        assert [p for p in Path(d).rglob(spill.DIRNAME)] == []
        assert len(list((Path(d) / "rounds").glob("*/_COMMITTED"))) == 4


def test_the_budget_is_a_checked_setting(simweb_small, tmp_path, capsys):
    from pipelines import round as round_mod
    d = tmp_path / "crawl"
    crawlstate.start_crawl(simweb_small, d)
    assert round_mod.main(["--crawl_dir", str(d), "--memory_mb", "10"]) == 2
    assert "--memory_mb" in capsys.readouterr().err
    assert not (d / "rounds" / "000001").exists()
