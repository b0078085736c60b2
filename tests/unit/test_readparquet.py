"""ReadTables / read_row_group: one table per row group, narrow reads, clear errors; and
Arrow's threads never call into Python while they read (`open_parquet`)."""
import io
import threading

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from apache_beam.io.filesystems import FileSystems
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas import tables
from schemas.tables import ParquetReadError
from transforms.tableio.step import ReadTables
from transforms.tableio.files import read_row_group, read_row_groups, read_rows, read_view
from transforms.tableio.layers import read_layers
from transforms.tableio.tablefiles import TableFiles, TableRef


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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), group=st.integers(1, 17), batch=st.integers(1, 9), data=st.data())
def test_rows_read_by_position_are_those_of_the_whole_row_group(tmp_path, n, group, batch, data):
    a = tmp_path / "a.parquet"
    pq.write_table(_filtered(n), a, row_group_size=group)
    index = data.draw(st.integers(0, (n - 1) // group))
    whole = read_row_group(str(a), index, tables.FILTERED, ["url", "fp"])
    rows = sorted(data.draw(st.sets(st.integers(0, group + 3), max_size=group + 4)))
    got, decoded = read_rows(str(a), index, rows, tables.FILTERED, ["url", "fp"], batch_rows=batch)
    kept = [r for r in rows if r < whole.num_rows]
    assert got.schema.names == ["url", "fp"]
    assert got.to_pylist() == whole.take(pa.array(kept, pa.int64())).to_pylist()
    # decoded a batch at a time, and not past the batch of the last row asked for
    assert decoded <= min(whole.num_rows, (kept[-1] // batch + 1) * batch if kept else whole.num_rows)


def test_rows_read_by_position_name_a_damaged_file(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(ParquetReadError, match="bad.parquet"):
        read_rows(str(bad), 0, [0], tables.FILTERED)


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


class _SpyFile(io.FileIO):
    """A file whose reads note the thread they ran on (a `FileSystems` handle stand-in)."""

    def __init__(self, path, threads):
        super().__init__(path, "rb")
        self.threads = threads

    def read(self, *a):
        self.threads.append(threading.current_thread().name)
        return super().read(*a)

    def readinto(self, b):
        self.threads.append(threading.current_thread().name)
        return super().readinto(b)


def _spied(monkeypatch, scheme):
    """FileSystems.open hands out spy files; `scheme` is what FileSystems says each path is on."""
    threads, opened = [], []

    def spy_open(path, *a, **k):
        opened.append(path)
        return _SpyFile(path, threads)
    monkeypatch.setattr(FileSystems, "open", staticmethod(spy_open))
    monkeypatch.setattr(FileSystems, "get_scheme", staticmethod(lambda path: scheme))
    return threads, opened


def _each_reader(a, b, c):
    """What every crawl-table reader returns for a (3 row groups), b (delta over a) and the
    table file c (3 batches)."""
    files = TableFiles()
    try:
        stored = files.read(TableRef(str(c), 1, 2, 2000)).column("fp").to_pylist()
    finally:
        files.close()
    return [read_row_group(str(a), 1, tables.FILTERED, ["fp", "url"]).column("fp").to_pylist(),
            [t.num_rows for _, _, t in read_row_groups(str(a), tables.FILTERED)],
            read_view([str(a), str(b)], tables.FILTERED, ["fp"]).column("fp").to_pylist(),
            sorted(x for t in read_layers([([str(a)], []), ([str(b)], [])], tables.FILTERED, ["fp"])
                   for x in t.column("fp").to_pylist()),
            stored]


@pytest.mark.parametrize("scheme", [None, "gs"])
def test_arrow_threads_never_call_into_python_while_reading(tmp_path, monkeypatch, scheme):
    """Arrow decodes on its own threads; a Python file handed to it was read from them and
    its chunks freed there, after the read returned: one freed while the interpreter was
    exiting aborted the process (exit -6, "terminate called without an active exception").
    Local files are opened by Arrow itself; other file systems (here a local file the spy
    says is on gs://) are read whole through FileSystems, on the calling thread."""
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.arrow"
    pq.write_table(_filtered(3000), a, row_group_size=1000)
    pq.write_table(_filtered(5, start=10_000), b)
    with pa.ipc.new_file(str(c), tables.FILTERED) as w:
        for batch in _filtered(3000).to_batches(max_chunksize=1000):
            w.write_batch(batch)
    expected = _each_reader(a, b, c)       # (unspied)
    threads, opened = _spied(monkeypatch, scheme)
    assert _each_reader(a, b, c) == expected
    assert expected[0] == list(range(1000, 2000)) and expected[1] == [1000, 1000, 1000]
    assert len(expected[2]) == len(expected[3]) == 3005 and expected[4] == list(range(1000, 3000))
    assert set(threads) <= {threading.current_thread().name}, threads
    if scheme is None:
        assert opened == []                # Arrow opened them
    else:
        assert threads and set(opened) == {str(a), str(b), str(c)}
