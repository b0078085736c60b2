"""Content-seen applied to a round: mark duplicates, stop their links, find near-duplicates.

Wraps transforms.contentseen for the round pipeline. Input: a dict of PCollections:
  visited  this round's VISITED tables          links  this round's candidates bundles
  pages    this round's PAGES tables            old    the visited view of committed rounds:
                                                       (path, row_group, table) elements of
                                                       columns OLD_COLUMNS (ReadTables(...,
                                                       OLD_COLUMNS, with_positions=True))
Output: a dict with the same `visited` (exact duplicates get outcome `duplicate` and
`duplicate_of`, and empty `lsh_keys`), `links` (bundles of duplicate pages dropped unless
expand_duplicates), `pages` (bodies of duplicates dropped), `near` (NEAR_DUPLICATES
tables) and `stats`.

The old side in two phases (OldHits), so a round's work on the visited view is a scan of
narrow columns plus wide reads of the few pages that matter:
  1. narrow, every visited row group: fp, round, content_fp, lsh_keys are probed map-side
     against this round's content fingerprints and band keys (side inputs sized by the
     round). Matches are reduced to what the decisions can use, first in the row group,
     then across the view: per content fingerprint the first old page by (round, fp) (the
     only old row `exact_duplicates` can name), per band key the `max_group` earliest old
     pages (the only ones `candidate_pairs` compares). A row group whose rows have no
     `lsh_keys` (a file written before the column) gets them from its `minhash` here.
  2. wide, hit row groups only (ReadHits): `read_row_group` reads EXACT_COLUMNS of each
     row group with exact hits, takes the hit rows and hands them to ContentSeen; once the
     round's exact duplicates are known, near hits under band keys that only duplicates
     have are dropped, and NEAR_COLUMNS (minhash) of the row groups with the remaining
     near hits are read for NearDuplicates. Both give what they give with the whole view.
"""
import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.metrics import Metrics

from schemas import tables
from transforms import contentseen, readparquet
from transforms.fpsets import FpIndex, member, sorted_unique

OLD_COLUMNS = ["fp", "round", "content_fp", "lsh_keys"]            # phase 1: every row
EXACT_COLUMNS = ["fp", "url", "host", "round", "content_fp"]        # phase 2: exact hits
NEAR_COLUMNS = ["fp", "url", "round", "minhash", "duplicate_of"]    # phase 2: near hits
COMPAT_COLUMNS = ["fp", "minhash", "duplicate_of"]  # phase 1 of a row group without lsh_keys
EXACT, NEAR = "exact", "near"


def _pairs(dup_table):
    return zip(dup_table.column("fp").to_pylist(), dup_table.column("duplicate_of").to_pylist())


def mark_duplicates(table, dups):
    """`dups`: {fp: url of the first page with that content}."""
    if not dups or table.num_rows == 0:
        return table
    fps = table.column("fp").to_pylist()
    hit = pa.array([fp in dups for fp in fps])
    of = pa.array([dups.get(fp) for fp in fps], pa.string())
    table = table.set_column(table.schema.get_field_index("duplicate_of"), "duplicate_of",
                             pc.if_else(hit, of, table.column("duplicate_of")))
    if "lsh_keys" in table.column_names:    # a duplicate is never an earlier near-duplicate
        i = table.schema.get_field_index("lsh_keys")
        table = table.set_column(i, "lsh_keys", pc.if_else(
            hit, pa.scalar([], table.schema.field(i).type), table.column(i)))
    return table.set_column(table.schema.get_field_index("outcome"), "outcome",
                            pc.if_else(hit, pa.scalar(tables.DUPLICATE), table.column("outcome")))


def _drop_rows(table, dups):
    if not dups:
        return table
    return table.filter(pa.array([fp not in dups for fp in table.column("fp").to_pylist()]))


