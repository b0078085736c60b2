"""WriteTable + CommitTables: small upstream tables land in full row groups; write time is a
metric; only completed bundles' parts are listed; an empty table still gets its file."""
import glob
import json
import os

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from pipelines.report import beam_metrics
from schemas import tables
from transforms.tableio import dictionary
from transforms.tableio import step as write


def _part(start, n):
    return pa.table({"fp": pa.array(range(start, start + n), pa.int64()),
                     "url": [f"http://a.test/{i}" for i in range(start, start + n)],
                     "reason": ["depth"] * n})


def test_small_tables_are_buffered_into_row_groups_and_nothing_is_lost(tmp_path):
    prefix = str(tmp_path / "filtered" / "part")
    p = beam.Pipeline(runner=FnApiRunner())
    parts = (p | beam.Create([_part(i * 30, 30) for i in range(10)], reshuffle=False)
             | write.WriteTable(prefix, tables.FILTERED, row_group_rows=100))
    parts | write.CommitTables({prefix: tables.FILTERED}, str(tmp_path / "parts.json"), "a1")
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


def _run(build):
    p = beam.Pipeline(runner=FnApiRunner())
    build(p)
    p.run().wait_until_finish()


def test_one_commit_lists_every_tables_parts_and_gives_an_empty_table_its_file(tmp_path):
    a, b = str(tmp_path / "a" / "part"), str(tmp_path / "b" / "part")
    listing = str(tmp_path / "parts.json")

    def build(p):
        rows = p | "Rows" >> beam.Create([_part(0, 5), _part(5, 5)], reshuffle=False)
        none = p | "None" >> beam.Create([], reshuffle=False)
        (rows | "A" >> write.WriteTable(a, tables.FILTERED),
         none | "B" >> write.WriteTable(b, tables.FILTERED)) | beam.Flatten() | write.CommitTables(
            {a: tables.FILTERED, b: tables.FILTERED}, listing, "a1")
    _run(build)
    listed = json.load(open(listing))
    assert sorted(listed) == ["a", "b"]
    assert sorted(listed["a"]) == sorted(os.listdir(tmp_path / "a"))   # final names: nothing renamed
    assert sorted(pa.concat_tables([pq.read_table(tmp_path / "a" / f) for f in listed["a"]])
                  .column("fp").to_pylist()) == list(range(10))
    assert listed["b"] == ["part-empty-a1.parquet"] == os.listdir(tmp_path / "b")
    empty = pq.read_table(tmp_path / "b" / listed["b"][0])
    assert empty.num_rows == 0 and empty.schema.equals(tables.FILTERED)


def test_a_part_left_by_a_failed_bundle_is_never_listed(tmp_path):
    prefix = str(tmp_path / "t" / "part")
    listing = str(tmp_path / "parts.json")
    stray = write.part_path(prefix, "left-by-a-killed-attempt")
    (tmp_path / "t").mkdir(parents=True)
    pq.write_table(_part(1000, 3), stray)

    def build(p):
        (p | beam.Create([_part(0, 4)], reshuffle=False)
         | write.WriteTable(prefix, tables.FILTERED)) | write.CommitTables({prefix: tables.FILTERED}, listing, "a1")
    _run(build)
    [name] = json.load(open(listing))["t"]
    assert name != os.path.basename(stray)
    assert sorted(pq.read_table(tmp_path / "t" / name).column("fp").to_pylist()) == [0, 1, 2, 3]


def test_hash_columns_are_written_without_a_dictionary_and_the_rest_with_one(tmp_path):
    prefix = str(tmp_path / "visited" / "part")
    n = 50
    table = pa.table({name: pa.nulls(n, tables.VISITED.field(name).type) for name in tables.VISITED.names},
                     schema=tables.VISITED)
    table = table.set_column(tables.VISITED.get_field_index("minhash"), "minhash",
                             pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.uint32())))
    table = table.set_column(tables.VISITED.get_field_index("host"), "host",
                             pa.array(["a.test"] * n, pa.string()))
    _run(lambda p: p | beam.Create([table], reshuffle=False)
         | write.WriteTable(prefix, tables.VISITED)
         | write.CommitTables({prefix: tables.VISITED}, str(tmp_path / "parts.json"), "a1"))
    [path] = glob.glob(str(tmp_path / "visited" / "*.parquet"))
    meta = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}
    assert not any("DICTIONARY" in e for e in encodings["minhash.list.element"])
    assert any("DICTIONARY" in e for e in encodings["host"])
    assert pq.read_table(path).column("minhash").to_pylist() == [[i, i + 1] for i in range(n)]


def test_dictionary_columns_are_parquets_own_leaf_paths():
    """The paths named to the writer are those Parquet gives every table's columns."""
    import io
    nested = pa.schema([("m", pa.map_(pa.string(), pa.int32())), ("s", pa.struct([("a", pa.list_(pa.string()))])),
                        ("minhash", pa.list_(pa.uint32())), ("x", pa.int64())])
    for schema in list(tables.TABLES.values()) + [nested]:
        buf = io.BytesIO()
        pq.write_table(schema.empty_table(), buf)
        paths = [c.path for c in pq.ParquetFile(buf).schema]
        assert dictionary.dictionary_columns(schema) == [p for p in paths if p.split(".")[0] not in dictionary.NO_DICTIONARY]
