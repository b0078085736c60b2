"""Whether a round writes the hosts table as a delta (the hosts it fetched) or in full.

The hosts table holds one row for every host the crawl knows, its robots.txt body included,
and a round fetches some of them. Rewritten whole every round, it cost what the crawl knows,
not what the round does: at 5 015 hosts (the 500 000-page sweep, benchmarks/RESULTS.md,
eighth sitting) reading it, setting the other hosts' rows aside and writing it all again took
0.44-0.50 s of tail rounds of 1.21-1.57 s. As a delta (pipelines/crawldir.py LAYERED, keyed by host name) a
round writes only the rows of the hosts it fetched. It writes the table whole (a compaction)
when
- the deltas since the last full snapshot exceed `--compact_ratio` of it (0: never deltas);
- the crawl is sharded (as the frontier: a shard's hosts may move);
- the round fetches nothing (an inject round: `build_round`'s default).
The answer depends only on the committed rounds and the settings, so a killed round rerun
decides the same.
"""
TABLE = "hosts"


def hosts_as_delta(crawl, prev, cfg, settings) -> bool:
    """True when round prev + 1 writes the hosts table as a delta (see the module doc)."""
    if prev is None:
        return False
    # compaction_due reads every layer's footer (a damaged file stops the round before any
    # write) and is due whatever the deltas when the ratio is 0
    due = crawl.compaction_due(TABLE, prev, float(settings.get("compact_ratio") or 0))
    return not due and not cfg.shard
