"""A shard's inbox (pipelines/fleet.py): only committed outboxes, each read once."""
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import fleet
from pipelines.config import shard_config
from pipelines.crawldir import CrawlDir, CrawlStateError
from schemas import tables


def _shard(root, i):
    c = CrawlDir(str(root / f"shard-{i:02d}"))
    c.write_config({"round_defaults": {"num_shards": 3, "shard": i}})
    return c


def _outbox(crawl, n, to, urls):
    d = crawl.table_dir(n, "outbox")

    os.makedirs(d, exist_ok=True)
    rows = [{"dst_fp": k, "dst": u, "host": "h", "depth": 1, "src_fp": 0, "src": None, "anchor": "",
             "source": "link", "redirects": 0, "lastmod": None} for k, u in enumerate(urls)]
    pq.write_table(pa.Table.from_pylist(rows, schema=tables.OUTBOX), f"{d}/to-{to:02d}-00000-of-00001.parquet")


def _commit(crawl, n):
    """Commit round n with the outbox files written into it (as its pipeline would list them)."""
    d = crawl.table_dir(n, "outbox")
    crawl.commit(n, {}, {"outbox": sorted(os.listdir(d)) if os.path.isdir(d) else []})


def _cfg(i):
    return shard_config({"num_shards": 3, "shard": i, "partition": "consistent", "virtual_nodes": 10})


def test_only_committed_outboxes_addressed_to_the_shard_are_read_once(tmp_path):
    s0, s1, s2 = (_shard(tmp_path, i) for i in range(3))
    _outbox(s0, 0, 1, ["http://a/1", "http://a/2"])
    _outbox(s0, 0, 2, ["http://c/1"])
    _commit(s0, 0)
    _outbox(s2, 0, 1, ["http://b/1"])
    _commit(s2, 0)
    _outbox(s0, 1, 1, ["http://a/3"])          # round 1 of shard 0 is still running (or was killed)

    files, rows, after = fleet.plan_inbox(s1, None, _cfg(1))
    assert rows == 3 and after == {"0": 0, "2": 0}
    assert sorted(f.split("/shard-")[1] for f in files) == ["00/rounds/000000/outbox/to-01-00000-of-00001.parquet",
                                                             "02/rounds/000000/outbox/to-01-00000-of-00001.parquet"]
    # shard 1's round 0 records what it read; its next plan starts after it
    fleet.write_read_through(s1, 0, _cfg(1), after)
    _commit(s1, 0)
    assert fleet.plan_inbox(s1, 0, _cfg(1))[1] == 0
    _commit(s0, 1)                            # shard 0's round 1 commits: now it is delivered
    files, rows, after = fleet.plan_inbox(s1, 0, _cfg(1))
    assert rows == 1 and len(files) == 1 and "000001" in files[0] and after == {"0": 1, "2": 0}


def test_an_uncommitted_reader_round_reads_the_same_files_again(tmp_path):
    s0, s1 = _shard(tmp_path, 0), _shard(tmp_path, 1)
    _outbox(s0, 0, 1, ["http://a/1"])
    _commit(s0, 0)
    first = fleet.plan_inbox(s1, None, _cfg(1))
    fleet.write_read_through(s1, 0, _cfg(1), first[2])   # killed before _COMMITTED
    assert fleet.plan_inbox(s1, None, _cfg(1)) == first


def test_a_damaged_outbox_file_is_named(tmp_path):
    s0, s1 = _shard(tmp_path, 0), _shard(tmp_path, 1)
    _outbox(s0, 0, 1, ["http://a/1"])
    _commit(s0, 0)
    path = s0.table_files("outbox", 0)[0]
    open(path, "wb").write(b"not parquet")
    with pytest.raises(CrawlStateError, match="to-01-00000-of-00001.parquet"):
        fleet.plan_inbox(s1, None, _cfg(1))


def test_an_unsharded_crawl_has_no_inbox(tmp_path):
    assert fleet.plan_inbox(CrawlDir(str(tmp_path / "c")), None, None) == ([], 0, {})
