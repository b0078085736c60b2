"""Canonical URL of the simweb ground truth (no dependencies: the Scrapy venv imports it too).

Lower-case host, default port dropped, dot segments resolved, percent-encoded unreserved
characters decoded, no fragment, the query exactly as written (tests/simweb/truth.py)."""
import re
from urllib.parse import urlsplit

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")


def _unpct(m):
    c = chr(int(m.group(1), 16))
    return c if c in _UNRESERVED else "%" + m.group(1).upper()


def canonical(url: str) -> str:
    s = urlsplit(url)
    path = _PCT.sub(_unpct, s.path or "/")
    segs = []
    for seg in path.split("/")[1:]:
        if seg == "..":
            if segs:
                segs.pop()
        elif seg != ".":
            segs.append(seg)
    if path.endswith(("/..", "/.")):
        segs.append("")
    net = (s.hostname or "") + (f":{s.port}" if s.port and s.port != 80 else "")
    return f"http://{net}/" + "/".join(segs) + (f"?{s.query}" if s.query else "")
