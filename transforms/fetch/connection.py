"""What one request gives back: its response or failure (classified), its body read within
the deadline and the cap. Sending it: `curlsender`."""

from __future__ import annotations

import email.utils
import http.client
import re
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import urlsplit

import requests
import urllib3

from schemas.tables import FORBIDDEN_ADDRESS, HTTP_ERROR
from transforms.fetch.httpbody import (
    BoundedDecoder,
    DecodeError,
    UnsupportedEncoding,
    parse_content_encoding,
)
from transforms.fetch.netguard import ForbiddenAddressError, ResolveError
from transforms.fetch.records import DRAIN_LIMIT, READ_CHUNK, TRANSIENT

# ----------------------------------------------------------------- one request

@dataclass
class Response:
    url: str
    status: int
    headers: dict
    body: bytes
    truncated: bool
    note: str | None             # body_cap / decode_error / unsupported_encoding:...
    fetch_time: float
    elapsed_ms: float
    http: dict | None = None     # the exchange as sent and received (exchange.http_exchange)


@dataclass
class Failure:
    outcome: str
    reason: str
    fetch_time: float
    elapsed_ms: float
    network: bool = True         # a request went out (counts as a fetch and an error)


class DeadlineExceeded(Exception):
    pass


def _exc_chain(e: BaseException) -> Iterator[BaseException]:
    seen, todo = set(), [e]
    while todo:
        x = todo.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        nxt = [x.__cause__, x.__context__, getattr(x, "reason", None), *getattr(x, "args", ())]
        todo.extend(a for a in nxt if isinstance(a, BaseException))


def classify_exception(e: BaseException) -> tuple[str, str] | None:
    """(outcome, reason) of a request exception; None if unexpected (a bug: re-raise)."""
    chain = list(_exc_chain(e))
    for x in chain:
        if isinstance(x, ForbiddenAddressError):
            return FORBIDDEN_ADDRESS, x.reason
        if isinstance(x, ResolveError):
            return TRANSIENT, "dns"
    for x in chain:
        if isinstance(x, DeadlineExceeded):
            return TRANSIENT, "deadline"
    for x in chain:
        if isinstance(x, ConnectionRefusedError):
            return TRANSIENT, "connect_refused"
    for x in chain:      # (urllib3's NewConnectionError subclasses ConnectTimeoutError)
        if (isinstance(x, (requests.exceptions.ConnectTimeout, urllib3.exceptions.ConnectTimeoutError))
                and not isinstance(x, urllib3.exceptions.NewConnectionError)):
            return TRANSIENT, "timeout_connect"
    for x in chain:
        if isinstance(x, (requests.exceptions.ReadTimeout, urllib3.exceptions.ReadTimeoutError,
                          socket.timeout, TimeoutError)):
            return TRANSIENT, "timeout_read"
    for x in chain:
        if isinstance(x, (ssl.SSLError, ssl.CertificateError, requests.exceptions.SSLError,
                          urllib3.exceptions.SSLError)):
            return TRANSIENT, "tls"
    for x in chain:
        if isinstance(x, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError,
                          http.client.IncompleteRead, http.client.RemoteDisconnected)):
            return TRANSIENT, "reset"
    for x in chain:
        if isinstance(x, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.NameResolutionError)):
            return TRANSIENT, "connect_error"
    for x in chain:
        if isinstance(x, (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                          requests.exceptions.MissingSchema, urllib3.exceptions.LocationParseError)):
            return HTTP_ERROR, "bad_url"
    for x in chain:
        if isinstance(x, (http.client.HTTPException, urllib3.exceptions.ProtocolError,
                          requests.exceptions.InvalidHeader, requests.exceptions.ChunkedEncodingError,
                          requests.exceptions.ContentDecodingError)):
            return TRANSIENT, "protocol_error"
    for x in chain:
        if isinstance(x, (requests.exceptions.ConnectionError, OSError)):
            return TRANSIENT, "connect_error"
    return None


