"""Reading crawl tables: Parquet files -> Arrow tables, one per row group.

A lean replacement for `ReadAllFromParquetBatched` where a round reads its inputs: one
Create and one DoFn instead of Beam's ~10-transform file-reading composite (construction
and stage planning are a fixed cost every round pays), the table's columns and schema
applied while reading (so a narrow read never builds wide tables), and optionally each
table's position `(path, row_group)`, so a later step can go back for more columns of
only the row groups it needs (`read_row_group`). Files are opened through Beam's
`FileSystems`, so gs://, s3:// and hdfs:// crawl directories work as local ones.

Writing: `WriteTable` writes Arrow tables as Parquet parts under their final names (one
per bundle, small upstream tables buffered into large row groups) and `CommitTables` lists
the parts of the bundles that completed, every table's in one listing object that the
round's commit turns into its manifest (pipelines/crawldir.py: no part is ever renamed);
`WriteStats` sums the round's counter dicts into one JSON file.
Tables cross stages as Arrow IPC (`coder.ArrowTableCoder`, registered on import).
"""

import json
import posixpath
import time
import uuid

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas import tables
from transforms.tableio import spill
from transforms.tableio import coder  # noqa: F401 - registers ArrowTableCoder for pa.Table
from transforms.tableio.dictionary import dictionary_columns
from transforms import faults
from transforms.tableio.files import OpenPart, _subschema, part_path, read_row_groups
from transforms.tableio.globalwindow import in_global_window
from transforms.tableio.layers import DeltaIndex, layer_key_groups
from transforms.tableio.sideinput import CombinedValue


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

class ViewSpec:
    """A layered table's view to read (transforms.tableio.layers): its layers [(files,
    removed files)], schema and key. The reading DoFn reads the deltas' DeltaIndex in `setup`:
    Beam bz2-compresses a DoFn per translation, and the index can hold millions of keys."""

    def __init__(self, layers, schema, key="fp"):
        self.layers, self.schema, self.key = [(list(f), list(r)) for f, r in layers], schema, key

    def files(self):
        return [(path, j) for j, (files, _) in enumerate(self.layers) for path in files]


class _ReadLayer(beam.DoFn):
    """(path, layer) -> the row groups' rows in the view; with a side input of sorted keys,
    only the rows whose key is in it (`keep` "in") or not in it ("out"). The key column is
    read first: a row group with no row to keep is not read further."""

    def __init__(self, spec, columns, keep):
        self.layers, self.key, self.keep = spec.layers, spec.key, keep
        self.schema = _subschema(spec.schema, columns)

    def setup(self):
        self.index = DeltaIndex.read(self.layers, self.key)

    def process(self, element, keys=None):
        path, layer = element
        names = self.schema.names
        if keys is None and not len(self.index):   # a snapshot alone: every row, one read
            for _, _, t in read_row_groups(path, self.schema):
                yield t
            return
        for pf, i, k in layer_key_groups(path, self.key):
            mask = self.index.keep(k, layer)
            if keys is not None:
                pos = np.minimum(np.searchsorted(keys, k), max(len(keys) - 1, 0))
                found = (keys[pos] == k) if len(keys) else np.zeros(len(k), bool)
                mask &= found if self.keep == "in" else ~found
            if mask.any():
                cols = [c for c in names if c in pf.schema_arrow.names]
                t = tables.conform(pf.read_row_group(i, columns=cols), self.schema)
                yield t if mask.all() else t.filter(pa.array(mask))


class ReadView(beam.PTransform):
    """A layered table's consistent view (`ViewSpec`) -> Arrow tables of `columns`.

    `keys` (a side input of sorted int64 keys, e.g. `sideinput.combined_side_input`) and
    `keep` ("in"/"out") restrict it to the rows whose key is / is not in that set, e.g. the
    frontier rows a round touches.
    """

    def __init__(self, spec, columns=None, keys=None, keep="in", reshuffle=False):
        super().__init__()
        self.spec, self.columns, self.keys, self.keep, self.reshuffle = spec, columns, keys, keep, reshuffle

    def expand(self, pbegin):
        files = pbegin | "LayerFiles" >> beam.Create(self.spec.files(), reshuffle=self.reshuffle)
        side = [] if self.keys is None else [self.keys]
        return files | "ReadLayer" >> beam.ParDo(
            _ReadLayer(self.spec, self.columns, self.keep), *side).with_output_types(pa.Table)


PARQUET_CODEC = "zstd"
ROW_GROUP_ROWS = 64 * 1024
WRITE_METRIC = ("beamcrawl", "write_micros")   # µs encoding+writing tables: the report's "write"


