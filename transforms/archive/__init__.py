"""Archive: a round's fetches as WARC 1.1 files with a CDXJ index (see warc.py and step.py).

- `warc`: plain functions and `WarcFile` (records, SURT keys, CDXJ lines and lookups).
- `step`: `WriteWarc`, the Beam step that writes rotated files per bundle and the index.
"""
