"""Content-seen as Beam steps: ContentSeen (exact), NearClusters (LSH), SuspectMirrors, and
`ApplyContentSeen`, which applies them to a round with the two-phase old side (see `oldside`).

The contract of each step is in the package docstring (transforms/contentseen/__init__.py).
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.metrics import Metrics

from schemas import tables
from transforms.contentseen.clusters import (ASSIGNMENTS, NEAR_CAP, cluster_stats, host_counts,
                                             host_stats, mark_near, near_rows, resolve_clusters,
                                             sum_pairs)
from transforms.contentseen.duplicates import _col, _split, new_key_rows, tagged_duplicates
from transforms.contentseen.fingerprints import LSH_PARAMS, MAX_GROUP, NUM_PERM, THRESHOLD, lsh_params
from transforms.contentseen.nearpass import near_edges, page_band_keys, page_table
from transforms.contentseen.oldside import (
    EXACT,
    NEAR,
    _drop_rows,
    _pairs,
    earliest_hits,
    mark_duplicates,
    new_band_keys,
    new_content_keys,
    not_duplicate,
    probe_row_group,
    read_hits,
)
from transforms.tableio import files as readparquet
from transforms.tableio import spill
from transforms.tableio.gather import GatherAll
from transforms.tableio.sideinput import combined_side_input
from transforms.urls.fpsets import FpIndex, member, sorted_union


class ContentSeen(beam.PTransform):
    """Exact duplicates of this round's pages against all rounds (see the module contract)."""

    def __init__(self, round_no: int, key: str = "content_fp", buckets: int = 16):
        super().__init__()
        self.round_no, self.key, self.buckets = round_no, key, buckets

    def expand(self, inputs):
        key, B, rnd = self.key, self.buckets, self.round_no

        new = inputs["new"] | "NewRows" >> beam.Map(new_key_rows, key, rnd)
        keys = combined_side_input(new | "NewKeys" >> beam.Map(lambda t: _col(t, key)), "KeySet",
                                   sorted_union)

        def old_rows(t, keyset):
            k = _col(t, key, 0).astype(np.int64)
            m = member(k, keyset) & (k != 0)
            if m.any():
                yield t.filter(pa.array(m)).select(
                    [c for c in ("fp", "url", "host", "round", key) if c in t.column_names])

        old = inputs["old"] | "OldMatching" >> beam.FlatMap(old_rows, keys)

        def split(t, tag):
            for b, part in _split(t, _col(t, key).astype(np.int64), B):
                yield b, (tag, part)

        grouped = ((new | "SplitNew" >> beam.FlatMap(split, "new"),
                    old | "SplitOld" >> beam.FlatMap(split, "old"))
                   | "FlattenParts" >> beam.Flatten()
                   | "GroupByContent" >> beam.GroupByKey())

        return grouped | "DecideDuplicates" >> beam.FlatMap(lambda kv: tagged_duplicates(kv[1], rnd, key))


class NearClusters(beam.PTransform):
    """MinHash LSH banding across all rounds -> one ASSIGNMENTS table (see the contract).

    The round's signed pages and the old pages sharing one of their band keys are gathered
    as PAGES tables (`nearpass`: a signature once per page) and compared in one pass;
    `buckets` is no longer used (no band rows are shuffled). With `to_files` (name -> elements
    to spill file paths) only the page tables' paths are gathered (stage peak 401 -> 378 MB at 16k).
    `band_keys`: a side input of the new pages' band keys (sorted int64, default LSH parameters)
    the caller holds anyway (ApplyContentSeen's), not a second copy (~5 MB at 45 000 pages)."""

    def __init__(self, threshold: float = THRESHOLD, num_perm: int = NUM_PERM, buckets: int = 16,
                 cap: int = NEAR_CAP, params: tuple[int, int] | None = LSH_PARAMS,
                 min_jaccard: float | None = None, to_files=None, band_keys=None):
        super().__init__()
        self.threshold = threshold if min_jaccard is None else min_jaccard
        self.num_perm, self.buckets, self.cap = num_perm, buckets, cap
        self.bands, self.rows = params or lsh_params(threshold, num_perm)
        if band_keys is not None and (num_perm, (self.bands, self.rows)) != (NUM_PERM, LSH_PARAMS):
            raise ValueError(f"NearClusters: band_keys are of {NUM_PERM} permutations in bands "
                             f"{LSH_PARAMS}; leave them out for other parameters")
        self.to_files, self.band_keys = to_files, band_keys

    def expand(self, inputs):
        bands, rows, P, thr, cap = self.bands, self.rows, self.num_perm, self.threshold, self.cap
        compared, spilled = Metrics.distribution("contentseen", "near_group_compared"), self.to_files is not None

        def pages(t, is_new, ks=None):
            if ks is not None and len(ks) == 0:
                return
            out = page_table(t, P, (bands, rows), ks)
            if out is not None:
                yield is_new, out

        def clusters(parts):
            if spilled:   # (the only references to the tables: near_edges frees them as it goes)
                parts = [part for path in parts for part in spill.read_spill(path)]
            new_pages, old_pages = [t for n, t in parts if n], [t for n, t in parts if not n]
            del parts
            edges, widest = near_edges(new_pages, old_pages, bands, rows, P, thr, cap)
            compared.update(widest)
            return resolve_clusters(edges)

        new = inputs["new"] | "NewPages" >> beam.FlatMap(pages, True)
        keyset = self.band_keys
        if keyset is None:
            keyset = combined_side_input(
                new | "NewBandKeys" >> beam.Map(lambda nt: page_band_keys(nt[1], P, (bands, rows))),
                "BandKeySet", sorted_union)
        old = inputs["old"] | "OldPages" >> beam.FlatMap(pages, False, keyset)
        if spilled:
            new, old = (new | "NewPagesToFiles" >> self.to_files("near_pages"),
                        old | "OldPagesToFiles" >> self.to_files("near_pages"))
        return ((new, old) | "AllPages" >> beam.Flatten() | "GatherPages" >> GatherAll()
                | "Clusters" >> beam.Map(clusters))


