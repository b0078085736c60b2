"""http.client's response-header parse without the email package, where that gives the same
message (pure; no Beam).

`http.client` reads a response's header lines itself and then hands them, decoded as
ISO-8859-1, to `email.parser.Parser` to build the `HTTPMessage` the response carries: ~19 us
of a fetch process's request for nginx's eight headers, where building the message from
the lines directly takes ~4 us (timeit, one thread). `parse_headers` does that for the
usual header block and leaves every other one to the email parser, so the message is the
same either way:

- each line is `name:value` ending in CRLF or LF, the name one or more printable ASCII
  characters other than `:` (what the email parser's header pattern reads as a header);
- so no line starts with whitespace (a folded line) or is a `From ` line; and no value
  holds a CR or LF, where the email parser would split the line, nor VT, FF, FS, GS, RS or
  NEL (`str.splitlines` breaks there; left to the email parser whatever it does with them);
- no Content-Type names a `multipart` or `message` type (the email parser then looks for
  parts in the empty body and records defects).

Then each header is `(name, value)` with the value stripped as the email package's compat32
policy strips it (leading blanks and tabs, the trailing line end), and the body is empty,
as the email parser leaves it. `install()` puts it in place of `http.client.parse_headers`
in this process (a fetch process, the round's process): idempotent, and nothing is done
if http.client no longer has the pieces it relies on.
"""
from __future__ import annotations

import http.client
import re

_USUAL_LINE = re.compile(rb"[\x21-\x39\x3b-\x7e]+:[^\r\n\x0b\x0c\x1c-\x1e\x85]*\r?\n\Z")
_ODD_TYPE = re.compile(r"multipart|message", re.IGNORECASE)


def _usual(lines) -> bool:
    """True if every header line is one `parse_headers` builds itself (module docstring)."""
    if not lines or lines[-1] not in (b"\r\n", b"\n"):
        return False   # cut short (no blank line): left to the email parser
    match = _USUAL_LINE.match
    return all(match(line) for line in lines[:-1])


def parse_headers(fp, _class=http.client.HTTPMessage):
    """`http.client.parse_headers`: the same `HTTPMessage`, built directly for the usual
    header block, by the email parser otherwise."""
    lines = http.client._read_headers(fp)
    if _class is not http.client.HTTPMessage or not _usual(lines):
        return _email_parse(lines, _class)
    message = _class()
    headers = message._headers
    for line in lines[:-1]:
        name, value = line.decode("iso-8859-1").split(":", 1)
        if name.lower() == "content-type" and _ODD_TYPE.search(value):
            return _email_parse(lines, _class)
        headers.append((name, value.lstrip(" \t").rstrip("\r\n")))
    message.set_payload("")
    return message


def _email_parse(lines, _class):
    """What `http.client.parse_headers` does with the lines it read."""
    import email.parser
    return email.parser.Parser(_class=_class).parsestr(b"".join(lines).decode("iso-8859-1"))


def install() -> bool:
    """Use `parse_headers` for this process's HTTP responses; True if it is in place."""
    if http.client.parse_headers is parse_headers:
        return True
    if not (callable(getattr(http.client, "_read_headers", None))
            and callable(getattr(http.client, "parse_headers", None))
            and hasattr(http.client.HTTPMessage(), "_headers")):
        return False
    http.client.parse_headers = parse_headers
    return True
