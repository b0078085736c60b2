"""WriteTable: small upstream tables land in full row groups; write time is a metric."""
import glob

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from pipelines.report import beam_metrics
from schemas import tables
from transforms.tableio import step as write


def _part(start, n):
    return pa.table({"fp": pa.array(range(start, start + n), pa.int64()),
                     "url": [f"http://a.test/{i}" for i in range(start, start + n)],
                     "reason": ["depth"] * n})


def test_small_tables_are_buffered_into_row_groups_and_nothing_is_lost(tmp_path):
    prefix = str(tmp_path / "filtered" / "part")
    p = beam.Pipeline(runner=FnApiRunner())
    (p | beam.Create([_part(i * 30, 30) for i in range(10)], reshuffle=False)
     | write.WriteTable(prefix, tables.FILTERED, row_group_rows=100))
    result = p.run()
    result.wait_until_finish()
    files = glob.glob(str(tmp_path / "filtered" / "*.parquet"))
    assert files
    got = pa.concat_tables([pq.read_table(f) for f in files])
    assert sorted(got.column("fp").to_pylist()) == list(range(300))
    assert got.schema.equals(tables.FILTERED)
    groups = [pq.ParquetFile(f).metadata.row_group(i).num_rows
              for f in files for i in range(pq.ParquetFile(f).metadata.num_row_groups)]
    assert sorted(groups) == [100, 100, 100]   # not one row group per 30-row table
    assert beam_metrics(result, write.WRITE_METRIC[0])[write.WRITE_METRIC[1]] > 0
