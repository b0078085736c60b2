"""Keyed Arrow tables kept in table files, read back one table at a time by reference.

The fetch list ((host, table of its URLs), one element per host) used to cross the join with
the hosts' state in the in-process runner's memory: encoded in the join's buffer, copied again
into the fetch stage's input, and decoded there whole before the first host was fetched
(~0.6 KB a URL each copy: `benchmarks/runner_buffers.py` and tracemalloc at 16 000 URLs,
9.8 MB in the buffer and 10 060 KB in the copy). `KeyedTablesToFiles` writes each table into an Arrow IPC file under
the round's spill directory as it comes and passes on `(key, TableRef)`, a few dozen bytes;
the fetch step reads a host's table (`TableFiles.read`) only when its host is sent to be
fetched. A ref goes out only once its file is closed, so nothing reads a file being written.
Tables with no rows pass as they are. All I/O goes through Beam's FileSystems (a local
file is read by Arrow itself: `files.arrow_source`). URL-seen's bucket parts take the same
way through its shuffle (`split`: the writing step cuts each table into its buckets' parts).

IPC files rather than the spill files' pickle stream: hosts are fetched longest first, not in
file order, and an IPC file reads any batch directly (a cached reader: ~21 us a 30-row batch,
against ~180 us to open the file for each; uncompressed: LZ4 cost ~110 us more a batch).
"""
from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from transforms.tableio.files import arrow_source
from transforms.tableio.globalwindow import in_global_window



@dataclass(frozen=True)
class TableRef:
    """Where a table lies: its file and batches; `len` is its row count (what jobs sort by)."""

    path: str
    first: int
    count: int
    num_rows: int

    def __len__(self):
        return self.num_rows


class TableFiles:
    """Reads tables by `TableRef`, one open reader per file (thread-safe; `close` at the end)."""

    def __init__(self):
        self._lock, self._open = threading.Lock(), {}

    def read(self, ref: TableRef) -> pa.Table:
        with self._lock:
            if ref.path not in self._open:
                handle = arrow_source(ref.path)
                self._open[ref.path] = (handle, pa.ipc.open_file(handle))
            reader = self._open[ref.path][1]
            return pa.Table.from_batches([reader.get_batch(i) for i in range(ref.first, ref.first + ref.count)],
                                         schema=reader.schema)

    def close(self):
        with self._lock:
            opened, self._open = self._open, {}
        for handle, _ in opened.values():
            handle.close()


class Stored:
    """A table in a table file as a job carries it: `len` rows, `load()` when it is fetched."""

    __slots__ = ("ref", "files")

    def __init__(self, ref: TableRef, files: TableFiles):
        self.ref, self.files = ref, files

    def __len__(self):
        return len(self.ref)

    def load(self) -> pa.Table:
        return self.files.read(self.ref)


class _TableFileWriter:
    """One IPC file being written; `add` returns the ref of the table it wrote."""

    def __init__(self, path: str, schema: pa.Schema):
        self.path, self.schema, self.bytes, self.batches = path, schema, 0, 0
        self._handle = FileSystems.create(path)
        self._writer = pa.ipc.new_file(self._handle, schema)

    def add(self, table: pa.Table) -> TableRef:
        first = self.batches
        for batch in table.to_batches():
            self._writer.write_batch(batch)
            self.batches += 1
            self.bytes += batch.nbytes
        return TableRef(self.path, first, self.batches - first, table.num_rows)

    def close(self):
        self._writer.close()
        self._handle.close()

    def abort(self):
        try:
            self.close()
        except Exception:   # noqa: BLE001 - an unfinished file is never read (its refs never left)
            pass


class _KeyedTablesToFiles(beam.DoFn):
    def __init__(self, directory: str, chunk_bytes: int, split=None):
        self.directory, self.chunk_bytes = directory.rstrip("/"), max(1, int(chunk_bytes))
        self.split = split

    def setup(self):
        self._files = Metrics.counter("tablefiles", "files")
        self._writer, self._pending = None, []

    def start_bundle(self):
        self._abort()

    def process(self, element):
        for key, table in ([element] if self.split is None else self.split(element)):
            yield from self._add(key, table)

    def _add(self, key, table):
        if table.num_rows == 0:
            yield key, table
            return
        if self._writer is not None and not self._writer.schema.equals(table.schema):
            yield from self._close()   # one schema per file
        if self._writer is None:
            self._writer = _TableFileWriter(f"{self.directory}/{uuid.uuid4().hex}.arrow", table.schema)
        self._pending.append((key, self._writer.add(table)))
        if self._writer.bytes >= self.chunk_bytes:
            yield from self._close()

    def _close(self):
        writer, pending = self._writer, self._pending
        self._writer, self._pending = None, []
        writer.close()
        self._files.inc()
        return pending

    def finish_bundle(self):
        if self._writer is not None:
            for kv in self._close():
                yield in_global_window(kv)

    def _abort(self):
        writer, self._writer, self._pending = getattr(self, "_writer", None), None, []
        if writer is not None:
            writer.abort()

    def teardown(self):
        self._abort()


class KeyedTablesToFiles(beam.PTransform):
    """(key, table) -> (key, TableRef) of the table written to an IPC file under `directory`
    (at most ~`chunk_bytes` of tables a file); tables with no rows pass as they are.

    `split(element) -> [(key, table)]`: elements are cut into keyed tables by the writing
    step itself, so parts that are slices of one table (which would pickle with all of its
    buffers) never cross a step boundary."""

    def __init__(self, directory: str, chunk_bytes: int, split=None):
        super().__init__()
        self.directory, self.chunk_bytes, self.split = directory, chunk_bytes, split

    def expand(self, pcoll):
        return pcoll | "ToFiles" >> beam.ParDo(_KeyedTablesToFiles(self.directory, self.chunk_bytes, self.split))
