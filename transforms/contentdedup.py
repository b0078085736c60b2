"""Content-seen applied to a round: mark duplicates, stop their links, find near-duplicates.

Wraps transforms.contentseen for the round pipeline. Input: a dict of PCollections:
  visited  this round's VISITED tables          links  this round's candidates bundles
  pages    this round's PAGES tables            old    the visited view of committed rounds
                                                       (columns OLD_COLUMNS)
Output: a dict with the same `visited` (exact duplicates get outcome `duplicate` and
`duplicate_of`), `links` (bundles of duplicate pages dropped unless expand_duplicates),
`pages` (bodies of duplicates dropped), `near` (NEAR_DUPLICATES tables) and `stats`.
"""
import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables
from transforms import contentseen

OLD_COLUMNS = ["fp", "url", "host", "round", "content_fp", "minhash", "duplicate_of"]


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


class ApplyContentSeen(beam.PTransform):
    def __init__(self, round_no, expand_duplicates=False, near_threshold=contentseen.THRESHOLD):
        super().__init__()
        self.round_no, self.expand_duplicates = round_no, expand_duplicates
        self.near_threshold = near_threshold

    def expand(self, inputs):
        visited, links, pages, old = inputs["visited"], inputs["links"], inputs["pages"], inputs["old"]
        dups = {"new": visited, "old": old} | "ExactDuplicates" >> contentseen.ContentSeen(self.round_no)
        dup_side = beam.pvalue.AsDict(dups | "DupFps" >> beam.FlatMap(_pairs))
        visited = visited | "MarkDuplicates" >> beam.Map(mark_duplicates, dup_side)
        pages = pages | "DropDuplicateBodies" >> beam.Map(_drop_rows, dup_side)
        if not self.expand_duplicates:
            links = links | "DropDuplicateLinks" >> beam.Filter(
                lambda b, d: b.get("src_fp") not in d or b.get("source") != tables.SOURCE_LINK,
                dup_side)
        if self.near_threshold:
            near = ({"new": visited | "NearNew" >> beam.Map(_not_duplicate),
                     "old": old | "NearOld" >> beam.Map(_not_duplicate)}
                    | "NearDuplicates" >> contentseen.NearDuplicates(threshold=self.near_threshold))
        else:
            near = visited.pipeline | "NoNear" >> beam.Create([])
        mirrors = dups | "SuspectMirrors" >> contentseen.SuspectMirrors()
        stats = ({"duplicates": dups, "near": near, "mirrors": mirrors}
                 | "ContentStats" >> contentseen.ContentSeenStats())
        near_tables = (near | "BatchNear" >> beam.BatchElements(min_batch_size=1, max_batch_size=5000)
                       | "NearTables" >> beam.Map(
                           lambda rows: pa.Table.from_pylist(rows, schema=tables.NEAR_DUPLICATES)))
        return {"visited": visited, "links": links, "pages": pages, "near": near_tables, "stats": stats}
