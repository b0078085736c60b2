"""Damaged crawl directories: a clear error naming the file, non-zero exit, nothing written."""
import hashlib
import os
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import inject, round as round_mod
from pipelines.crawldir import CrawlDir, CrawlStateError


@pytest.fixture()
def crawl_dir(tmp_path):
    d = tmp_path / "crawl"
    assert inject.main(["--crawl_dir", str(d), "--seed", "http://a.test/", "--seed", "http://b.test/x",
                        "--allow_loopback", "true"]) == 0
    return d


def _snapshot(d):
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(pathlib.Path(d).rglob("*")) if p.is_file()}


def _frontier_file(d):
    return next((d / "rounds" / "000000" / "frontier").glob("*.parquet"))


def _assert_round_refused(d, capsys, *fragments):
    before = _snapshot(d)
    assert round_mod.main(["--crawl_dir", str(d)]) == 2
    err = capsys.readouterr().err
    for f in fragments:
        assert f in err
    assert _snapshot(d) == before, "a refused round must not write or delete anything"
    assert not (d / "rounds" / "000001").exists()


def test_inject_writes_a_committed_round_zero_with_the_seeds(crawl_dir):
    c = CrawlDir(str(crawl_dir))
    assert c.committed_rounds() == [0]
    urls = sorted(c.read_table("frontier", 0).column("url").to_pylist())
    assert urls == ["http://a.test/", "http://b.test/x"]


def test_missing_parquet_file_is_named_and_nothing_is_written(crawl_dir, capsys):
    f = _frontier_file(crawl_dir)
    os.remove(f)
    _assert_round_refused(crawl_dir, capsys, str(f), "missing or damaged")


def test_truncated_parquet_file_is_named_and_nothing_is_written(crawl_dir, capsys):
    f = _frontier_file(crawl_dir)
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    _assert_round_refused(crawl_dir, capsys, str(f), "damaged")


def test_wrong_schema_parquet_file_is_named_and_nothing_is_written(crawl_dir, capsys):
    f = _frontier_file(crawl_dir)
    pq.write_table(pa.table({"url": ["http://a.test/"], "fp": pa.array(["not-a-number"])}), f)
    _assert_round_refused(crawl_dir, capsys, str(f), "wrong schema", "missing column 'host'")


def test_not_a_crawl_directory(tmp_path, capsys):
    assert round_mod.main(["--crawl_dir", str(tmp_path / "nothing")]) == 2
    assert "is not a crawl directory" in capsys.readouterr().err


def test_unknown_strategy_is_refused_before_anything_is_written(crawl_dir, capsys):
    before = _snapshot(crawl_dir)
    assert round_mod.main(["--crawl_dir", str(crawl_dir), "--strategy", "depth_first"]) == 2
    assert "unknown ordering 'depth_first'" in capsys.readouterr().err
    assert _snapshot(crawl_dir) == before
    

def test_readers_never_see_an_uncommitted_round(crawl_dir):
    c = CrawlDir(str(crawl_dir))
    partial = crawl_dir / "rounds" / "000001" / "frontier"
    partial.mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), partial / "part-00000-of-00001.parquet")
    assert c.committed_rounds() == [0]
    assert c.last_committed() == 0
    with pytest.raises(CrawlStateError):
        c.discard_uncommitted(0)
    assert c.discard_uncommitted(1) and not (crawl_dir / "rounds" / "000001").exists()
