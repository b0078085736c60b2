"""Fingerprint buckets: split tables by `fp mod B`, pack parts for the shuffle (pure)."""


import numpy as np
import pyarrow as pa

from schemas import tables
from transforms.urls.fpsets import member


def bucket_of(fps: np.ndarray, buckets: int) -> np.ndarray:
    return (fps.astype(np.int64).view(np.uint64) % np.uint64(buckets)).astype(np.int64)


def _bucket_runs(fps: np.ndarray, buckets: int):
    """(order that groups fps by bucket, [(bucket, start, end)] runs in that order)."""
    b = bucket_of(fps, buckets)
    order = np.argsort(b, kind="stable")
    sorted_b = b[order]
    starts = np.flatnonzero(np.r_[True, sorted_b[1:] != sorted_b[:-1]])
    ends = np.r_[starts[1:], len(order)]
    return order, [(int(sorted_b[s]), s, e) for s, e in zip(starts.tolist(), ends.tolist())]


def split_by_bucket(table: pa.Table, buckets: int, fp_column: str = "fp"):
    """Yield (bucket, rows of table in that bucket) for each non-empty bucket.

    Each part is its own compact table (a slice would pickle its whole parent's buffers).
    """
    if table is None or table.num_rows == 0:
        return
    if buckets == 1:
        yield 0, table
        return
    order, runs = _bucket_runs(_np(table.column(fp_column)), buckets)
    for k, s, e in runs:
        yield k, table.take(pa.array(order[s:e], type=pa.int64()))


def _concat(parts, schema):
    parts = [tables.conform(p, schema) for p in parts if p is not None and p.num_rows]
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _isin(values, other) -> np.ndarray:
    return member(values, np.sort(np.asarray(other, dtype=np.int64)))


def _np(col, fill=None):
    if fill is not None:
        col = col.fill_null(fill)
    return col.to_numpy(zero_copy_only=False)

def pack(table: pa.Table) -> bytes:
    """A table as zstd-compressed Arrow IPC bytes: what crosses the shuffle.

    URL-heavy tables shrink ~3x, and the runner's data plane (a Python byte copy per hop
    on the FnApiRunner) costs per byte; compression runs in Arrow's C++ code.
    """
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema,
                           options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def unpack(data) -> pa.Table:
    """The table `pack` made (a table passes through unchanged)."""
    if isinstance(data, pa.Table):
        return data
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()

def _split_fps(fps, buckets):
    """(bucket, fps of that bucket) for an int64 array of fingerprints."""
    order, runs = _bucket_runs(fps, buckets)
    fps = fps[order]
    for k, s, e in runs:
        yield k, fps[s:e]


def split_sliced(table, buckets, fp_column="fp"):
    """split_by_bucket as slices of one take into bucket order: for consumers that copy
    each part at once (`pack`, a table file: Arrow IPC writes only a slice's own rows);
    a slice kept or pickled would carry its whole parent's buffers."""
    if table is None or table.num_rows == 0:
        return
    order, runs = _bucket_runs(_np(table.column(fp_column)), buckets)
    table = table.take(pa.array(order, type=pa.int64()))
    for k, s, e in runs:
        yield k, table.slice(s, e - s)


def _split_packed(table, buckets, fp_column="fp"):
    """split_by_bucket, each part packed for the shuffle."""
    for k, part in split_sliced(table, buckets, fp_column):
        yield k, pack(part)