class SuspectMirrors(beam.PTransform):
    """(host, duplicate_of_host, pages) from DUPLICATES tables, pairs >= min_pages."""

    def __init__(self, min_pages: int = 3):
        super().__init__()
        self.min_pages = min_pages

    def expand(self, duplicates):
        mp = self.min_pages
        return (duplicates
                | "HostPairs" >> beam.FlatMap(lambda t: [
                    ((h, o), 1) for h, o in zip(t.column("host").to_pylist(),
                                                t.column("duplicate_of_host").to_pylist())
                    if h != o])
                | "CountHostPairs" >> beam.CombinePerKey(sum)
                | "AtLeast" >> beam.FlatMap(lambda kv: [(kv[0][0], kv[0][1], kv[1])]
                                            if kv[1] >= mp else []))

class ContentSeenStats(beam.PTransform):
    """Per-round counters as dicts that sum (`sum_dicts`) to exact_duplicates, mirror_hosts_suspected
    and `clusters.cluster_stats` / `host_stats`, each sent as made (joining them cost 4 stages)."""

    def expand(self, inputs):
        exact = inputs["duplicates"] | "CountExact" >> beam.Map(lambda t: {"exact_duplicates": t.num_rows})
        mirrors = (inputs["mirrors"] | "MirrorHosts" >> beam.Map(lambda m: m[0])
                   | "DistinctMirrors" >> beam.Distinct()
                   | "CountMirrors" >> beam.Map(lambda _: {"mirror_hosts_suspected": 1}))
        # one clusters table a round: its dict also carries the zeros of the other counters
        near = inputs["clusters"] | "NearStats" >> beam.Map(
            lambda a: {"exact_duplicates": 0, "mirror_hosts_suspected": 0, **cluster_stats(a)})
        hosts = (inputs["visited"] | "NearHosts" >> beam.FlatMap(
                     lambda t, a: host_counts(t, np.sort(_col(a, "fp").astype(np.int64))),
                     beam.pvalue.AsSingleton(inputs["clusters"]))
                 | "SumNearHosts" >> beam.CombinePerKey(sum_pairs)
                 | "HostStats" >> beam.MapTuple(host_stats))
        return (exact, mirrors, near, hosts) | "Stats" >> beam.Flatten()


class _Probe(beam.DoFn):
    def __init__(self, max_group, round_no):
        self.max_group, self.round_no = max_group, round_no
        self.row_groups = Metrics.counter("contentseen", "old_row_groups")
        self.rows = Metrics.counter("contentseen", "old_rows")
        self.compat = Metrics.counter("contentseen", "old_compat_row_groups")
        self.exact = Metrics.counter("contentseen", "old_exact_hits")
        self.near = Metrics.counter("contentseen", "old_near_hits")

    def setup(self):
        self._keys = self._index = None

    def process(self, element, round_keys):
        if round_keys is not self._keys:    # one index per side input, not per row group
            self._keys = round_keys
            self._index = tuple(None if k is None else FpIndex(k) for k in round_keys)
        path, index, table = element
        self.row_groups.inc()
        self.rows.inc(table.num_rows)
        hits, compat = probe_row_group(path, index, table, *self._index,
                                       max_group=self.max_group, round_no=self.round_no,
                                       read_row_group=readparquet.read_row_group)
        if compat:
            self.compat.inc()
        for hit in hits:
            (self.exact if hit[0][0] == EXACT else self.near).inc()
            yield hit


