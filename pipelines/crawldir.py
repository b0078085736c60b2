"""The crawl directory: committed rounds, table views, and the commit protocol.

Every read and write goes through Beam's `FileSystems`, so a crawl directory can live on
a local disk or on gs://, s3://, hdfs:// (Arrow opens a local Parquet file itself:
`tableio.files.open_parquet` says why). Layout (see DESIGN.md):

    CRAWL/crawl.json
    CRAWL/rounds/000007/{frontier,visited,links,pages,hosts,filtered}/*.parquet
    CRAWL/rounds/000007/report.json
    CRAWL/rounds/000007/_COMMITTED        written last; a round without it does not exist

`_COMMITTED` holds the round's manifest: the Parquet files of each table, by name, and the
round's WARC files and CDXJ index (rounds/N/warc/, transforms.archive). Readers
take a round's files from its manifest, never from a directory listing, so a file that
went missing is an error naming it instead of silently fewer rows.

The commit needs no atomic rename and no listing (docs/cluster.md, "The commit protocol"):
a run of a round (an attempt, `new_attempt`) writes parts under final unique names, its
pipeline lists the parts of completed bundles in `_parts-<attempt>.json` (`read_parts`),
and `_COMMITTED` (one object, written whole or not at all) is built from that list;
`pipelines.sweep` then deletes what no manifest lists, `discard_uncommitted` a killed run's objects.

Table kinds
- snapshot tables (frontier, hosts, opic): a round holds the full table; the view of
  round N is round N's files (opic only in crawls whose strategy uses OPIC). Only the last
  `--keep_snapshots` rounds keep theirs (`prune_snapshots`): a round needs only the last
  committed round's, and a crawl directory must not grow as rounds x frontier. A pruned
  round's `_PRUNED` names what went; reading it is an error that says so.
- delta tables (visited, links, pages, filtered, near_duplicates): a round holds only the
  rows it added; the
  view of round N is the union of the deltas of rounds 0..N. (A compaction that folds old
  deltas into one full snapshot lists the table under "full" in that round's manifest;
  the view then starts there. Readers need no change for it: `table_files` stops there.)
- layered tables (LAYERED: the frontier, the hosts): a snapshot table that a round may write as a
  delta over the last full snapshot: the rows it added or changed, and in
  `<table>_removed` the keys that left; the manifest lists it under "deltas". The view is
  the snapshot plus the deltas since, latest row per key, removals applied
  (`view_layers`, read with transforms.tableio.layers). A round writes a full snapshot
  again (compaction) once the deltas since the last one hold more than `--compact_ratio`
  of its rows (`compaction_due`); older rounds' layers that no kept view needs are pruned.
  Any keyed table can join LAYERED: the round writes its delta and its removed keys.
"""
import json
import posixpath
import re
import time
import uuid

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from schemas import tables
from transforms import faults
from transforms.tableio.files import delete_tree, open_parquet, read_view
from transforms.tableio.layers import read_layers

SNAPSHOT_TABLES = ("frontier", "hosts", "opic", "deepweb")
DELTA_TABLES = ("visited", "links", "pages", "filtered", "near_duplicates", "docfreq", "forms",
                "recrawl", "outbox")   # outbox: URLs for other shards' hosts (pipelines/fleet.py)
# snapshot tables a round may write as a delta: their key (a text key is hashed where it is
# read: transforms.tableio.layers.key_array)
LAYERED = {"frontier": "fp", "hosts": "host"}
REMOVED_TABLES = tuple(f"{t}_removed" for t in LAYERED)
COMMITTED = "_COMMITTED"
PRUNED = "_PRUNED"
CRAWL_JSON = "crawl.json"
REPORT_JSON = "report.json"
WARC_DIR = "warc"
WARC_FILES = "files.json"     # written by transforms.archive.step with the index
WARC_INDEX = "index.cdxj"
PARTS_LISTING = "_parts-{attempt}.json"   # an attempt's parts, written by its pipeline
SPILL_DIR = "_spill"                       # transforms.tableio.spill.DIRNAME
_ROUND_RE = re.compile(r"/rounds/(\d{6})/" + COMMITTED + "$")


class CrawlStateError(Exception):
    """The crawl directory is missing, damaged, or not what this version can read."""


def _join(*parts):
    return FileSystems.join(*parts) if "://" in parts[0] else posixpath.join(*parts)


def _read_text(path):
    with FileSystems.open(path) as f:
        return f.read().decode("utf-8")


def _write_text(path, text):
    with FileSystems.create(path) as f:
        f.write(text.encode("utf-8"))


def _match(pattern):
    try:
        return [m.path for m in FileSystems.match([pattern])[0].metadata_list]
    except Exception:  # BeamIOError when nothing matches on some filesystems
        return []


