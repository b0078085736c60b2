"""An incremental round's revisit plan, made before the pipeline runs (issue #13).

Reads the committed `recrawl` state (transforms/recrawl/state.py), lets the revisit policy
pick the due pages within --refetch_share × --max_pages, and measures the copy (expired
set, estimated freshness) at the round's clock. Batch rounds plan nothing.

Compaction (LSM-style): the `recrawl` table is a delta per round, so its rows grow with
every visit while its view (the latest row per fp) grows with the pages. When the deltas
hold at least COMPACT_FACTOR rows per page of the view, the round also writes that view
(as of the previous round, the one its plan read) into its own `recrawl` table and commits
the table "full": readers stop at that round (pipelines/crawldir.py `table_files`), and
`latest` of the round's files is the same view as `latest` of every round's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import posixpath

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas import tables
from transforms.recrawl.state import copy_stats, latest, select_revisits

COMPACT_FACTOR = 2          # compact when the deltas hold ≥ this many rows per page
COMPACTED_FILE = "compacted.parquet"


@dataclass
class RevisitPlan:
    rows: pa.Table | None = None          # fetch-list rows of the revisits (with validators)
    prev_rows: dict = field(default_factory=dict)   # fp -> previous state row, for the update
    stats: dict = field(default_factory=dict)       # recrawl_* counters for report.json
    compact: pa.Table | None = None       # the recrawl view to write this round (compaction)

    def __len__(self):
        return 0 if self.rows is None else self.rows.num_rows


def round_gap(crawl, prev, default):
    """Seconds between the last two round clocks (report's recrawl_round_time), else default."""
    if prev is None:
        return default
    try:
        last = crawl.read_report(prev).get("stats", {}).get("recrawl_round_time")
    except Exception:
        return default
    return default if last is None else last


def plan_revisits(crawl, prev, cfg) -> RevisitPlan:
    rc = cfg.recrawl
    if rc is None or not rc.incremental or prev is None:
        return RevisitPlan()
    raw = crawl.read_table("recrawl", prev)
    state = latest(raw)
    compact = state if state.num_rows and raw.num_rows >= COMPACT_FACTOR * state.num_rows else None
    last_clock = round_gap(crawl, prev, None)
    cycle = (cfg.now - last_clock) if last_clock is not None and cfg.now > last_clock else rc.round_interval
    budget = math.floor(rc.refetch_share * cfg.generate.max_pages)
    rows, sel = select_revisits(state, cfg.now, budget, cycle, rc.policy, cfg.generate.max_per_host,
                                rc.explore, rc.estimate)
    picked = set(rows.column("fp").to_pylist()) if rows is not None else set()
    prev_rows = {r["fp"]: r for r in state.to_pylist() if r["fp"] in picked} if picked else {}
    stats = {f"recrawl_{k}": v for k, v in copy_stats(state, cfg.now, rc.expired_threshold).items()}
    stats.update({f"recrawl_{k}": v for k, v in sel.items()})
    stats.update(recrawl_budget=budget, recrawl_cycle_seconds=round(cycle, 3))
    if compact is not None:
        stats.update(recrawl_compacted_rows=raw.num_rows, recrawl_compacted_to=compact.num_rows)
    return RevisitPlan(rows if rows is not None and rows.num_rows else None, prev_rows, stats, compact)


def write_compaction(crawl, round_no, plan) -> tuple:
    """Write the planned compaction (if any) into round `round_no`'s recrawl table; returns
    the tables to commit as full (("recrawl",) or ())."""
    if plan is None or plan.compact is None:
        return ()
    path = posixpath.join(crawl.table_dir(round_no, "recrawl"), COMPACTED_FILE)
    with FileSystems.create(path) as f:
        pq.write_table(plan.compact.select(tables.RECRAWL.names).cast(tables.RECRAWL), f)
    return ("recrawl",)
