"""URL-seen as a Beam step (see `merge` for the join's rules and `buckets` for the shuffle)."""

import time

import apache_beam as beam
import numpy as np
import pyarrow as pa

from schemas.tables import FP_ONLY
from transforms.tableio.files import read_row_groups
from transforms.urls.fpsets import FpIndex, sorted_unique
from transforms.urlseen.buckets import _np, _split_fps, _split_packed, unpack
from transforms.urlseen.merge import merge_bucket


class _SortedFps(beam.CombineFn):
    """int64 arrays -> one sorted array of distinct values (the semi-join probe set)."""

    def create_accumulator(self):
        return []

    def add_input(self, acc, arr):
        acc.append(np.asarray(arr, dtype=np.int64))
        return acc

    def merge_accumulators(self, accs):
        parts = [a for acc in accs for a in acc]
        return [sorted_unique(np.concatenate(parts))] if parts else []

    def extract_output(self, acc):
        return sorted_unique(np.concatenate(acc)) if acc else np.zeros(0, np.int64)


class _ProbeSeen(beam.DoFn):
    """Seen side -> the fps in it that this round asks about (the probe set).

    Elements are Parquet file paths (read here, fp column only, row group by row group,
    so the seen tables never cross a stage boundary: the in-process runner would pickle
    them all) or Arrow tables with an `fp` column. The probe's FpIndex is built once, not
    per element: runners may hand each call a fresh copy of the side input, so the cached
    index is kept while the values are equal.
    """

    def setup(self):
        self._index = None

    def process(self, element, probe):
        if len(probe) == 0:
            return
        if self._index is None or not np.array_equal(self._index.values, probe):
            self._index = FpIndex(probe)
        if isinstance(element, str):   # one output per file, not per row group
            hits = [self._hits(t) for _, _, t in read_row_groups(element, FP_ONLY)]
        else:
            hits = [self._hits(element)] if element is not None else []
        hits = [h for h in hits if len(h)]
        if hits:
            yield np.concatenate(hits) if len(hits) > 1 else hits[0]

    def _hits(self, table):
        fps = np.asarray(table.column("fp").to_numpy(zero_copy_only=False), dtype=np.int64)
        return fps[self._index.contains(fps)]

class _MergeBucket(beam.DoFn):
    def __init__(self, round_no, score_fn):
        self.round_no, self.score_fn = round_no, score_fn

    def process(self, element):
        started = time.perf_counter()
        bucket, g = element
        frontier, filtered, stats = merge_bucket(
            [unpack(x) for x in g["frontier"]], g["seen"], [unpack(x) for x in g["results"]],
            [unpack(x) for x in g["candidates"]], [unpack(x) for x in g["filtered"]],
            self.round_no)
        if self.score_fn is not None and frontier.num_rows:
            scores = np.asarray(self.score_fn(frontier), dtype=np.float64)
            frontier = frontier.set_column(frontier.schema.get_field_index("score"), "score",
                                           pa.array(scores))
        stats["seconds_urlseen"] = time.perf_counter() - started
        if frontier.num_rows:
            yield frontier
        if filtered.num_rows:
            yield beam.pvalue.TaggedOutput("filtered", filtered)
        yield beam.pvalue.TaggedOutput("stats", stats)


class UrlSeen(beam.PTransform):
    """CoGroupByKey of frontier, seen hits, results and candidates on fingerprint buckets.

    Input: a dict of PCollections: frontier (FRONTIER tables), seen (the visited and
    filtered views: their Parquet file paths, or tables with an `fp` column), results
    (RESULTS), candidates (CANDIDATES), filtered (FILTERED_CANDIDATES). Output: a dict
    with `frontier` and `filtered` tables and `stats` dicts. `score_fn(frontier_table) ->
    scores` scores each bucket when the strategy needs no global graph; otherwise the
    caller scores the whole frontier after.

    The seen side (the tables that grow with the crawl) enters the join only as hits:
    each seen file is probed map-side against the fps this round asks about (candidates
    and filtered URLs: a side input the size of the round), and only the fps found are
    split by bucket and shuffled. So nothing of the size of the crawl is shuffled.
    (Dropping links to seen URLs map-side instead, with the hits as a side input, was
    measured slower: the in-process runner then pickles every candidate table between
    stages, more than the zstd-packed parts cost in the shuffle.)
    """

    def __init__(self, buckets, round_no, score_fn=None):
        super().__init__()
        self.buckets, self.round_no, self.score_fn = buckets, round_no, score_fn

    def expand(self, inputs):
        b = self.buckets
        probe = ((inputs["candidates"] | "CandidateFps" >> beam.Map(
                      lambda t: _np(t.column("dst_fp"))),
                  inputs["filtered"] | "FilteredFps" >> beam.Map(lambda t: _np(t.column("fp"))))
                 | "AskedFps" >> beam.Flatten()
                 | "ProbeSet" >> beam.CombineGlobally(_SortedFps()))
        seen_hits = (inputs["seen"]
                     | "ProbeSeen" >> beam.ParDo(_ProbeSeen(), beam.pvalue.AsSingleton(probe))
                     | "BucketSeenHits" >> beam.FlatMap(_split_fps, b))
        keyed = {
            "frontier": inputs["frontier"] | "BucketFrontier" >> beam.FlatMap(_split_packed, b),
            "seen": seen_hits,
            "results": inputs["results"] | "BucketResults" >> beam.FlatMap(_split_packed, b),
            "candidates": inputs["candidates"] | "BucketCandidates" >> beam.FlatMap(
                _split_packed, b, "dst_fp"),
            "filtered": inputs["filtered"] | "BucketFiltered" >> beam.FlatMap(_split_packed, b),
        }
        out = (keyed | "JoinOnBucket" >> beam.CoGroupByKey()
               | "MergeBucket" >> beam.ParDo(_MergeBucket(self.round_no, self.score_fn))
               .with_output_types(pa.Table).with_outputs("filtered", "stats", main="frontier"))
        return {"frontier": out.frontier, "filtered": out.filtered, "stats": out.stats}