def _not_duplicate(table):
    """Rows for near-duplicate search: with a signature and not an exact duplicate."""
    mask = pc.and_(pc.is_valid(table.column("minhash")), pc.is_null(table.column("duplicate_of")))
    return table.filter(mask).select(["fp", "url", "round", "minhash"])


# --------------------------------------------------------------------------- old side, phase 1
def _earliest_per_key(keys, rnd, fp, limit):
    """Positions of the `limit` smallest (round, fp) of each key (all when limit is 0)."""
    order = np.lexsort((fp, rnd, keys))
    if limit and len(order):
        k = keys[order]
        pos = np.arange(len(k))
        start = np.maximum.accumulate(np.where(np.r_[True, k[1:] != k[:-1]], pos, 0))
        order = order[pos - start < limit]
    return order


def band_keys_by_row(table, compat=None, params=contentseen.LSH_PARAMS):
    """(row, key) int64 arrays of every band key of `table`'s rows: its `lsh_keys`, and for
    rows where they are null, keys computed from the `minhash` of `compat` (a table aligned
    with `table`, default `table` itself) if the row has one and no duplicate_of."""
    n = table.num_rows
    if "lsh_keys" in table.column_names:
        rows, keys, missing = contentseen.lsh_keys_of(table.column("lsh_keys"))
    else:
        rows, keys, missing = np.zeros(0, np.int64), np.zeros(0, np.int64), np.ones(n, bool)
    compat = table if compat is None else compat
    if missing.any() and "minhash" in compat.column_names:
        sigs, ok = contentseen.signatures_of(compat.column("minhash"))
        ok &= missing
        if "duplicate_of" in compat.column_names:
            ok &= np.asarray(compat.column("duplicate_of").is_null().to_numpy(zero_copy_only=False),
                             dtype=bool)
        idx = np.flatnonzero(ok)
        if len(idx):
            bands, r = params
            rows = np.concatenate([rows, np.repeat(idx, bands)])
            keys = np.concatenate([keys, contentseen.band_keys(sigs[idx], bands, r).reshape(-1)])
    return rows, keys


def new_content_keys(table):
    """This round's content fingerprints (0 and null left out)."""
    k = table.column("content_fp").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return k[k != 0]


def new_band_keys(table):
    """This round's band keys (its pages' `lsh_keys`, or computed from `minhash`)."""
    return band_keys_by_row(table)[1]


def _hits(kind, keys, rows, rnd, fp, path, index, limit):
    keep = _earliest_per_key(keys, rnd[rows], fp[rows], limit)
    return [((kind, int(keys[j])), (int(rnd[rows[j]]), int(fp[rows[j]]), path, index, int(rows[j]), kind))
            for j in keep]


def _contains(values, keys):
    return keys.contains(values) if isinstance(keys, FpIndex) else member(values, keys)


def probe_row_group(path, index, table, content_keys, band_keys=None,
                    max_group=contentseen.MAX_GROUP, round_no=0):
    """Phase 1 on one row group of the visited view (columns OLD_COLUMNS).

    `content_keys`, `band_keys`: this round's keys, sorted int64 arrays or FpIndex.
    Returns (hits, compat): hits are ((kind, key), (round, fp, path, index, row, kind)) for
    kind EXACT (key: a content fingerprint of this round; the row group's first page by
    (round, fp) with it) and NEAR (key: a band key of this round; its `max_group` earliest
    pages, all when 0); compat says the row group's `lsh_keys` were missing and its
    `minhash` was read to compute them (only when there are band keys to probe).
    """
    fp = table.column("fp").to_numpy(zero_copy_only=False).astype(np.int64)
    rnd = table.column("round").fill_null(round_no).to_numpy(zero_copy_only=False).astype(np.int64)
    out = []
    if content_keys is not None and len(content_keys):
        cfp = table.column("content_fp").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        rows = np.flatnonzero((cfp != 0) & _contains(cfp, content_keys))
        out += _hits(EXACT, cfp[rows], rows, rnd, fp, path, index, 1)
    compat = False
    if band_keys is not None and len(band_keys):
        missing = (table.column("lsh_keys").null_count if "lsh_keys" in table.column_names
                   else table.num_rows)
        wide = None
        if missing:
            compat = True
            wide = readparquet.read_row_group(path, index, tables.VISITED, COMPAT_COLUMNS)
            _check_fps(path, index, wide, np.arange(table.num_rows), fp)
        rows, keys = band_keys_by_row(table, wide)
        hit = _contains(keys, band_keys)
        out += _hits(NEAR, keys[hit], rows[hit], rnd, fp, path, index, max_group)
    return out, compat


