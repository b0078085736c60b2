"""Layered views: a full snapshot plus deltas, resolved to one consistent table (plain Python).

A table kept as layers (pipelines/crawldir.py LAYERED: the frontier, the hosts) has, as of a round, a
list of layers in round order: layer 0 is the last full snapshot, each later layer a
round's delta: the rows it added or changed (whole rows) and the keys it removed. The view
is, per key, the row of the key's latest event, or nothing when that event is a removal.
A delta never both removes and writes one key.

`DeltaIndex` holds, for every key the deltas mention, the index of the last layer that
does: a row of layer j is in the view exactly when its key is not in the index (only the
base can have such rows) or its last layer is j. It reads only the key column of the
deltas (small: compaction keeps the deltas under a share of the snapshot), so the big
snapshot is filtered row group by row group, never held or shuffled.

A key column is int64 (the frontier's `fp`) or text (the hosts' `host`): a text key is
hashed to 64 bits where it is read (`key_array`), so the files need no extra column.
"""
import numpy as np
import pyarrow as pa

from schemas.tables import ParquetReadError
from strategies.hashing import text_hash64
from transforms.tableio.files import open_parquet, read_row_groups

KEY = "fp"


def key_array(column) -> np.ndarray:
    """A key column's keys as int64: the values of an integer column, 64-bit hashes of a
    text column's (`strategies.hashing.text_hash64`, the same in every process)."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return text_hash64(column.to_pylist()).view(np.int64)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def _keys(path, key=KEY):
    try:
        with open_parquet(path) as pf:
            return key_array(pf.read(columns=[key]).column(key))
    except Exception as e:
        raise ParquetReadError(f"{path}: cannot read this Parquet file ({type(e).__name__}: "
                               f"{e}). It is missing or damaged; restore it from a backup.") from e


class DeltaIndex:
    """Sorted keys the deltas mention and the last layer mentioning each. Picklable."""

    def __init__(self, keys=None, last=None):
        self.keys = np.zeros(0, np.int64) if keys is None else keys
        self.last = np.zeros(0, np.int32) if last is None else last

    @classmethod
    def from_key_arrays(cls, per_layer):
        """per_layer: [(layer index >= 1, key array)] (a delta's rows and its removals)."""
        parts = [(np.asarray(k, np.int64), np.full(len(k), j, np.int32)) for j, k in per_layer if len(k)]
        if not parts:
            return cls()
        keys = np.concatenate([k for k, _ in parts])
        layer = np.concatenate([j for _, j in parts])
        order = np.lexsort((layer, keys))
        keys, layer = keys[order], layer[order]
        last = np.r_[keys[1:] != keys[:-1], True]        # the latest event of each key
        return cls(keys[last], layer[last])

    @classmethod
    def read(cls, layers, key=KEY):
        """layers: [(files, removed files)], layer 0 the snapshot (its files are not read)."""
        return cls.from_key_arrays([(j, _keys(p, key)) for j, (files, removed) in enumerate(layers)
                                    if j for p in list(files) + list(removed)])

    def __len__(self):
        return len(self.keys)

    def keep(self, keys, layer: int) -> np.ndarray:
        """Mask of the rows (their keys) of `layer` that are in the view."""
        keys = np.asarray(keys, np.int64)
        if not len(self.keys):
            return np.ones(len(keys), bool)
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        found = self.keys[pos] == keys
        return ~found | (self.last[pos] == layer)


def layer_key_groups(path, key=KEY):
    """Yield (ParquetFile, row group, key array) of `path`'s row groups (key column only)."""
    try:
        with open_parquet(path) as pf:
            for i in range(pf.num_row_groups):
                yield pf, i, key_array(pf.read_row_group(i, columns=[key]).column(key))
    except ParquetReadError:
        raise
    except Exception as e:
        raise ParquetReadError(f"{path}: cannot read this Parquet file ({type(e).__name__}: "
                               f"{e}). It is missing or damaged; restore it from a backup.") from e


def read_layers(layers, schema, columns=None, index=None, key=KEY):
    """Yield the view of `layers` ([(files, removed files)], snapshot first) one row group
    at a time, as tables of `schema` restricted to `columns` (Parquet reads only those)."""
    index = DeltaIndex.read(layers, key) if index is None else index
    wanted = schema.names if columns is None else list(columns)
    sub = pa.schema([schema.field(c) for c in dict.fromkeys(wanted + [key])])
    for j, (files, _) in enumerate(layers):
        for path in files:
            for _, _, t in read_row_groups(path, sub):
                t = t.filter(pa.array(index.keep(key_array(t.column(key)), j)))
                if t.num_rows:
                    yield t.select(wanted)
