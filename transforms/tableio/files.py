"""Reading crawl-table files: row groups and whole views, through Beam's `FileSystems`
(so gs://, s3:// and hdfs:// crawl directories work as local ones). No pipeline needed."""

import contextlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas import tables
from schemas.tables import ParquetReadError  # noqa: F401  (raised here; callers catch it by this name too)


def _subschema(schema, columns):
    return schema if columns is None else pa.schema([schema.field(c) for c in columns])


def _read_columns(schema, columns, file_schema):
    """The requested columns this file has (older files may lack a newer column)."""
    wanted = schema.names if columns is None else list(columns)
    return [c for c in wanted if c in file_schema.names]


def arrow_source(path):
    """`path` opened for Arrow (a file Arrow reads without calling into Python; close it).

    Arrow reads and decodes on its own threads (a Parquet read even with `use_threads=False`,
    an IPC file's batches through its I/O pool). Handed a Python file (a `FileSystems`
    handle), those threads call back into Python for each chunk and keep it (a Python
    buffer) until their task ends, which can be after the read has returned. One that let
    go of it while the interpreter was exiting needed the GIL and aborted the process
    ("terminate called without an active exception", exit -6): a `crawl` that stopped right
    after reading its frontier, once in ~380 runs on a loaded machine. So `FileSystems`
    says which file system the path is on; a local file is opened by Arrow itself (read
    piece by piece, as before), any other (gs://, s3://, hdfs://) is read through
    `FileSystems` into memory Arrow owns, whole."""
    if FileSystems.get_scheme(path) is None:
        return pa.OSFile(path)
    with FileSystems.open(path) as f:
        data = f.read()
    owned = pa.allocate_buffer(len(data))
    memoryview(owned).cast("B")[:] = data
    return pa.BufferReader(owned)


@contextlib.contextmanager
def open_parquet(path, **options):
    """`path` as a `pq.ParquetFile` read from its `arrow_source` (`options`: ParquetFile's)."""
    with arrow_source(path) as source:
        yield pq.ParquetFile(source, **options)


def read_row_group(path, index, schema, columns=None) -> pa.Table:
    """Row group `index` of `path`, conformed to `schema` restricted to `columns`."""
    sub = _subschema(schema, columns)
    try:
        with open_parquet(path) as pf:
            t = pf.read_row_group(index, columns=_read_columns(sub, None, pf.schema_arrow))
    except Exception as e:
        raise ParquetReadError(f"{path}: cannot read row group {index} ({type(e).__name__}: {e}). "
                               f"The file is damaged; restore it from a backup.") from e
    return tables.conform(t, sub)


READ_BATCH_ROWS = 1024   # rows decoded at a time by `read_rows`


def read_rows(path, index, rows, schema, columns=None, batch_rows=READ_BATCH_ROWS):
    """(table, rows decoded): the rows at positions `rows` (sorted, distinct) of row group
    `index` of `path`, in that order, conformed to `schema` restricted to `columns`; a
    position past the row group's end gives no row.

    The row group is decoded `batch_rows` at a time and only the wanted rows are kept, up
    to the last of them: a read of a few rows never holds the whole row group. (Content-
    seen's near hits in a 45 207-page bench150k round were at most 1 010 rows of a 16 384-row
    visited row group, whose minhash column alone is ~8 MB decoded: read whole, its near
    columns peaked at 25 MB of Arrow memory, against 4.4 MB in batches of 1 024.)"""
    sub = _subschema(schema, columns)
    rows = np.asarray(rows, dtype=np.int64)
    try:
        with open_parquet(path, buffer_size=1 << 20) as pf:
            cols = _read_columns(sub, None, pf.schema_arrow)
            rows = rows[rows < pf.metadata.row_group(index).num_rows]
            parts, start = [], 0
            if len(rows):
                for batch in pf.iter_batches(batch_size=batch_rows, row_groups=[index], columns=cols,
                                             use_threads=False):
                    lo, hi = np.searchsorted(rows, [start, start + batch.num_rows])
                    if hi > lo:
                        parts.append(batch.take(pa.array(rows[lo:hi] - start)))
                    start += batch.num_rows
                    if hi == len(rows):
                        break
            t = (pa.Table.from_batches(parts) if parts
                 else pa.schema([pf.schema_arrow.field(c) for c in cols]).empty_table())
    except Exception as e:
        raise ParquetReadError(f"{path}: cannot read row group {index} ({type(e).__name__}: {e}). "
                               f"The file is damaged; restore it from a backup.") from e
    return tables.conform(t, sub), start


def read_row_groups(path, schema):
    """Yield (path, row_group, table of `schema`) for each non-empty row group of `path`.

    For a DoFn that reads files itself, so that wide or many tables never become
    elements between stages.
    """
    try:
        with open_parquet(path) as pf:
            cols = _read_columns(schema, None, pf.schema_arrow)
            for i in range(pf.num_row_groups):
                t = tables.conform(pf.read_row_group(i, columns=cols), schema)
                if t.num_rows:
                    yield path, i, t
    except Exception as e:
        raise ParquetReadError(f"{path}: cannot read this Parquet file ({type(e).__name__}: "
                               f"{e}). It is missing or damaged; restore it from a backup.") from e

def read_view(files, schema, columns=None) -> pa.Table:
    """The rows of all `files` as one Arrow table of `schema` (restricted to `columns`):
    for reports, notebooks, tests and the whole-frontier scorer."""
    sub = _subschema(schema, columns)
    parts = []
    for path in files:
        with open_parquet(path) as pf:
            t = pf.read(columns=_read_columns(sub, None, pf.schema_arrow))
        parts.append(tables.conform(t, sub))
    return pa.concat_tables(parts) if parts else sub.empty_table()


class OpenPart:
    """One temporary part file: its handle, Parquet writer and the tables not yet written."""

    def __init__(self, path, handle, writer):
        self.path, self.handle, self.writer, self.pending, self.rows, self.written = path, handle, writer, [], 0, 0


def part_path(prefix, name):
    """A table part's object: `prefix`-`name`.parquet, under its final name from the start.
    Nothing is ever renamed (a rename on object storage is a copy and a delete, not atomic):
    a part counts once a round's manifest lists it (`pipelines.crawldir`)."""
    return f"{prefix}-{name}.parquet"


def list_tree(path):
    """Every file (object) under the folder `path`, at any depth: [] when there is none.
    On object storage a folder is only a prefix of object names: listing is the only way
    to find what lies under it."""
    pattern = path.rstrip("/") + "/**"
    try:
        return [m.path for m in FileSystems.match([pattern])[0].metadata_list]
    except Exception:   # BeamIOError when nothing matches on some filesystems
        return []


def delete_tree(path) -> bool:
    """Delete the folder `path` and everything under it; True if there was anything.
    Object by object from a listing: Beam's S3 `delete` of a folder without a trailing
    slash deletes nothing (Beam 2.77), and no filesystem is asked to delete a prefix."""
    files = list_tree(path)
    if files:
        FileSystems.delete(files)
    if FileSystems.get_scheme(path) is None and FileSystems.exists(path):
        FileSystems.delete([path])   # the (now empty) local folders
        return True
    return bool(files)
