"""End-to-end: --memory_mb changes how a round holds its data, never what it commits."""
from pathlib import Path

import pytest

from tests.e2e import crawlstate
from transforms.tableio import spill


@pytest.fixture(scope="module")
def two_crawls(simweb_small, tmp_path_factory):
    dirs = {}
    for budget in ("default", "64"):
        d = tmp_path_factory.mktemp(f"budget_{budget}") / "crawl"
        extra = () if budget == "default" else ("--memory_mb", budget)
        crawlstate.start_crawl(simweb_small, d, *extra)
        crawlstate.run_rounds(d, "--rounds", "3")
        dirs[budget] = d
    return dirs


def test_a_small_budget_commits_the_same_crawl(two_crawls):
    crawlstate.assert_same_state(crawlstate.state(two_crawls["default"]),
                                 crawlstate.state(two_crawls["64"]))


def test_no_spill_files_outlive_their_round(two_crawls):
    for d in two_crawls.values():
        assert [p for p in Path(d).rglob(spill.DIRNAME)] == []
        assert len(list((Path(d) / "rounds").glob("*/_COMMITTED"))) == 4


def test_the_budget_is_a_checked_setting(simweb_small, tmp_path, capsys):
    from pipelines import round as round_mod
    d = tmp_path / "crawl"
    crawlstate.start_crawl(simweb_small, d)
    assert round_mod.main(["--crawl_dir", str(d), "--memory_mb", "10"]) == 2
    assert "--memory_mb" in capsys.readouterr().err
    assert not (d / "rounds" / "000001").exists()
