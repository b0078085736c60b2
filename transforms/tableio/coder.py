"""How Arrow tables cross Beam stages: as Arrow IPC bytes (`ArrowTableCoder`), registered
for `pa.Table` on import, so a PCollection declared `pa.Table` (or `HostTable`) uses it.

Without it a table goes through Beam's fallback, pickle; and as Beam samples elements'
sizes, a sampled element is then pickled once more just to be measured. This coder's size
estimate is the table's byte count."""
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

# A host and its rows (a fetch list's element), typed so its table crosses shuffles as IPC
HostTable = beam.typehints.Tuple[str, pa.Table]
