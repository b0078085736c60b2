"""URL-seen: merge this round's results and new links into the frontier.

- `candidates`: link bundles -> CANDIDATES and LINKS tables (columnar, per batch of pages).
- `buckets`: fingerprint buckets, splits, packing of table parts for the shuffle.
- `merge`: `merge_bucket`, the join of one bucket (pure numpy/pyarrow).
- `step`: `UrlSeen`, the Beam step: map-side seen probe, CoGroupByKey on buckets, merge.
"""
