"""A Beam coder for Arrow tables, the elements most of a round's PCollections carry.

Without it a table is pickled wherever it crosses a stage boundary, and also wherever the
SDK samples element sizes for its metrics: it encodes the first elements of every
PCollection (then a thinning sample) just to count their bytes, which for our few, large
elements means encoding nearly all of them a second time. This coder writes Arrow IPC
streams and estimates sizes from `Table.nbytes` without encoding anything.

Importing this module registers it for `pa.Table`; PCollections get it where their
element type is declared (`.with_output_types(pa.Table)`), e.g. `readparquet.ReadTables`.
The coder object travels inside the pipeline, so workers need no registration.
"""
import apache_beam as beam
import pyarrow as pa


class ArrowTableCoder(beam.coders.Coder):
    """pa.Table <-> Arrow IPC stream bytes (schema included, so any table round-trips)."""

    def encode(self, table):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    def decode(self, data):
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()

    def estimate_size(self, table):
        return table.nbytes

    def is_deterministic(self):
        return False

    def to_type_hint(self):
        return pa.Table

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


beam.coders.registry.register_coder(pa.Table, ArrowTableCoder)