class RowsToTables(beam.PTransform):
    """Row dicts -> Arrow tables of `schema` (one per batch of rows)."""

    def __init__(self, schema, max_batch=5000):
        super().__init__()
        self.schema, self.max_batch = schema, max_batch

    def expand(self, rows):
        schema = self.schema
        return (rows
                | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=self.max_batch)
                | "ToTable" >> beam.Map(lambda batch: pa.Table.from_pylist(batch, schema=schema))
                .with_output_types(pa.Table))


class _WriteParts(beam.DoFn):
    """Arrow tables -> one Parquet part per bundle, in row groups of about `row_group_rows`
    rows; yields (prefix, part path, rows) when the bundle ends.

    Upstream tables are often small (a URL-seen bucket, a batch of pages); written one row
    group each they would make files slow to read and badly compressed, so tables are
    buffered up to a row group. Only parts of bundles that completed reach `CommitTables`,
    so a failed or retried bundle's part is never listed: it lies unread beside the table
    until the round's commit sweeps it away.
    """

    def __init__(self, prefix, schema, codec, row_group_rows):
        self.prefix, self.schema, self.codec, self.row_group_rows = prefix, schema, codec, row_group_rows

    def setup(self):
        self._micros = Metrics.distribution(*WRITE_METRIC)
        self._dictionary = dictionary_columns(self.schema)

    def start_bundle(self):
        self._part = None

    def _flush(self, f, final=False):
        """Write the pending rows in whole row groups (all of them when `final`)."""
        if not f.pending:
            return
        started = time.perf_counter()
        t = pa.concat_tables(f.pending) if len(f.pending) > 1 else f.pending[0]
        n = t.num_rows if final else t.num_rows - t.num_rows % self.row_group_rows
        if n:
            f.writer.write_table(t.slice(0, n), row_group_size=self.row_group_rows)
            f.written += n
        rest = t.slice(n)
        f.pending, f.rows = ([rest] if rest.num_rows else []), rest.num_rows
        self._micros.update(int((time.perf_counter() - started) * 1e6))

    def process(self, table):
        table = tables.conform(table, self.schema)
        if table.num_rows == 0:
            return
        if self._part is None:
            path = part_path(self.prefix, uuid.uuid4().hex)
            handle = FileSystems.create(path, mime_type="application/x-parquet",
                                        compression_type=CompressionTypes.UNCOMPRESSED)
            self._part = OpenPart(path, handle, pq.ParquetWriter(
                handle, self.schema, compression=self.codec, use_dictionary=self._dictionary))
        f = self._part
        f.pending.append(table)
        f.rows += table.num_rows
        if f.rows >= self.row_group_rows:
            self._flush(f)

    def finish_bundle(self):
        f, self._part = self._part, None
        if f is None:
            return
        self._flush(f, final=True)
        started = time.perf_counter()
        f.writer.close()
        f.handle.close()
        self._micros.update(int((time.perf_counter() - started) * 1e6))
        faults.crash_point("write_part")   # a part written, its bundle not done (crash tests)
        yield in_global_window((self.prefix, f.path, f.written))


class WriteTable(beam.PTransform):
    """Arrow tables -> Parquet parts `prefix`-<id>.parquet of the table at `prefix`; gives
    the parts as (prefix, path, rows), which `CommitTables` lists."""

    def __init__(self, prefix, schema, row_group_rows=ROW_GROUP_ROWS):
        super().__init__()
        self.prefix, self.schema, self.row_group_rows = prefix, schema, row_group_rows

    def expand(self, batches):
        return batches | "Parts" >> beam.ParDo(_WriteParts(self.prefix, self.schema, PARQUET_CODEC,
                                                           self.row_group_rows))


def table_of(prefix):
    """The table a part prefix belongs to: rounds/N/<table>/<name> -> <table>."""
    return posixpath.basename(posixpath.dirname(prefix))


class _ListParts(beam.DoFn):
    """Every table's parts -> one listing object {table: [part names]}: the parts of the
    bundles that completed, and nothing else. A table without parts gets one empty file, so
    each table the round writes exists. Idempotent: a retried commit writes the same
    listing (and the same empty files)."""

    def __init__(self, schemas, listing, attempt):
        self.schemas, self.listing, self.attempt = dict(schemas), listing, attempt

    def process(self, _, written):
        parts = {prefix: [] for prefix in self.schemas}
        for part in written:
            parts[part[0]].append(part[1])
        listed = {}
        for prefix, paths in sorted(parts.items()):
            if not paths:
                paths = [part_path(prefix, f"empty-{self.attempt}")]
                with FileSystems.create(paths[0], mime_type="application/x-parquet") as f:
                    pq.write_table(self.schemas[prefix].empty_table(), f, compression=PARQUET_CODEC)
            listed.setdefault(table_of(prefix), []).extend(posixpath.basename(p) for p in sorted(paths))
        with FileSystems.create(self.listing, mime_type="application/json") as f:
            f.write(json.dumps(listed, indent=1, sort_keys=True).encode("utf-8"))
        yield self.listing


