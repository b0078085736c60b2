"""tableio.tablefiles: keyed tables through IPC table files, read back by reference."""
import pickle
import threading

import apache_beam as beam
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.fetch.hostjob import as_rows
from transforms.tableio.tablefiles import KeyedTablesToFiles, Stored, TableFiles, TableRef


def _table(host, n, start=0, extra=False):
    cols = {"fp": pa.array(range(start, start + n), pa.int64()),
            "url": pa.array([f"http://{host}/{i}" for i in range(start, start + n)])}
    if extra:
        cols["depth"] = pa.array([1] * n, pa.int32())
    return pa.table(cols)


def _hosts():
    # two batches in one table, a table of another schema, and one with no rows
    two_chunks = pa.concat_tables([_table("a", 3), _table("a", 2, start=3)])
    return [("a", two_chunks), ("b", _table("b", 40)), ("c", _table("c", 5, extra=True)),
            ("d", _table("d", 0)), ("e", _table("e", 7))]


def _keep(kv, out_dir):
    with open(f"{out_dir}/{kv[0]}.pickle", "wb") as f:
        pickle.dump(kv[1], f)


def _written(tmp_path, chunk_bytes):
    """{host: what KeyedTablesToFiles gave for it}, through a pipeline."""
    out = tmp_path / "out"
    out.mkdir()
    with TestPipeline() as p:
        refs = (p | beam.Create(_hosts(), reshuffle=False)
                | KeyedTablesToFiles(str(tmp_path / "lists"), chunk_bytes))
        refs | beam.Map(_keep, str(out))   # noqa: B018
        assert_that(refs | beam.Keys(), equal_to(["a", "b", "c", "d", "e"]))
    return {f.stem: pickle.loads(f.read_bytes()) for f in out.glob("*.pickle")}


def test_each_table_reads_back_from_its_ref_in_any_order(tmp_path):
    refs = _written(tmp_path, 1 << 20)
    assert isinstance(refs["d"], pa.Table) and refs["d"].num_rows == 0     # no rows: as it is
    files = TableFiles()
    try:
        for host in ("e", "c", "a", "b"):                    # not the order they were written
            ref = refs[host]
            assert isinstance(ref, TableRef) and len(ref) == dict(_hosts())[host].num_rows
            assert files.read(ref).equals(dict(_hosts())[host])
    finally:
        files.close()
    # a schema change starts a new file; with room for all, the rest share one
    assert len({refs[h].path for h in "abce"}) == 3
    assert len(list((tmp_path / "lists").glob("*.arrow"))) == 3


def test_small_files_roll_over_one_table_a_file_each_readable_on_its_own(tmp_path):
    refs = _written(tmp_path, 1)                             # one table a file
    paths = {refs[h].path for h in "abce"}
    assert len(paths) == 4
    for h in "abce":                                         # each readable on its own
        with open(refs[h].path, "rb") as f:
            assert pa.ipc.open_file(f).num_record_batches == refs[h].count


def test_refs_pickle_and_stored_rows_load_when_fetched(tmp_path):
    refs = _written(tmp_path, 1 << 20)
    ref = pickle.loads(pickle.dumps(refs["b"]))
    assert ref == refs["b"] and hash(ref) == hash(refs["b"])
    files = TableFiles()
    try:
        stored = Stored(ref, files)
        assert len(stored) == 40
        rows = as_rows(stored)                               # what a fetch job does with it
        assert [r["url"] for r in rows] == [f"http://b/{i}" for i in range(40)]
        # threads reading at once share one reader per file
        got, errors = [], []

        def read():
            try:
                got.append(files.read(refs["a"]).num_rows + files.read(refs["e"]).num_rows)
            except Exception as e:   # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=read) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and got == [12] * 8
    finally:
        files.close()


def _halves(table):
    """A split: the table's first and second half as slices, keyed 0 and 1."""
    mid = table.num_rows // 2
    return [(0, table.slice(0, mid)), (1, table.slice(mid))]


def test_a_split_writes_only_each_slices_own_rows(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    big = _table("a", 10_000)
    with TestPipeline() as p:
        refs = (p | beam.Create([big], reshuffle=False)
                | KeyedTablesToFiles(str(tmp_path / "parts"), 1 << 30, split=_halves))
        refs | beam.Map(_keep, str(out))   # noqa: B018
    refs = {int(f.stem): pickle.loads(f.read_bytes()) for f in out.glob("*.pickle")}
    files = TableFiles()
    try:
        assert files.read(refs[0]).equals(big.slice(0, 5_000))
        assert files.read(refs[1]).equals(big.slice(5_000))
    finally:
        files.close()
    # one file holding the table's rows once (not each part with its whole parent)
    (path,) = tmp_path.joinpath("parts").glob("*.arrow")
    assert path.stat().st_size < 1.3 * big.nbytes