class _RoundKeys(beam.CombineFn):
    """(content keys, band keys or None) of this round's VISITED tables, sorted unique."""

    def __init__(self, near):
        self.near = near

    def create_accumulator(self):
        return [], []

    def add_input(self, acc, table):
        acc[0].append(new_content_keys(table))
        if self.near:
            acc[1].append(new_band_keys(table))
        return acc

    def merge_accumulators(self, accs):
        accs = list(accs)
        return [sorted_union([a for acc in accs for a in acc[0]])], [sorted_union([a for acc in accs for a in acc[1]])]

    def extract_output(self, acc):
        return sorted_union(acc[0]), (sorted_union(acc[1]) if self.near else None)

class _Earliest(beam.CombineFn):
    """Per (kind, key): the earliest hits by (round, fp), 1 for EXACT, `max_group` for NEAR
    (all when 0). A hit is (round, fp, path, index, row, kind)."""

    def __init__(self, max_group):
        self.max_group = max_group

    def create_accumulator(self):
        return []

    def add_input(self, acc, hit):
        acc.append(hit)
        if len(acc) > 2 * self.max_group + 16 and (self.max_group or hit[5] == EXACT):
            return earliest_hits(acc, self.max_group)
        return acc

    def merge_accumulators(self, accs):
        return earliest_hits([h for acc in accs for h in acc], self.max_group)

    def extract_output(self, acc):
        return earliest_hits(acc, self.max_group)


# --------------------------------------------------------------------------- old side, phase 2
class _ReadHits(beam.DoFn):
    def __init__(self, kind):
        self.kind = kind
        self.row_groups = Metrics.counter("contentseen", f"wide_{kind}_row_groups")
        self.rows_read = Metrics.counter("contentseen", f"wide_{kind}_rows_read")
        self.hit_rows = Metrics.counter("contentseen", f"wide_{kind}_hit_rows")

    def process(self, element):
        (path, index), hits = element
        t, rows_read = read_hits(path, index, self.kind, hits, readparquet.read_rows)
        self.row_groups.inc()
        self.rows_read.inc(rows_read)
        self.hit_rows.inc(t.num_rows)
        if t.num_rows:
            yield t

def _split_kinds(kv):
    (kind, key), hits = kv
    for h in hits:
        yield beam.pvalue.TaggedOutput(kind, (key, h))


class ProbeVisited(beam.PTransform):
    """Phase 1: the visited view's rows this round can use, as positions.

    inputs  dict: ``new`` (this round's VISITED tables), ``old`` ((path, row_group, table)
            of OLD_COLUMNS, for every row group of the visited view).
    output  dict: ``exact`` (content_fp, hit): per content fingerprint of this round its
            first old page; ``near`` (band key, hit): per band key of this round (of any of
            its pages with a signature) the `max_group` earliest old pages with that key
            and no duplicate_of (all when 0; nothing when ``near`` is False). A hit is
            (round, fp, path, row_group, row, kind).
    """

    def __init__(self, round_no, near=True, max_group=MAX_GROUP):
        super().__init__()
        self.round_no, self.near, self.max_group = round_no, near, max_group

    def expand(self, inputs):
        keys = combined_side_input(inputs["new"], "RoundKeys", _RoundKeys(self.near))
        hits = (inputs["old"]
                | "ProbeNarrow" >> beam.ParDo(_Probe(self.max_group, self.round_no), keys)
                | "EarliestPerKey" >> beam.CombinePerKey(_Earliest(self.max_group))
                | "ByKind" >> beam.FlatMap(_split_kinds).with_outputs(EXACT, NEAR))
        return {EXACT: hits[EXACT], NEAR: hits[NEAR]}


class ReadHits(beam.PTransform):
    """Phase 2: (key, hit) of one kind -> the hit rows read wide, one table per row group.

    `live_keys`: optional side input of one sorted int64 array (`combined_side_input`, or
    `AsSingleton` of a one-element PCollection); hits under other keys are
    dropped before anything is read (the round's band keys once its exact duplicates are
    known: a key only they have cannot give a near pair).
    """

    def __init__(self, kind, live_keys=None):
        super().__init__()
        self.kind, self.live_keys = kind, live_keys

    def expand(self, hits):
        kind = self.kind
        if self.live_keys is not None:
            dead = Metrics.counter("contentseen", f"{kind}_hits_dropped")

            def live(key_hit, keys):
                if len(keys) and keys[min(np.searchsorted(keys, key_hit[0]), len(keys) - 1)] == key_hit[0]:
                    return True
                dead.inc()
                return False

            hits = hits | "LiveKeys" >> beam.Filter(live, self.live_keys)
        return (hits
                | "AtRowGroup" >> beam.Map(lambda kh: ((kh[1][2], kh[1][3]), (kh[1][4], kh[1][1])))
                | "PerRowGroup" >> beam.GroupByKey()
                | "ReadWide" >> beam.ParDo(_ReadHits(kind)))


