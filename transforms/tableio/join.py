"""CoGroupByKey whose Arrow tables cross the shuffle as Arrow IPC (Beam wiring only).

Beam's `CoGroupByKey` tags its inputs with untyped Maps, so every Arrow table in it went
through the pickle fallback of `FastPrimitivesCoder` at the shuffle, and was pickled once
more each time Beam sampled an element's size: in a 5 000-page round the fetch list's join
with the host states made ~950 pickles of its ~430 tables. `JoinTables` tags them typed, so
they go through `coder.ArrowTableCoder`, whose size estimate is the table's byte count.
"""
import apache_beam as beam
import pyarrow as pa
from apache_beam.typehints import Any, Optional, Tuple

from transforms.tableio import coder  # noqa: F401 - registers ArrowTableCoder for pa.Table

# (key, (input index, the table of a table input, the value of any other input))
_TAGGED = Tuple[str, Tuple[int, Optional[pa.Table], Any]]


class JoinTables(beam.PTransform):
    """{tag: PCollection of (str key, value)} -> (key, {tag: [values]}), as CoGroupByKey;
    the inputs named in `table_tags` hold Arrow tables."""

    def __init__(self, table_tags):
        super().__init__()
        self.table_tags = frozenset(table_tags)

    def expand(self, inputs):
        tags = list(inputs)
        tagged = []
        for i, tag in enumerate(tags):
            if tag in self.table_tags:
                fn = lambda kv, i=i: (kv[0], (i, kv[1], None))   # noqa: E731
            else:
                fn = lambda kv, i=i: (kv[0], (i, None, kv[1]))   # noqa: E731
            tagged.append(inputs[tag] | f"Tag[{tag}]" >> beam.Map(fn).with_output_types(_TAGGED))
        return (tagged | "Flatten" >> beam.Flatten() | "Group" >> beam.GroupByKey()
                | "Collect" >> beam.Map(_collect, tags, [t in self.table_tags for t in tags]))


def _collect(grouped, tags, is_table):
    key, values = grouped
    out = {tag: [] for tag in tags}
    for i, table, value in values:
        out[tags[i]].append(table if is_table[i] else value)
    return key, out
