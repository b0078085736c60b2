"""Whether a round writes the frontier as a delta over the last full snapshot or in full.

A delta (pipelines/crawldir.py LAYERED) holds only the frontier rows the round added or
changed and the fps that left, so the round's frontier work grows with the round, not with
the crawl. The round writes the whole frontier instead (a compaction, or a round that
changes every row anyway) when
- the deltas since the last full snapshot exceed `--compact_ratio` of it (0: never deltas);
- the strategy scores the whole frontier (graph, host counts, OPIC: every row's score may
  change), a vertical crawl bounds the frontier (--max_buffer), or the crawl is sharded
  (rows move between shards);
- the ordering settings differ from the previous round's (rows not touched this round would
  keep scores of the old ordering), or the previous round's settings are unknown.
The answer depends only on the committed rounds and the settings, so a killed round rerun
decides the same.
"""
from pipelines.settings import ROUND_SETTINGS
from transforms.score.modes import scores_per_row

TABLE = "frontier"
# settings a stored score depends on (per-row strategies score from the row's own columns)
SCORE_SETTINGS = ("strategy", "strategy_params", "mode") + tuple(
    name for name, s in ROUND_SETTINGS.items() if s.group == "vertical")


def _same_scoring(crawl, prev, settings) -> bool:
    try:
        before = crawl.read_json(prev, "options.json")
    except Exception:   # an old round without options.json
        return False
    return all(before.get(k) == settings.get(k) for k in SCORE_SETTINGS)


def frontier_as_delta(crawl, prev, cfg, settings) -> bool:
    """True when round prev + 1 writes the frontier as a delta (see the module doc)."""
    if prev is None:
        return False
    # compaction_due reads every layer's footer (a damaged file stops the round before any
    # write) and is due whatever the deltas when the ratio is 0
    if crawl.compaction_due(TABLE, prev, float(settings.get("compact_ratio") or 0)):
        return False
    if not scores_per_row(cfg.score.ordering) or cfg.shard or cfg.max_buffer:
        return False
    return _same_scoring(crawl, prev, settings)
