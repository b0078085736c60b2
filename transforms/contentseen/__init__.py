"""Content-seen: exact duplicates, near-duplicates (MinHash LSH) and suspected mirrors.

- `fingerprints`: body/text fingerprints, MinHash signatures, LSH band keys (pure).
- `duplicates`: exact duplicates, candidate pairs, mirrors over Arrow tables (pure).
- `oldside`: probing the visited view's narrow columns for this round's keys (pure).
- `step`: `ApplyContentSeen` and its parts, the Beam step of the round.
"""