class OldHits(beam.PTransform):
    """Both phases: the visited view's rows that this round's content-seen can use, read wide.

    inputs  as ProbeVisited.
    output  dict: ``exact`` (EXACT_COLUMNS tables: per content fingerprint of this round the
            first old page) and ``near`` (fp, url, round, minhash tables: per band key of
            this round the `max_group` earliest old pages without duplicate_of; empty when
            ``near`` is False). ApplyContentSeen runs the phases itself, so that the near
            hits of band keys only its exact duplicates have are never read.
    """

    def __init__(self, round_no, near=True, max_group=MAX_GROUP):
        super().__init__()
        self.round_no, self.near, self.max_group = round_no, near, max_group

    def expand(self, inputs):
        probed = inputs | "Probe" >> ProbeVisited(self.round_no, self.near, self.max_group)
        return {EXACT: probed[EXACT] | "ReadExact" >> ReadHits(EXACT),
                NEAR: probed[NEAR] | "ReadNear" >> ReadHits(NEAR)}


def _marked(element, dups, assignments=None):
    """VISITED tables (one, or a spill file's) with exact duplicates marked (near ones too, if given)."""
    for table in [element] if isinstance(element, pa.Table) else spill.read_spill(element):
        table = mark_duplicates(table, dups)
        yield table if assignments is None else mark_near(table, assignments)


class ApplyContentSeen(beam.PTransform):
    """Content-seen applied to a round (the package's contract); `to_files` as NearClusters'."""

    def __init__(self, round_no, expand_duplicates=False, near_threshold=THRESHOLD, to_files=None):
        super().__init__()
        self.round_no, self.expand_duplicates = round_no, expand_duplicates
        self.near_threshold, self.to_files = near_threshold, to_files

    def expand(self, inputs):
        visited, links, pages, old = inputs["visited"], inputs["links"], inputs["pages"], inputs["old"]
        probed = {"new": visited, "old": old} | "ProbeVisited" >> ProbeVisited(
            self.round_no, bool(self.near_threshold), MAX_GROUP)
        dups = ({"new": visited, "old": probed[EXACT] | "ReadExactHits" >> ReadHits(EXACT)}
                | "ExactDuplicates" >> ContentSeen(self.round_no))
        dup_side = beam.pvalue.AsDict(dups | "DupFps" >> beam.FlatMap(_pairs))
        pages = pages | "DropDuplicateBodies" >> beam.Map(_drop_rows, dup_side).with_output_types(pa.Table)
        if not self.expand_duplicates:
            links = links | "DropDuplicateLinks" >> beam.Filter(
                lambda b, d: b.get("src_fp") not in d or b.get("source") != tables.SOURCE_LINK,
                dup_side)
        # the marks are made where they are used, from `visited_files` if given (a spill file
        # each): nothing of the round's VISITED tables then waits in the runner's memory
        source = visited if inputs.get("visited_files") is None else inputs["visited_files"]
        if self.near_threshold:
            # (copied first: the in-process runner advances a stage's output watermark only once
            # every stage reading its input has, and MarkDuplicatesAndNear waits for this one's)
            near_new = (source | "NearSource" >> beam.Map(lambda x: x)
                        | "MarkDuplicatesForNear" >> beam.FlatMap(_marked, dup_side)
                        | "NearNew" >> beam.Map(not_duplicate))
            live = combined_side_input(near_new | "NearNewKeys" >> beam.Map(new_band_keys),
                                       "LiveBandKeys", sorted_union)
            clusters = ({"new": near_new, "old": probed[NEAR] | "ReadNearHits" >> ReadHits(NEAR, live)}
                        | "NearClusters" >> NearClusters(threshold=self.near_threshold,
                                                         to_files=self.to_files, band_keys=live))
        else:
            clusters = visited.pipeline | "NoNear" >> beam.Create([ASSIGNMENTS.empty_table()])
        # one row per page that joined a cluster; its visited row names the cluster
        asg = beam.pvalue.AsSingleton(clusters)
        visited = source | "MarkDuplicatesAndNear" >> beam.FlatMap(_marked, dup_side, asg).with_output_types(pa.Table)
        near_tables = visited | "NearTables" >> beam.FlatMap(near_rows, asg)
        mirrors = dups | "SuspectMirrors" >> SuspectMirrors()
        stats = ({"duplicates": dups, "clusters": clusters, "mirrors": mirrors, "visited": visited}
                 | "ContentStats" >> ContentSeenStats())
        return {"visited": visited, "links": links, "pages": pages, "near": near_tables, "stats": stats}