def _check_fps(path, index, table, rows, fps):
    got = table.column("fp").take(pa.array(rows, type=pa.int64())).to_numpy(zero_copy_only=False)
    if len(got) != len(fps) or not np.array_equal(got.astype(np.int64), np.asarray(fps, np.int64)):
        raise readparquet.ParquetReadError(
            f"{path}: row group {index} changed between two reads of this round "
            f"(committed files must not be rewritten while a round runs)")


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
                                       max_group=self.max_group, round_no=self.round_no)
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
        return [_union([a for acc in accs for a in acc[0]])], [_union([a for acc in accs for a in acc[1]])]

    def extract_output(self, acc):
        return _union(acc[0]), (_union(acc[1]) if self.near else None)


def _union(arrays):
    arrays = [a for a in arrays if len(a)]
    return sorted_unique(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)


class _Earliest(beam.CombineFn):
    """Per (kind, key): the earliest hits by (round, fp), 1 for EXACT, `max_group` for NEAR
    (all when 0). A hit is (round, fp, path, index, row, kind)."""

    def __init__(self, max_group):
        self.max_group = max_group

    def _cut(self, hits):
        hits = sorted(hits)
        limit = 1 if hits and hits[0][5] == EXACT else self.max_group
        return hits[:limit] if limit else hits

    def create_accumulator(self):
        return []

    def add_input(self, acc, hit):
        acc.append(hit)
        if len(acc) > 2 * self.max_group + 16 and (self.max_group or hit[5] == EXACT):
            return self._cut(acc)
        return acc

    def merge_accumulators(self, accs):
        return self._cut([h for acc in accs for h in acc])

    def extract_output(self, acc):
        return self._cut(acc)


# --------------------------------------------------------------------------- old side, phase 2
def read_hits(path, index, kind, hits):
    """Phase 2 on one row group: (table of its hit rows read wide, rows in the row group).

    `hits`: (row, fp) pairs (a row may repeat); kind EXACT gives EXACT_COLUMNS, NEAR gives
    fp, url, round, minhash of the rows with a signature and no duplicate_of (NEAR_COLUMNS
    are read).
    """
    sel = dict(hits)
    t = readparquet.read_row_group(path, index, tables.VISITED, EXACT_COLUMNS if kind == EXACT
                                   else NEAR_COLUMNS)
    idx = np.array(sorted(sel), np.int64)
    _check_fps(path, index, t, idx, [sel[i] for i in idx])
    part = t.take(pa.array(idx, type=pa.int64()))
    return (part if kind == EXACT else _not_duplicate(part)), t.num_rows


class _ReadHits(beam.DoFn):
    def __init__(self, kind):
        self.kind = kind
        self.row_groups = Metrics.counter("contentseen", f"wide_{kind}_row_groups")
        self.rows_read = Metrics.counter("contentseen", f"wide_{kind}_rows_read")
        self.hit_rows = Metrics.counter("contentseen", f"wide_{kind}_hit_rows")

    def process(self, element):
        (path, index), hits = element
        t, rows_read = read_hits(path, index, self.kind, hits)
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

    def __init__(self, round_no, near=True, max_group=contentseen.MAX_GROUP):
        super().__init__()
        self.round_no, self.near, self.max_group = round_no, near, max_group

    def expand(self, inputs):
        keys = inputs["new"] | "RoundKeys" >> beam.CombineGlobally(_RoundKeys(self.near))
        hits = (inputs["old"]
                | "ProbeNarrow" >> beam.ParDo(_Probe(self.max_group, self.round_no),
                                              beam.pvalue.AsSingleton(keys))
                | "EarliestPerKey" >> beam.CombinePerKey(_Earliest(self.max_group))
                | "ByKind" >> beam.FlatMap(_split_kinds).with_outputs(EXACT, NEAR))
        return {EXACT: hits[EXACT], NEAR: hits[NEAR]}


