"""The response head libcurl hands over, read as http.client reads one (pure; no Beam).

libcurl writes every line of every head it receives (any 1xx heads, the final head, a
chunked body's trailer lines) to the sender's buffer, with no Python call a line;
`parse_head` reads the final head from it once the transfer is over: its version and
reason as http.client gives them, its fields as (name, value) in order, values ISO-8859-1
as http.client decodes them, and http.client's limits on a head (99 header lines, a line
up to 64 KiB). The usual head (one, CRLF line ends, not folded, short) is read in one
regex pass; any other line by line (`_any_head`; tests/unit/test_curlsender.py compares the
two with hypothesis).
"""
from __future__ import annotations

import http.client
import re

_MAX_LINE = http.client._MAXLINE               # 65 536
_MAX_HEADERS = http.client._MAXHEADERS - 1     # 99: http.client counts the blank line too
_VERSIONS = {"HTTP/1.0": 10, "HTTP/0.9": 9, "ICY": 10}       # (http.client's; else 11)
_FIELD = re.compile(r"^([^:\n]*):(.*)$", re.M)                   # a header line: name, value


class BadHead(Exception):
    """The response's head broke http.client's limits, or the connection closed inside it."""


def parse_head(heads: bytes) -> tuple[int, str, list[tuple[str, str]]]:
    """(version as http.client gives it, reason, [(name, value)]) of the final head in
    `heads` (libcurl's header data: any 1xx heads, the final head, any trailer lines).
    Raises BadHead when it is cut (no blank line after it), has more than 99 header lines
    or a line over 64 KiB (http.client's limits)."""
    usual = _usual_head(heads)
    return usual if usual is not None else _any_head(heads)


def _usual_head(heads: bytes):
    """`parse_head` of the usual head in one regex pass: one head, CRLF line ends, no folded
    line, short; None for any other."""
    first = heads.find(b"\r\n")
    if not (heads[:5] == b"HTTP/" and 0 < first and heads.find(b"\r\n\r\n") == len(heads) - 4
            and len(heads) < _MAX_LINE and b"\n " not in heads and b"\n\t" not in heads):
        return None
    block = heads[first + 2:-4]
    if block.count(b"\n") >= _MAX_HEADERS:
        return None
    parts = heads[:first].decode("latin-1").split(" ", 2)
    items = [(name.strip(), value.rstrip("\r").strip(" \t"))
             for name, value in _FIELD.findall(block.decode("latin-1"))]
    return _VERSIONS.get(parts[0], 11), parts[2] if len(parts) > 2 else "", items


def _any_head(heads: bytes) -> tuple[int, str, list[tuple[str, str]]]:
    """`parse_head`, line by line."""
    lines = heads.split(b"\n")
    start = 0
    for i, line in enumerate(lines):
        if (line[:5] == b"HTTP/" or line[:4] == b"ICY ") and (i == 0 or lines[i - 1] in (b"", b"\r")):
            start = i
    end = None
    for j in range(start + 1, len(lines) - 1):      # (the last piece follows the last \n)
        if lines[j] in (b"", b"\r"):
            end = j
            break
    if end is None:
        raise BadHead("connection closed inside the head")
    if end - start - 1 > _MAX_HEADERS:
        raise BadHead(f"got more than {_MAX_HEADERS} headers")
    if max(map(len, lines[start:end])) >= _MAX_LINE:      # (+ its \n: over http.client's 64 KiB)
        raise BadHead("header line too long")
    text = b"\n".join(lines[start:end]).decode("latin-1").split("\n")
    parts = text[0].rstrip("\r").split(" ", 2)
    version = _VERSIONS.get(parts[0], 11)
    reason = parts[2] if len(parts) > 2 else ""
    items: list[tuple[str, str]] = []
    for line in text[1:]:
        line = line.rstrip("\r")
        if line[:1] in (" ", "\t") and items:          # an obsolete folded line continues the last
            name, value = items[-1]
            items[-1] = (name, f"{value} {line.strip()}")
            continue
        name, sep, value = line.partition(":")
        if sep:
            items.append((name.strip(), value.strip(" \t")))
    return version, reason, items
