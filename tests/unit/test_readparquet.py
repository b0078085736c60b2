"""ReadTables / read_row_group: one table per row group, narrow reads, clear errors."""
import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas import tables
from schemas.tables import ParquetReadError
from transforms.tableio.step import ReadTables
from transforms.tableio.files import read_row_group


def _filtered(n, start=0):
    return tables.conform(pa.table({
        "fp": pa.array(range(start, start + n), pa.int64()),
        "url": [f"http://a.test/{i}" for i in range(start, start + n)],
        "reason": ["depth"] * n}), tables.FILTERED)


def test_each_row_group_is_one_table_with_only_the_asked_columns(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(_filtered(10), a, row_group_size=4)          # 3 row groups
    pq.write_table(_filtered(3, start=100), b)
    with TestPipeline(runner="FnApiRunner") as p:
        out = (p | ReadTables([str(a), str(b)], tables.FILTERED, ["fp", "url"])
               | beam.Map(lambda t: (t.schema.names, t.num_rows)))
        assert_that(out, equal_to([(["fp", "url"], 4), (["fp", "url"], 4), (["fp", "url"], 2),
                                   (["fp", "url"], 3)]))


def test_positions_lead_back_to_the_wide_row_group(tmp_path):
    a = tmp_path / "a.parquet"
    pq.write_table(_filtered(10), a, row_group_size=4)
    with TestPipeline(runner="FnApiRunner") as p:
        out = (p | ReadTables([str(a)], tables.FILTERED, ["fp"], with_positions=True)
               | beam.Map(lambda e: (e[1], e[2].column("fp").to_pylist(),
                                     read_row_group(e[0], e[1], tables.FILTERED,
                                                    ["fp", "reason"]).column("fp").to_pylist())))
        assert_that(out, equal_to([(0, [0, 1, 2, 3], [0, 1, 2, 3]), (1, [4, 5, 6, 7], [4, 5, 6, 7]),
                                   (2, [8, 9], [8, 9])]))


def test_a_column_missing_from_an_older_file_reads_as_nulls(tmp_path):
    a = tmp_path / "old.parquet"
    pq.write_table(pa.table({"fp": pa.array([1, 2], pa.int64()), "url": ["u1", "u2"]}), a)
    t = read_row_group(str(a), 0, tables.FILTERED, ["fp", "reason"])
    assert t.column("reason").to_pylist() == [None, None]


def test_no_files_is_an_empty_collection():
    with TestPipeline(runner="FnApiRunner") as p:
        out = p | ReadTables([], tables.FILTERED) | beam.Map(lambda t: t.num_rows)
        assert_that(out, equal_to([]))


def test_a_damaged_file_is_named_in_the_error(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(ParquetReadError, match="bad.parquet"):
        read_row_group(str(bad), 0, tables.FILTERED)
    with pytest.raises(Exception, match="bad.parquet"):
        with TestPipeline(runner="FnApiRunner") as p:
            _ = p | ReadTables([str(bad)], tables.FILTERED)
