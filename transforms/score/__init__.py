"""Score: rank the next round's frontier with the crawl's ordering strategy.

- `modes`: which path scores a strategy (per URL-seen bucket, whole frontier, Beam PageRank).
- `opicstate`: OPIC's cash and history updated with a round's fetches (pure numpy).
- `pagerankblocks`: the per-bucket blocks and updates of the Beam PageRank (pure numpy).
- `step`: `ScoreWholeFrontier`, `ScoreByBeamPageRank` and `PageRank`, the Beam steps.
"""
