"""ArrowTableCoder: tables round-trip, size estimates never encode, pipelines pick it up."""
import apache_beam as beam
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas import tables
from transforms.tableio.step import ArrowTableCoder
from transforms.tableio.step import ReadTables


def test_tables_round_trip_with_their_schema():
    t = tables.conform(pa.table({"fp": pa.array([1, 2], pa.int64()), "url": ["a", None],
                                 "anchors": pa.array([["x"], []], pa.list_(pa.string()))}),
                       tables.FRONTIER)
    c = ArrowTableCoder()
    back = c.decode(c.encode(t))
    assert back.equals(t) and back.schema.equals(t.schema)
    empty = tables.FRONTIER.empty_table()
    assert c.decode(c.encode(empty)).schema.equals(tables.FRONTIER)


def test_size_estimate_does_not_encode(monkeypatch):
    c = ArrowTableCoder()
    t = pa.table({"x": list(range(1000))})
    monkeypatch.setattr(ArrowTableCoder, "encode", lambda self, v: (_ for _ in ()).throw(AssertionError))
    assert c.get_impl().estimate_size(t) == t.nbytes


def test_tables_are_coded_with_it_where_declared(tmp_path):
    import pyarrow.parquet as pq
    path = tmp_path / "f.parquet"
    pq.write_table(tables.conform(pa.table({"fp": pa.array([1, 2, 3], pa.int64())}), tables.FILTERED), path)
    assert isinstance(beam.coders.registry.get_coder(pa.Table), ArrowTableCoder)
    with TestPipeline(runner="FnApiRunner") as p:
        read = p | ReadTables([str(path)], tables.FILTERED, ["fp"])
        assert read.element_type is pa.Table
        # a Reshuffle forces the tables across a stage boundary, i.e. through the coder
        out = read | beam.Reshuffle() | beam.Map(lambda t: t.column("fp").to_pylist())
        assert_that(out, equal_to([[1, 2, 3]]))
