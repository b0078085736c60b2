"""URL-seen as a Beam step (see `merge` for the join's rules and `buckets` for the shuffle),
and `ReadmitRefused`, the re-read of stale refusals in a round whose settings changed
(see `readmit`)."""

import functools
import time

import apache_beam as beam
import numpy as np
import pyarrow as pa

from schemas import tables
from schemas.tables import FP_ONLY, ParquetReadError
from transforms.tableio.files import open_parquet, read_row_groups
from transforms.tableio.sideinput import CombinedView, accumulate, combine_fn, combined_side_input
from transforms.tableio.step import ReadView
from transforms.tableio.tablefiles import KeyedTablesToFiles, TableFiles, TableRef
from transforms.urls.fpsets import FpIndex, member, sorted_union, sorted_unique
from transforms.urlseen.buckets import _np, _split_fps, _split_packed, split_sliced, unpack
from transforms.urlseen.merge import FILTERED, HARD, REFUSED, merge_bucket
from transforms.urlseen.readmit import COLUMNS as READMIT_COLUMNS
from transforms.urlseen.readmit import readmission, stale_mask

_REFUSED_BY = pa.schema([("refused_by", pa.string())])


def _row_groups(path, schema):
    """(ParquetFile, its column names) opened with `open_parquet`; yields per row group
    (index, table of `schema`'s columns the file has, conformed)."""
    try:
        with open_parquet(path) as pf:
            names = pf.schema_arrow.names
            for i in range(pf.num_row_groups):
                cols = [c for c in schema.names if c in names]
                yield pf, i, tables.conform(pf.read_row_group(i, columns=cols), schema)
    except ParquetReadError:
        raise
    except Exception as e:
        raise ParquetReadError(f"{path}: cannot read this Parquet file ({type(e).__name__}: "
                               f"{e}). It is missing or damaged; restore it from a backup.") from e


