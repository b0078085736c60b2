"""ArrowTableCoder: tables round-trip, size estimates never encode, pipelines pick it up."""
import apache_beam as beam
import pytest
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas import tables
from transforms.tableio.coder import ArrowTableCoder
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


@pytest.fixture
def round_pipeline():
    """A pipeline with the options a round runs with (Beam's type check off), built with the
    construction patch active as a round's is."""
    from pipelines import patches
    from pipelines.runner import pipeline_options
    with patches.active(patches.Context(in_process=False), environ={}, only=("construction",)) as on:
        assert on == ["construction"]
        options, _ = pipeline_options([])
        yield beam.Pipeline(options=options)


def _coders_of(p, prefix):
    """The coder payloads (components included) of the PCollections whose names start with `prefix`."""
    proto = p.to_runner_api()
    coders = proto.components.coders

    def payloads(coder_id):
        yield coders[coder_id].spec.payload
        for c in coders[coder_id].component_coder_ids:
            yield from payloads(c)

    found = [list(payloads(pc.coder_id)) for pc in proto.components.pcollections.values()
             if pc.unique_name.lstrip("0123456789").startswith(prefix)]   # names are "<n><label>.<tag>"
    assert found, f"no PCollection {prefix}"
    return found


def test_declared_tables_keep_the_coder_with_the_type_check_off(round_pipeline):
    # (Beam 2.77 drops every element type with --no_pipeline_type_check, declared ones too:
    # without pipelines.patches.construction's _declared_types the tables went through pickle)
    p = round_pipeline
    tables_ = p | beam.Create([1]) | "Declared" >> beam.Map(lambda _: pa.table({"a": [1]})).with_output_types(pa.Table)
    shuffled = tables_ | beam.Reshuffle()
    undeclared = tables_ | "Undeclared" >> beam.Map(lambda t: t)
    assert tables_.element_type is pa.Table and shuffled.element_type is pa.Table
    assert undeclared.element_type is None          # nothing inferred from bytecode
    assert all(any(b"ArrowTableCoder" in c for c in coders) for coders in _coders_of(p, "Declared"))


def test_join_tables_groups_like_cogroupbykey_with_typed_tables(round_pipeline):
    from transforms.tableio.join import JoinTables
    urls = [("a", pa.table({"u": [1, 2]})), ("b", pa.table({"u": [3]})), ("a", pa.table({"u": [4]}))]
    states = [("a", {"host": "a", "n": 1}), ("c", {"host": "c", "n": 2})]

    def plain(kv):
        key, got = kv
        return key, sorted(x for t in got["urls"] for x in t.column("u").to_pylist()), got["state"]

    with TestPipeline(runner="FnApiRunner") as p:
        joined = {"urls": p | "U" >> beam.Create(urls), "state": p | "S" >> beam.Create(states)} | JoinTables(["urls"])
        assert_that(joined | beam.Map(plain), equal_to([
            ("a", [1, 2, 4], [{"host": "a", "n": 1}]), ("b", [3], []), ("c", [], [{"host": "c", "n": 2}])]))
    p = round_pipeline
    u = p | "U" >> beam.Create(urls)
    s = p | "S" >> beam.Create(states)
    {"urls": u, "state": s} | "Join" >> JoinTables(["urls"])
    assert all(any(b"ArrowTableCoder" in c for c in coders) for coders in _coders_of(p, "Join/Tag[urls]"))