class CrawlDir:
    """A crawl directory. Cheap to construct and picklable (it holds only the path)."""

    def __init__(self, path: str):
        self.path = path.rstrip("/") if len(path) > 1 else path

    def __getstate__(self):
        return {"path": self.path}

    # ---- layout -------------------------------------------------------------------------
    def round_dir(self, n: int) -> str:
        return _join(self.path, "rounds", f"{n:06d}")

    def table_dir(self, n: int, table: str) -> str:
        return _join(self.round_dir(n), table)

    def warc_dir(self, n: int) -> str:
        return _join(self.round_dir(n), WARC_DIR)

    def table_prefix(self, n: int, table: str) -> str:
        """File prefix for Beam's Parquet sink: shards become part-SSSSS-of-NNNNN.parquet."""
        return _join(self.table_dir(n, table), "part")

    # ---- crawl.json ---------------------------------------------------------------------
    def exists(self) -> bool:
        return FileSystems.exists(_join(self.path, CRAWL_JSON))

    def read_config(self) -> dict:
        path = _join(self.path, CRAWL_JSON)
        if not FileSystems.exists(path):
            raise CrawlStateError(
                f"{path} does not exist: {self.path} is not a crawl directory. "
                f"Create one with `python -m pipelines.inject --crawl_dir {self.path} --seed URL`.")
        try:
            config = json.loads(_read_text(path))
        except (ValueError, UnicodeDecodeError) as e:
            raise CrawlStateError(f"{path} is not valid JSON ({e}); restore it from a backup "
                                  "or start a new crawl directory.") from e
        version = config.get("schema_version")
        if version not in tables.READABLE_VERSIONS:
            raise CrawlStateError(
                f"{path} has schema_version {version!r}; this beamcrawl reads version "
                f"{tables.SCHEMA_VERSION}. Crawls of versions "
                f"{', '.join(map(str, tables.READABLE_VERSIONS))} are read; use a matching beamcrawl release.")
        return config

    def write_config(self, config: dict) -> None:
        config = dict(config, schema_version=tables.SCHEMA_VERSION)
        _write_text(_join(self.path, CRAWL_JSON), json.dumps(config, indent=2, sort_keys=True))

    # ---- rounds -------------------------------------------------------------------------
    def committed_rounds(self) -> list:
        paths = _match(_join(self.path, "rounds", "*", COMMITTED))
        rounds = []
        for p in paths:
            m = _ROUND_RE.search(p.replace("\\", "/"))
            if m:
                rounds.append(int(m.group(1)))
        return sorted(rounds)

    def last_committed(self):
        rounds = self.committed_rounds()
        return rounds[-1] if rounds else None

    def is_committed(self, n: int) -> bool:
        return FileSystems.exists(_join(self.round_dir(n), COMMITTED))

    def discard_uncommitted(self, n: int) -> bool:
        """Delete round n's partial output left by a crashed run (every object under its
        folder, from a listing). Returns True if any existed."""
        if self.is_committed(n):
            raise CrawlStateError(f"round {n} of {self.path} is committed; refusing to delete it.")
        return delete_tree(self.round_dir(n))

    # ---- the commit protocol (see the module doc) -----------------------------------------
    @staticmethod
    def new_attempt() -> str:
        """A new id for one run of a round: its time and a random part (never reused)."""
        return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"

    def parts_listing(self, n: int, attempt: str) -> str:
        """Where attempt `attempt` of round n lists its tables' parts."""
        return _join(self.round_dir(n), PARTS_LISTING.format(attempt=attempt))

    def read_parts(self, n: int, attempt: str) -> dict:
        """{table: [part names]} that attempt `attempt` of round n wrote and its pipeline
        listed when it finished."""
        path = self.parts_listing(n, attempt)
        try:
            return json.loads(_read_text(path))
        except Exception as e:
            raise CrawlStateError(f"{path}: round {n}'s pipeline ended without listing its parts "
                                  f"({type(e).__name__}: {e}); run the round again.") from e

    def commit(self, n: int, report: dict, parts: dict, full_tables=(), delta_tables=()) -> None:
        """Write report.json, then _COMMITTED with the manifest of `parts` ({table: [file
        names]}, as `read_parts` gives them): the round exists from then on, with exactly
        those files. `delta_tables`: the LAYERED tables this round wrote as deltas."""
        known = SNAPSHOT_TABLES + DELTA_TABLES + REMOVED_TABLES
        unknown = sorted(set(parts) - set(known))
        if unknown:
            raise ValueError(f"round {n}: parts of unknown tables {unknown}")
        manifest = {table: sorted(parts.get(table, [])) for table in known}
        warc, cdxj = self._warc_listing(n)
        _write_text(_join(self.round_dir(n), REPORT_JSON), json.dumps(report, indent=2, sort_keys=True))
        faults.crash_point("commit")   # report.json written, _COMMITTED not (crash tests)
        _write_text(_join(self.round_dir(n), COMMITTED),
                    json.dumps({"round": n, "tables": manifest, "full": sorted(full_tables),
                                "deltas": sorted(delta_tables),
                                "warc": warc, "cdxj": cdxj}, indent=1, sort_keys=True))

    def prune_snapshots(self, keep: int) -> list:
        """Delete the snapshot tables (frontier, hosts, opic, ...) of committed rounds older than
        the last `keep` (0: keep all), but not the layers (LAYERED) a kept round's view still
        reads; returns the rounds pruned now. `_PRUNED`, naming the tables, is written before
        anything is deleted, so an interrupted prune is finished by the next one and a reader
        never meets a half-deleted snapshot without being told."""
        if keep <= 0:
            return []
        rounds = self.committed_rounds()
        kept = rounds[-keep:]
        needed = {t: min([r for k in kept for r, _, _ in self.view_layers(t, k)] or [0])
                  for t in LAYERED}
        pruned = []
        for n in rounds[:-keep]:
            names = [t for t in SNAPSHOT_TABLES if t not in LAYERED or n < needed[t]]
            names += [f"{t}_removed" for t in LAYERED if n < needed[t]]
            files = [f for t in names for f in _match(_join(self.table_dir(n, t), "*"))]
            if not files:
                continue
            marker = _join(self.round_dir(n), PRUNED)
            done = json.loads(_read_text(marker)).get("tables", []) if FileSystems.exists(marker) else []
            if not set(names) <= set(done):
                _write_text(marker, json.dumps({"tables": sorted(set(done) | set(names)), "keep": keep}))
            FileSystems.delete(files)
            faults.crash_point("prune")   # one round's snapshots gone, the rest not (crash tests)
            pruned.append(n)
        return pruned

    def pruned(self, n: int, table=None) -> bool:
        """Round n's snapshots (or only `table`'s) were pruned."""
        marker = _join(self.round_dir(n), PRUNED)
        if not FileSystems.exists(marker):
            return False
        return table is None or table in json.loads(_read_text(marker)).get("tables", SNAPSHOT_TABLES)

    def _warc_listing(self, n: int):
        """(WARC file names, index name or None) of round n, from the files.json its pipeline
        wrote: only files of bundles that committed. Files a retried bundle left are deleted."""
        d = self.warc_dir(n)
        if not FileSystems.exists(_join(d, WARC_FILES)):
            return [], None
        names = sorted(f["name"] for f in json.loads(_read_text(_join(d, WARC_FILES))))
        for name in names:
            if not FileSystems.exists(_join(d, name)):
                raise CrawlStateError(f"{_join(d, name)}: a WARC file of round {n} is missing; "
                                      "rerun the round.")
        orphans = [p for p in _match(_join(d, "*.warc.gz")) if posixpath.basename(p) not in set(names)]
        if orphans:
            FileSystems.delete(orphans)
        return names, WARC_INDEX

    def warc_index(self, n: int):
        """Path of committed round n's CDXJ index, or None when the round kept no WARC."""
        name = self.manifest(n).get("cdxj")
        return _join(self.warc_dir(n), name) if name else None

    def manifest(self, n: int) -> dict:
        """{"tables": {table: [file names]}, "full": [tables]} of committed round n."""
        cache = self.__dict__.setdefault("_manifests", {})
        if n not in cache:
            path = _join(self.round_dir(n), COMMITTED)
            try:
                cache[n] = json.loads(_read_text(path))
            except Exception as e:
                raise CrawlStateError(
                    f"{path}: unreadable round manifest ({e}). Restore it from a backup, or delete "
                    f"{self.round_dir(n)} and later rounds to resume from the round before.") from e
        return cache[n]

    def write_json(self, n: int, name: str, obj) -> None:
        _write_text(_join(self.round_dir(n), name), json.dumps(obj, indent=2, sort_keys=True))

    def read_json(self, n: int, name: str):
        return json.loads(_read_text(_join(self.round_dir(n), name)))

    def read_report(self, n: int) -> dict:
        path = _join(self.round_dir(n), REPORT_JSON)
        try:
            return json.loads(_read_text(path))
        except Exception as e:
            raise CrawlStateError(f"{path} is missing or not valid JSON ({e}). The round is "
                                  "committed but its report is damaged; restore it from a backup.") from e

    # ---- table views --------------------------------------------------------------------
    def view_layers(self, table: str, upto: int) -> list:
        """[(round, files, removed files)] whose resolution is LAYERED `table` as of committed
        round `upto`: the last full snapshot first, then each later round's delta."""
        layers = []
        for n in range(upto, -1, -1):
            m = self.manifest(n)
            if m["tables"].get(table) and self.pruned(n, table):
                raise CrawlStateError(
                    f"round {upto}'s {table} table of {self.path} was pruned (--keep_snapshots keeps "
                    f"only the last rounds' frontier, hosts and opic); read a later round, or crawl "
                    f"with --keep_snapshots 0 to keep every round's.")
            removed = m["tables"].get(f"{table}_removed", []) if table in LAYERED else []
            layers.append((n, [_join(self.table_dir(n, table), f) for f in m["tables"].get(table, [])],
                           [_join(self.table_dir(n, f"{table}_removed"), f) for f in removed]))
            if table not in m.get("deltas", ()):
                break
        return layers[::-1]

    def layer_rows(self, table: str, upto: int) -> list:
        """Rows written plus keys removed per layer of `table`'s view (`view_layers`), every
        file checked (`validate_files`: a damaged one is a CrawlStateError naming it)."""
        return [self.validate_files(table, files) + (self.validate_files(f"{table}_removed", removed)
                                                     if table in LAYERED else 0)
                for _, files, removed in self.view_layers(table, upto)]

    def compaction_due(self, table: str, upto: int, ratio: float) -> bool:
        """The deltas of LAYERED `table` since its last full snapshot (rows written and keys
        removed) exceed `ratio` x the snapshot's rows: the next round writes it in full."""
        rows = self.layer_rows(table, upto)
        return ratio <= 0 or sum(rows[1:]) > ratio * rows[0]

    def table_files(self, table: str, upto: int) -> list:
        """The Parquet files whose union is `table` as of committed round `upto` (for a LAYERED
        table, the files of all its layers: read its view with `view_layers`/`read_table`)."""
        if table in SNAPSHOT_TABLES:
            return [f for _, files, _ in self.view_layers(table, upto) for f in files]
        elif table in DELTA_TABLES:
            rounds = []
            for n in reversed([r for r in self.committed_rounds() if r <= upto]):
                rounds.append(n)
                if table in self.manifest(n).get("full", ()):
                    break
        else:
            raise ValueError(f"unknown table {table!r}")
        files = []
        for n in sorted(rounds):
            names = self.manifest(n)["tables"].get(table, [])
            files.extend(_join(self.table_dir(n, table), name) for name in names)
        return files

    def validate_files(self, table: str, files: list) -> int:
        """Check every file's footer against the table schema; return the total row count.

        A missing, truncated or wrong-schema file raises CrawlStateError naming the file and
        what to do, before any pipeline runs and before anything is written.
        """
        schema = tables.TABLES[table]
        rows = 0
        for path in files:
            try:
                with open_parquet(path) as pf:  # reads only the footer
                    file_schema = pf.schema_arrow
                    rows += pf.metadata.num_rows
            except Exception as e:
                raise CrawlStateError(
                    f"{path}: cannot read this Parquet file of table {table!r} ({type(e).__name__}: {e}). "
                    f"It is missing or damaged (truncated?). Restore it from a backup, or delete "
                    f"the round folder {posixpath.dirname(posixpath.dirname(path))} and its "
                    f"later rounds to resume from the round before.") from e
            problems = []
            for field in schema:
                if field.name not in file_schema.names:
                    if field.name not in tables.LATER_COLUMNS.get(table, ()):
                        problems.append(f"missing column {field.name!r}")
                elif not file_schema.field(field.name).type.equals(field.type):
                    problems.append(f"column {field.name!r} is {file_schema.field(field.name).type}, "
                                    f"expected {field.type}")
            if problems:
                raise CrawlStateError(
                    f"{path}: wrong schema for table {table!r}: {'; '.join(problems)}. This file was "
                    f"not written by this beamcrawl version (schema {tables.SCHEMA_VERSION}); "
                    f"restore the original file or start a new crawl directory.")
        return rows

    def read_table(self, table: str, upto: int, columns=None) -> pa.Table:
        """The whole view of `table` as one Arrow table (for reports, notebooks and tests)."""
        if table in LAYERED:
            layers = [(f, r) for _, f, r in self.view_layers(table, upto)]
            parts = list(read_layers(layers, tables.TABLES[table], columns, key=LAYERED[table]))
            return pa.concat_tables(parts) if parts else read_view([], tables.TABLES[table], columns)
        return read_view(self.table_files(table, upto), tables.TABLES[table], columns)