class _ProbeSeen(beam.DoFn):
    """Seen side -> the fps in it that this round asks about (the probe set), by kind.

    Elements are (table name, Parquet file path) of the visited and filtered views (read
    here, fp column only, row group by row group, so the seen tables never cross a stage
    boundary: the in-process runner would pickle them all; `refused_by` is read only for
    row groups with hits), bare paths, or Arrow tables with an `fp` column (both HARD).
    Yields (kind, fps) per file (merge.SEEN_KINDS); a refusal by settings that are not
    `current` is no hit at all. The probe's FpIndex is built once, not per element:
    runners may hand each call a fresh copy of the side input, so the cached index is kept
    while the values are equal.
    """

    def __init__(self, current=()):
        self.current = frozenset(current)

    def setup(self):
        self._index = None

    def process(self, element, probe):
        if len(probe) == 0:
            return
        if self._index is None or not np.array_equal(self._index.values, probe):
            self._index = FpIndex(probe)
        if isinstance(element, tuple):
            yield from self._probe_file(*element)
            return
        if isinstance(element, str):   # one output per file, not per row group
            hits = [self._hits(t) for _, _, t in read_row_groups(element, FP_ONLY)]
        else:
            hits = [self._hits(element)] if element is not None else []
        hits = [h for h in hits if len(h)]
        if hits:
            yield HARD, np.concatenate(hits) if len(hits) > 1 else hits[0]

    def _probe_file(self, table, path):
        by_kind = {HARD: [], REFUSED: [], FILTERED: []}
        for pf, i, t in _row_groups(path, FP_ONLY):
            fps = np.asarray(t.column("fp").to_numpy(zero_copy_only=False), dtype=np.int64)
            hit = self._index.contains(fps)
            if not hit.any():
                continue
            if "refused_by" in pf.schema_arrow.names:
                refused_by = pf.read_row_group(i, columns=["refused_by"]).column("refused_by")
                refused_by = refused_by.filter(pa.array(hit)).combine_chunks()
            else:
                refused_by = pa.nulls(int(hit.sum()), pa.string())
            fps = fps[hit]
            stale = stale_mask(refused_by, self.current)
            if table == "filtered":     # a current (or legacy) scope refusal
                by_kind[FILTERED].append(fps[~stale])
                continue
            refusal = np.asarray(refused_by.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            by_kind[HARD].append(fps[~refusal])
            by_kind[REFUSED].append(fps[refusal & ~stale])
        for kind, parts in by_kind.items():
            parts = [p for p in parts if len(p)]
            if parts:
                yield kind, np.concatenate(parts)

    def _hits(self, table):
        fps = np.asarray(table.column("fp").to_numpy(zero_copy_only=False), dtype=np.int64)
        return fps[self._index.contains(fps)]


def _split_kind_fps(kind_fps, buckets):
    kind, fps = kind_fps
    for bucket, part in _split_fps(fps, buckets):
        yield bucket, (kind, part)


class _MergeBucket(beam.DoFn):
    def __init__(self, round_no, score_fn, signatures=None, delta=False):
        self.round_no, self.score_fn, self.signatures = round_no, score_fn, signatures
        self.delta = delta

    def setup(self):
        self._files = TableFiles()   # parts the shuffle carried as refs to table files

    def _load(self, part):
        return self._files.read(part) if isinstance(part, TableRef) else unpack(part)

    def process(self, element):
        started = time.perf_counter()
        bucket, g = element
        load = self._load
        old = [load(x) for x in g["frontier"]]
        frontier, filtered, stats = merge_bucket(
            old, g["seen"], [load(x) for x in g["results"]],
            [load(x) for x in g["candidates"]], [load(x) for x in g["filtered"]],
            self.round_no, self.signatures)
        stats["frontier_rows_merged"] = sum(t.num_rows for t in old)   # read, shuffled, merged
        if self.delta:   # frontier delta: the touched rows are the bucket's; report what left
            removed = _removed(old, frontier)
            if len(removed):
                yield beam.pvalue.TaggedOutput("removed", pa.table({"fp": pa.array(removed, pa.int64())}))
            stats["frontier_rows_written"] = stats.pop("frontier_rows", 0)
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

    def finish_bundle(self):
        self._files.close()

    def teardown(self):
        self._files.close()


def _removed(old_parts, frontier):
    """The fps of the frontier rows that came in (`old_parts`) and did not come out."""
    old = [_np(t.column("fp")) for t in old_parts if t is not None and t.num_rows]
    if not old:
        return np.zeros(0, np.int64)
    old = sorted_unique(np.concatenate(old))
    return old[~member(old, np.sort(_np(frontier.column("fp")).astype(np.int64)))]


class UrlSeen(beam.PTransform):
    """CoGroupByKey of frontier, seen hits, results and candidates on fingerprint buckets.

    Input: a dict of PCollections: frontier (FRONTIER tables), seen (the visited and
    filtered views: their Parquet file paths, or tables with an `fp` column), results
    (RESULTS), candidates (CANDIDATES), filtered (FILTERED_CANDIDATES). Output: a dict
    with `frontier` and `filtered` tables and `stats` dicts. `score_fn(frontier_table) ->
    scores` scores each bucket when the strategy needs no global graph; otherwise the
    caller scores the whole frontier after. With `frontier_view` (a frontier delta round) the
    frontier input is not used: the rows the round touches are read from the view (output
    `hits`), `frontier` is the delta (those rows rewritten, and the new URLs) and `removed`
    the fps that left.

    The seen side (the tables that grow with the crawl) enters the join only as hits:
    each seen file is probed map-side against the fps this round asks about (candidates
    and filtered URLs: a side input the size of the round), and only the fps found are
    split by bucket and shuffled. So nothing of the size of the crawl is shuffled.
    (Dropping links to seen URLs map-side instead, with the hits as a side input, was
    measured slower: the in-process runner then pickles every candidate table between
    stages, more than the zstd-packed parts cost in the shuffle.)

    With `spill` = (directory, bytes a file) the bucket parts are written to table files
    there as they are split and the shuffle carries only their refs: the in-process runner
    held the packed parts of a whole round up to three times over in the join's stages
    (encoded, then decoded into its grouping table, then the merge's input), which made
    them the peak of a 45 000-page round; a bucket's merge now reads its own parts.
    """

    def __init__(self, buckets, round_no, score_fn=None, signatures=None, frontier_view=None,
                 spill=None):
        super().__init__()
        self.spill = spill
        self.buckets, self.round_no, self.score_fn = buckets, round_no, score_fn
        self.signatures = dict(signatures or {})   # {refusal key: signature} (urls.refusals)
        # frontier delta (tableio ViewSpec): read only the frontier rows this round's results,
        # candidates and filtered URLs touch; the output is the delta, plus `removed` fps
        self.frontier_view = frontier_view

    def expand(self, inputs):
        b = self.buckets
        asked = ((inputs["candidates"] | "CandidateFps" >> beam.Map(
                      lambda t: _np(t.column("dst_fp"))),
                  inputs["filtered"] | "FilteredFps" >> beam.Map(lambda t: _np(t.column("fp"))))
                 | "AskedFps" >> beam.Flatten())
        probe_set = accumulate(asked, "ProbeSet", sorted_union)   # read as one sorted array
        probe = CombinedView(probe_set, sorted_union)
        seen_hits = (inputs["seen"]
                     | "ProbeSeen" >> beam.ParDo(_ProbeSeen(self.signatures.values()), probe)
                     | "BucketSeenHits" >> beam.FlatMap(_split_kind_fps, b))
        frontier = inputs["frontier"]
        if self.frontier_view is not None:
            # the probe set (each of its accumulators as one sorted array) and the results' fps
            touching = combined_side_input(
                (probe_set | "ProbeArrays" >> beam.Map(combine_fn(sorted_union).extract_output),
                 inputs["results"] | "ResultFps" >> beam.Map(lambda t: _np(t.column("fp"))))
                | "TouchingFps" >> beam.Flatten(), "TouchSet", sorted_union)
            frontier = asked.pipeline | "FrontierHits" >> ReadView(self.frontier_view, keys=touching)
        keyed = {
            "frontier": self._bucketed(frontier, "Frontier"),
            "seen": seen_hits,
            "results": self._bucketed(inputs["results"], "Results"),
            "candidates": self._bucketed(inputs["candidates"], "Candidates", "dst_fp"),
            "filtered": self._bucketed(inputs["filtered"], "Filtered"),
        }
        out = (keyed | "JoinOnBucket" >> beam.CoGroupByKey()
               | "MergeBucket" >> beam.ParDo(_MergeBucket(self.round_no, self.score_fn,
                                                         self.signatures, self.frontier_view is not None))
               .with_output_types(pa.Table).with_outputs("filtered", "stats", "removed", main="frontier"))
        return {"frontier": out.frontier, "filtered": out.filtered, "stats": out.stats,
                "removed": out.removed, "hits": frontier}

    def _bucketed(self, tables_, name, fp_column="fp"):
        """(bucket, part) of each table: packed bytes, or refs to table files with `spill`."""
        if self.spill is None:
            return tables_ | f"Bucket{name}" >> beam.FlatMap(_split_packed, self.buckets, fp_column)
        directory, chunk_bytes = self.spill
        return tables_ | f"Bucket{name}" >> KeyedTablesToFiles(
            directory, chunk_bytes, functools.partial(split_sliced, buckets=self.buckets, fp_column=fp_column))


class _ReadStaleRefusals(beam.DoFn):
    """(table name, path) -> (CANDIDATES, FILTERED_CANDIDATES) of its stale refusal rows;
    a stats dict on tag `stats`. Only `refused_by` is read of row groups without one."""

    def __init__(self, current, url_filter):
        self.current, self.url_filter = frozenset(current), url_filter

    def process(self, element):
        table, path = element
        schema = pa.schema([tables.TABLES[table].field(c) for c in READMIT_COLUMNS[table]])
        stale = []
        for pf, i, t in _row_groups(path, _REFUSED_BY):
            mask = stale_mask(t.column("refused_by").combine_chunks(), self.current)
            if mask.any():
                cols = [c for c in schema.names if c in pf.schema_arrow.names]
                rows = tables.conform(pf.read_row_group(i, columns=cols), schema)
                stale.append(rows.filter(pa.array(mask)))
        if stale:
            cand, refused = readmission(pa.concat_tables(stale), self.url_filter)
            yield beam.pvalue.TaggedOutput("stats", {"refusals_reread": sum(t.num_rows for t in stale)})
            if cand.num_rows:
                yield cand
            if refused.num_rows:
                yield beam.pvalue.TaggedOutput("filtered", refused)


class ReadmitRefused(beam.PTransform):
    """(table name, path) of the seen views -> candidates of the refusals whose setting
    changed (`candidates`), the ones the scope still refuses (`filtered`), `stats`.

    Wired only in a round whose refusal signatures differ from the previous round's.
    """

    def __init__(self, signatures, url_filter):
        super().__init__()
        self.current, self.url_filter = frozenset(dict(signatures).values()), url_filter

    def expand(self, seen_files):
        out = seen_files | "ReadStaleRefusals" >> beam.ParDo(
            _ReadStaleRefusals(self.current, self.url_filter)).with_outputs(
                "filtered", "stats", main="candidates")
        return {"candidates": out.candidates, "filtered": out.filtered, "stats": out.stats}
