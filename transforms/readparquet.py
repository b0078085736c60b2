"""Reading crawl tables: Parquet files -> Arrow tables, one per row group.

A lean replacement for `ReadAllFromParquetBatched` where a round reads its inputs: one
Create and one DoFn instead of Beam's ~10-transform file-reading composite (construction
and stage planning are a fixed cost every round pays), the table's columns and schema
applied while reading (so a narrow read never builds wide tables), and optionally each
table's position `(path, row_group)`, so a later step can go back for more columns of
only the row groups it needs (`read_row_group`). Files are opened through Beam's
`FileSystems`, so gs://, s3:// and hdfs:// crawl directories work as local ones.
"""
import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas import tables
from transforms.arrowcoder import ArrowTableCoder  # noqa: F401  (registers the pa.Table coder)


def _subschema(schema, columns):
    return schema if columns is None else pa.schema([schema.field(c) for c in columns])


def _read_columns(schema, columns, file_schema):
    """The requested columns this file has (older files may lack a newer column)."""
    wanted = schema.names if columns is None else list(columns)
    return [c for c in wanted if c in file_schema.names]


class ParquetReadError(IOError):
    """A crawl-table file that passed the footer check could not be read."""


def read_row_group(path, index, schema, columns=None) -> pa.Table:
    """Row group `index` of `path`, conformed to `schema` restricted to `columns`."""
    sub = _subschema(schema, columns)
    try:
        with FileSystems.open(path) as f:
            pf = pq.ParquetFile(f)
            t = pf.read_row_group(index, columns=_read_columns(sub, None, pf.schema_arrow))
    except Exception as e:
        raise ParquetReadError(f"{path}: cannot read row group {index} ({type(e).__name__}: {e}). "
                               f"The file is damaged; restore it from a backup.") from e
    return tables.conform(t, sub)


def read_row_groups(path, schema):
    """Yield (path, row_group, table of `schema`) for each non-empty row group of `path`.

    For a DoFn that reads files itself, so that wide or many tables never become
    elements between stages.
    """
    try:
        with FileSystems.open(path) as f:
            pf = pq.ParquetFile(f)
            cols = _read_columns(schema, None, pf.schema_arrow)
            for i in range(pf.num_row_groups):
                t = tables.conform(pf.read_row_group(i, columns=cols), schema)
                if t.num_rows:
                    yield path, i, t
    except Exception as e:
        raise ParquetReadError(f"{path}: cannot read this Parquet file ({type(e).__name__}: "
                               f"{e}). It is missing or damaged; restore it from a backup.") from e


class _ReadRowGroups(beam.DoFn):
    def __init__(self, schema, columns, with_positions):
        self.schema = _subschema(schema, columns)
        self.with_positions = with_positions

    def process(self, path):
        for element in read_row_groups(path, self.schema):
            yield element if self.with_positions else element[2]


class ReadTables(beam.PTransform):
    """`files` (paths known at construction) -> Arrow tables of `schema`[`columns`].

    One element per row group; with `with_positions`, elements are (path, row_group, table).
    No files gives an empty PCollection. `reshuffle` spreads the files over workers (on a
    distributed runner); off by default, where the in-process runner gains nothing from it.
    """

    def __init__(self, files, schema, columns=None, with_positions=False, reshuffle=False):
        super().__init__()
        self.files, self.schema, self.columns = list(files), schema, columns
        self.with_positions, self.reshuffle = with_positions, reshuffle

    def expand(self, pbegin):
        files = pbegin | "Files" >> beam.Create(self.files, reshuffle=self.reshuffle)
        element = (beam.typehints.Tuple[str, int, pa.Table] if self.with_positions else pa.Table)
        return files | "ReadRowGroups" >> beam.ParDo(
            _ReadRowGroups(self.schema, self.columns, self.with_positions)).with_output_types(element)
