"""URLs, the vocabulary every stage shares (plain Python, no Beam).

- `canonical`: WHATWG resolution, the canonical form, 64-bit fingerprints, host keys.
- `scope`: `UrlFilter`, the scope and quality rules a URL must pass to be queued.
- `fpsets`: sorted fingerprint sets and the O(1) `FpIndex` that URL-seen and content-seen probe.
"""
