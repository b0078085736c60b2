"""Generate as a Beam step: a combine over the frontier's row groups (see `select`)."""

import apache_beam as beam
import pyarrow as pa

from transforms.generate.select import (READ_COLUMNS, due_mask, fetch_list_rows, merge_fetch_list,
                                        select, split_by_host)
from transforms.tableio.coder import HostTable
from transforms.tableio.gather import GatherAll


class SelectCombineFn(beam.CombineFn):
    """Combines frontier batches into the fetch list (accumulator: candidate table or None)."""

    def __init__(self, now, max_pages, max_per_host, max_depth):
        self.now, self.max_pages, self.max_per_host, self.max_depth = now, max_pages, max_per_host, max_depth

    def create_accumulator(self):
        return None

    def _merge(self, tables):
        tables = [t for t in tables if t is not None and t.num_rows]
        if not tables:
            return None
        merged = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="default")
        return select(merged, self.max_pages, self.max_per_host)

    def add_input(self, acc, batch):
        eligible = fetch_list_rows(batch.filter(pa.array(due_mask(batch, self.now, self.max_depth))))
        return self._merge([acc, eligible])

    def merge_accumulators(self, accs):
        return self._merge(list(accs))

    def extract_output(self, acc):
        return acc

class Generate(beam.PTransform):
    """Frontier batches -> one (host, Arrow table of its URLs) element per host to fetch.

    A host's URLs arrive as one element, so one `process()` call owns the host: the
    politeness unit of GroupByKey(host), produced here directly by the global selection.
    With `spread` (a runner with several workers) the hosts are reshuffled, so the fetch
    runs on every worker, not only on the one that made the selection; the in-process
    runner gains nothing from it and would pickle the whole fetch list through one more
    stage boundary. The rows keep only the fetch list's columns (`select.FETCH_LIST_COLUMNS`);
    frontier batches of `READ_COLUMNS` are all it needs.
    """

    READ_COLUMNS = READ_COLUMNS

    def __init__(self, now, max_pages, max_per_host, max_depth=0, revisits=None, spread=True):
        super().__init__()
        self.fn = SelectCombineFn(now, max_pages - (revisits.num_rows if revisits is not None else 0),
                                  max_per_host, max_depth)
        self.revisits, self.max_per_host, self.spread = revisits, max_per_host, spread

    def expand(self, frontier_batches):
        selected = frontier_batches | "SelectTopK" >> beam.CombineGlobally(self.fn).without_defaults()
        if self.revisits is not None:   # incremental: due revisits first, then new URLs
            revisits, cap = self.revisits, self.max_per_host
            selected = (selected | "AllSelected" >> GatherAll()
                        | "WithRevisits" >> beam.Map(lambda ts: merge_fetch_list([revisits] + ts, cap)))
        hosts = selected | "SplitByHost" >> beam.FlatMap(split_by_host).with_output_types(HostTable)
        return hosts | "SpreadHosts" >> beam.Reshuffle() if self.spread else hosts