class CommitTables(beam.PTransform):
    """The round's written parts (`WriteTable` outputs, flattened) -> one listing object at
    `listing` naming every table's parts (the round's commit reads it: pipelines/crawldir.py),
    in one step for all tables: Beam's file sink costs four stages per table, a fixed cost
    every round pays (issue #12: start-up + commit of a small round). `schemas`: {prefix:
    schema} of every table written, so a table that got no rows still gets its (empty) file;
    `attempt` names that file, so a rerun of the round never lists an older run's. The parts
    come as a side input of a one-element step: it runs once every write has finished, with
    no shuffle stage before it."""

    def __init__(self, schemas, listing, attempt):
        super().__init__()
        self.schemas, self.listing, self.attempt = dict(schemas), listing, attempt

    def expand(self, parts):
        return (parts.pipeline | "Once" >> beam.Create([None], reshuffle=False)
                | "List" >> beam.ParDo(_ListParts(self.schemas, self.listing, self.attempt),
                                       beam.pvalue.AsList(parts)))


def sum_dicts(dicts):
    out = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


class _WriteJson(beam.DoFn):
    def __init__(self, path):
        self.path = path

    def process(self, obj):
        with FileSystems.create(self.path) as f:
            f.write(json.dumps(obj, indent=2, sort_keys=True).encode("utf-8"))
        yield self.path


class WriteStats(beam.PTransform):
    """Sum counter dicts and write them as one JSON file (idempotent if a bundle is retried)."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def expand(self, stats):
        return (stats
                | "Sum" >> CombinedValue(sum_dicts)
                | "Write" >> beam.ParDo(_WriteJson(self.path)))


SPILL_LIMIT = ("spill_limit", "file_bytes")   # Beam distribution: each spill file's size limit


class _SpillToFiles(beam.DoFn):
    """Elements -> paths of spill files holding them (at most ~`chunk_bytes` pickled each),
    each written as its elements come (spill.SpillWriter), so memory holds no file's worth."""

    def __init__(self, directory, chunk_bytes):
        self.directory, self.chunk_bytes = directory.rstrip("/"), max(1, int(chunk_bytes))

    def setup(self):
        self._files, self._bytes = Metrics.counter("spill", "files"), Metrics.counter("spill", "bytes")
        # the size each file may reach (its max is the report's spill.file_limit_bytes): shows
        # that --memory_mb reached the writers, which the small web's rounds never fill
        self._limit = Metrics.distribution(SPILL_LIMIT[0], SPILL_LIMIT[1])
        self._writer = None

    def start_bundle(self):
        self._abort()   # a file a failed bundle left open: never read, deleted with the spill dir

    def _close(self):
        w, self._writer = self._writer, None
        self._bytes.inc(w.close())
        self._files.inc()
        self._limit.update(self.chunk_bytes)
        return w.path

    def _abort(self):
        w, self._writer = self._writer, None
        if w is not None:
            w.abort()

    def process(self, element):
        if self._writer is None:
            self._writer = spill.SpillWriter(f"{self.directory}/{uuid.uuid4().hex}.spill")
        if self._writer.add(element) >= self.chunk_bytes:
            yield self._close()

    def finish_bundle(self):
        if self._writer is not None:
            yield in_global_window(self._close())

    def teardown(self):
        self._abort()


class SpillToFiles(beam.PTransform):
    """Elements -> paths of spill files holding them (tableio.spill), written as they come
    in the producing stage; at most ~`chunk_bytes` of pickled elements per file."""

    def __init__(self, directory, chunk_bytes):
        super().__init__()
        self.directory, self.chunk_bytes = directory, chunk_bytes

    def expand(self, pcoll):
        return pcoll | "ToFiles" >> beam.ParDo(_SpillToFiles(self.directory, self.chunk_bytes))


class ReadSpilled(beam.PTransform):
    """Spill file paths -> their elements, read one file at a time in the next stage (the
    Reshuffle makes the stage boundary; only the paths wait in the runner's memory)."""

    def expand(self, paths):
        return paths | "Paths" >> beam.Reshuffle() | "FromFiles" >> beam.FlatMap(spill.read_spill)


class Spill(beam.PTransform):
    """A PCollection through spill files: `SpillToFiles` then `ReadSpilled`. Same elements
    out (order not kept); memory holds one file's worth, not the whole PCollection. (On the
    in-process runner a Flatten between the producer and this step would hold the elements
    in memory first: spill each input of a Flatten and flatten the paths.)"""

    def __init__(self, directory, chunk_bytes):
        super().__init__()
        self.directory, self.chunk_bytes = directory, chunk_bytes

    def expand(self, pcoll):
        return (pcoll | "Write" >> SpillToFiles(self.directory, self.chunk_bytes)
                | "Read" >> ReadSpilled())
