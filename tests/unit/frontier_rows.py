"""Helpers to build small frontier tables in tests."""
import pyarrow as pa

from schemas import tables


def frontier(rows):
    """rows: dicts with at least fp, url, host; other FRONTIER columns default sensibly."""
    defaults = dict(depth=0, score=0.0, discovered_round=0, source="link", first_parent=None,
                    inlinks=0, anchors=[], retries=0, not_before=0.0, last_error=None, cash=0.0,
                    history=0.0, lastmod=None, redirects=0)
    return pa.Table.from_pylist([{**defaults, **r} for r in rows], schema=tables.FRONTIER)