class ReadHits(beam.PTransform):
    """Phase 2: (key, hit) of one kind -> the hit rows read wide, one table per row group.

    `live_keys`: optional PCollection of one sorted int64 array; hits under other keys are
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

            hits = hits | "LiveKeys" >> beam.Filter(live, beam.pvalue.AsSingleton(self.live_keys))
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

    def __init__(self, round_no, near=True, max_group=contentseen.MAX_GROUP):
        super().__init__()
        self.round_no, self.near, self.max_group = round_no, near, max_group

    def expand(self, inputs):
        probed = inputs | "Probe" >> ProbeVisited(self.round_no, self.near, self.max_group)
        return {EXACT: probed[EXACT] | "ReadExact" >> ReadHits(EXACT),
                NEAR: probed[NEAR] | "ReadNear" >> ReadHits(NEAR)}


class ApplyContentSeen(beam.PTransform):
    def __init__(self, round_no, expand_duplicates=False, near_threshold=contentseen.THRESHOLD):
        super().__init__()
        self.round_no, self.expand_duplicates = round_no, expand_duplicates
        self.near_threshold = near_threshold

    def expand(self, inputs):
        visited, links, pages, old = inputs["visited"], inputs["links"], inputs["pages"], inputs["old"]
        probed = {"new": visited, "old": old} | "ProbeVisited" >> ProbeVisited(
            self.round_no, bool(self.near_threshold), contentseen.MAX_GROUP)
        dups = ({"new": visited, "old": probed[EXACT] | "ReadExactHits" >> ReadHits(EXACT)}
                | "ExactDuplicates" >> contentseen.ContentSeen(self.round_no))
        dup_side = beam.pvalue.AsDict(dups | "DupFps" >> beam.FlatMap(_pairs))
        visited = visited | "MarkDuplicates" >> beam.Map(mark_duplicates, dup_side)
        pages = pages | "DropDuplicateBodies" >> beam.Map(_drop_rows, dup_side)
        if not self.expand_duplicates:
            links = links | "DropDuplicateLinks" >> beam.Filter(
                lambda b, d: b.get("src_fp") not in d or b.get("source") != tables.SOURCE_LINK,
                dup_side)
        if self.near_threshold:
            near_new = visited | "NearNew" >> beam.Map(_not_duplicate)
            live = (near_new | "NearNewKeys" >> beam.Map(new_band_keys)
                    | "LiveBandKeys" >> beam.CombineGlobally(contentseen._SortedKeys()))
            near = ({"new": near_new, "old": probed[NEAR] | "ReadNearHits" >> ReadHits(NEAR, live)}
                    | "NearDuplicates" >> contentseen.NearDuplicates(
                        threshold=self.near_threshold, max_group=contentseen.MAX_GROUP))
        else:
            near = visited.pipeline | "NoNear" >> beam.Create([])
        mirrors = dups | "SuspectMirrors" >> contentseen.SuspectMirrors()
        stats = ({"duplicates": dups, "near": near, "mirrors": mirrors}
                 | "ContentStats" >> contentseen.ContentSeenStats())
        near_tables = (near | "BatchNear" >> beam.BatchElements(min_batch_size=1, max_batch_size=5000)
                       | "NearTables" >> beam.Map(
                           lambda rows: pa.Table.from_pylist(rows, schema=tables.NEAR_DUPLICATES)))
        return {"visited": visited, "links": links, "pages": pages, "near": near_tables, "stats": stats}