def media_type(content_type_header: str | None) -> str | None:
    """'Text/HTML; charset=UTF-8' -> 'text/html'."""
    if not content_type_header:
        return None
    mt = content_type_header.split(";", 1)[0].strip().lower()
    return mt or None


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Retry-After (delta-seconds or HTTP-date) -> seconds from now (>= 0); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        pass
    try:
        dt = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if dt is None:
        return None
    return max(0.0, dt.timestamp() - now)


# an http(s) URL whose origin is a lower-case ASCII host and a port, if any, of digits
_PLAIN_ORIGIN = re.compile(r"(https?)://([a-z0-9][a-z0-9.-]*)(?::([0-9]{1,5}))?(?=[/?#]|\Z)")


def origin_port(url: str) -> tuple[str, str, int]:
    """(scheme, hostname, port) of an http(s) URL; ValueError otherwise. (A plain origin
    is read by one regex match: `urlsplit` took 0.069 s of 3 000 fetches under cProfile.)"""
    m = _PLAIN_ORIGIN.match(url)
    if m is not None:
        scheme, host, port = m.groups()
        port = int(port) if port else 0
        if port <= 65535:                     # (else urlsplit's "Port out of range")
            return scheme, host, port or (443 if scheme == "https" else 80)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"unsupported scheme {scheme!r}")
    host = parts.hostname
    if not host:
        raise ValueError("no host")
    if not host.isascii():      # the name urllib3 will dial: IDNA-encoded the way requests does it
        try:
            host = requests.models.PreparedRequest._get_idna_encoded_host(host)
        except (AttributeError, UnicodeError, requests.exceptions.InvalidURL) as e:
            raise ValueError(f"bad host name: {e}") from None
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, host, port


def redirect_target(headers) -> str | None:
    """A 3xx's Location as requests reads it: header bytes that are UTF-8 (sent raw, as many
    servers do) decoded as UTF-8; not UTF-8, the header as received (ISO-8859-1)."""
    location = headers.get("Location")
    if location is None:
        return None
    try:
        return location.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return location


# ----------------------------------------------------------------- reading a body

def read_body(raw, cap: int, deadline_at: float, keep_raw: list | None = None):
    """(decoded body of at most `cap` bytes, truncated?, note) of the response `raw`
    (a `curlsender.CurlResponse`, read as a streamed urllib3 response is). With `keep_raw` (a list), the payload as received (still content-encoded)
    is appended to it too, up to `cap` bytes (for the WARC); a body without Content-Encoding
    is kept once (the caller reuses it)."""
    encodings = parse_content_encoding(raw.headers.get("Content-Encoding"))
    note = None
    try:
        dec = BoundedDecoder(encodings, cap)
    except UnsupportedEncoding as e:
        note = f"unsupported_encoding:{e}"
        dec = BoundedDecoder([], cap)
    raw_budget = 2 * cap + READ_CHUNK    # compressed input that decodes to nothing is bounded too
    got = 0
    complete = False
    try:
        while True:
            if time.monotonic() > deadline_at:
                raise DeadlineExceeded()
            chunk = raw.read(READ_CHUNK, decode_content=False)
            if not chunk:
                complete = True
                break
            got += len(chunk)
            if keep_raw is not None and encodings:
                keep_raw.append(chunk[:max(0, cap - (got - len(chunk)))])
            dec.feed(chunk)
            if dec.full or got > raw_budget:
                break
        if complete:
            dec.finish()
    except DecodeError:
        note = "decode_error"
        raw.close()
        return dec.getvalue(), True, note
    truncated = dec.full or not complete
    if truncated:
        raw.close()          # the rest is unread: do not reuse this connection
        note = note or "body_cap"
    else:
        raw.release_conn()
    return dec.getvalue(), truncated, note

def drain(raw, deadline_at: float, keep: list | None = None) -> bool:
    """Read and drop up to DRAIN_LIMIT bytes of the response `raw`
    (appended to `keep` when given); True if that was the whole body."""
    got = 0
    while got <= DRAIN_LIMIT:
        if time.monotonic() > deadline_at:
            raise DeadlineExceeded()
        chunk = raw.read(READ_CHUNK, decode_content=False)
        if not chunk:
            raw.release_conn()
            return True
        got += len(chunk)
        if keep is not None:
            keep.append(chunk)
    raw.close()
    return False
