"""A round commits exactly the parts its own run wrote (issue #49, pipelines/crawldir.py).

On object storage a delete that silently misses (Beam's S3 delete of a "folder") or a
zombie worker of a killed run can leave parts of another run in a round's folders. The
manifest is built from the parts this run's pipeline listed, never from a folder listing,
so such parts are never read, and the sweep after the commit deletes them.
"""
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines import storage
from pipelines.crawldir import CrawlDir
from schemas import tables
from tests.e2e import crawlstate

STALE_URL = "http://stale.simweb.test/left-by-another-run"


def test_parts_another_run_left_in_the_round_are_never_committed(simweb_small, tmp_path, monkeypatch):
    d = tmp_path / "crawl"
    crawlstate.start_crawl(simweb_small, d, "--max_pages", "10")
    storage.use([])
    crawl = CrawlDir(str(d))
    # a killed run's parts that the rerun's delete did not reach (as Beam's S3 delete missed them)
    monkeypatch.setattr(CrawlDir, "discard_uncommitted", lambda self, n: False)
    stale = {}
    for table in ("visited", "frontier"):
        folder = d / "rounds" / "000001" / table
        folder.mkdir(parents=True)
        stale[table] = folder / "part-0123456789abcdef.parquet"
        pq.write_table(pa.Table.from_pylist([{"url": STALE_URL, "fp": 1234567, "host": "stale.simweb.test",
                                               "depth": 1, "round": 1}], schema=tables.TABLES[table]),
                       stale[table])
    crawlstate.run_rounds(d, "--rounds", "1")
    assert crawl.last_committed() == 1
    for table in ("visited", "frontier"):
        assert STALE_URL not in crawl.read_table(table, 1, columns=["url"]).column("url").to_pylist()
        assert stale[table].name not in crawl.manifest(1)["tables"][table]
        assert not stale[table].exists(), "the sweep after the commit deletes what no manifest lists"
