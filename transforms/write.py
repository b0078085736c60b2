"""Writing crawl tables and round statistics."""
import json

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import WriteToParquetBatched

from schemas import tables

PARQUET_CODEC = "zstd"


class RowsToTables(beam.PTransform):
    """Row dicts -> Arrow tables of `schema` (one per batch of rows)."""

    def __init__(self, schema, max_batch=5000):
        super().__init__()
        self.schema, self.max_batch = schema, max_batch

    def expand(self, rows):
        schema = self.schema
        return (rows
                | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=self.max_batch)
                | "ToTable" >> beam.Map(lambda batch: pa.Table.from_pylist(batch, schema=schema)))


class WriteTable(beam.PTransform):
    """Arrow tables -> Parquet shards under `prefix` (prefix-SSSSS-of-NNNNN.parquet)."""

    def __init__(self, prefix, schema):
        super().__init__()
        self.prefix, self.schema = prefix, schema

    def expand(self, batches):
        schema = self.schema
        return (batches
                | "Conform" >> beam.Map(lambda t: tables.conform(t, schema))
                | "NonEmpty" >> beam.Filter(lambda t: t.num_rows > 0)
                | "Parquet" >> WriteToParquetBatched(self.prefix, schema=schema, codec=PARQUET_CODEC,
                                                      file_name_suffix=".parquet"))


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
                | "Sum" >> beam.CombineGlobally(sum_dicts)
                | "Write" >> beam.ParDo(_WriteJson(self.path)))
