"""One request on the wire: dial the guarded address, enforce the deadline, classify failures."""

from __future__ import annotations

import email.utils
import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.poolmanager import PoolManager

from schemas.tables import FORBIDDEN_ADDRESS, HTTP_ERROR
from transforms.fetch.deadlines import Watchdog
from transforms.fetch.httpbody import (
    BoundedDecoder,
    DecodeError,
    UnsupportedEncoding,
    parse_content_encoding,
)
from transforms.fetch.netguard import ForbiddenAddressError, ResolveError
from transforms.fetch.records import DRAIN_LIMIT, READ_CHUNK, TRANSIENT

# ----------------------------------------------------------------- dialing the resolved address

class _DialMixin:
    """A urllib3 connection that connects to the address `dial(host, port)` returns
    (resolved and guarded by the fetcher) while Host header, SNI and certificate
    verification keep using the host name. `watch(conn)` lets the deadline watchdog
    reach the socket."""

    def __init__(self, *args, dial=None, watch=None, **kw):
        self._bc_dial = dial
        self._bc_watch = watch
        super().__init__(*args, **kw)

    def _new_conn(self):
        if self._bc_watch is not None:
            self._bc_watch(self)
        addr = self._bc_dial(self.host, self.port)     # ForbiddenAddressError / ResolveError
        saved = self._dns_host
        self._dns_host = addr        # only create_connection() reads it; host stays the name
        try:
            return super()._new_conn()
        finally:
            self._dns_host = saved

    def request(self, *args, **kw):
        if self._bc_watch is not None:
            self._bc_watch(self)
        return super().request(*args, **kw)


class _DialHTTPConnection(_DialMixin, HTTPConnection):
    pass


class _DialHTTPSConnection(_DialMixin, HTTPSConnection):
    pass


class _DialPoolManager(PoolManager):
    def __init__(self, *args, dial, watch, **kw):
        self._bc_dial = dial
        self._bc_watch = watch
        super().__init__(*args, **kw)

    def _new_pool(self, scheme, host, port, request_context=None):
        pool = super()._new_pool(scheme, host, port, request_context)
        pool.ConnectionCls = _DialHTTPSConnection if scheme == "https" else _DialHTTPConnection
        pool.conn_kw = dict(pool.conn_kw, dial=self._bc_dial, watch=self._bc_watch)
        return pool


class DialAdapter(HTTPAdapter):
    def __init__(self, dial, watch, **kw):
        self._bc_dial = dial
        self._bc_watch = watch
        super().__init__(**kw)

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        self._pool_connections = connections
        self._pool_maxsize = maxsize
        self._pool_block = block
        self.poolmanager = _DialPoolManager(num_pools=connections, maxsize=maxsize, block=block,
                                            dial=self._bc_dial, watch=self._bc_watch,
                                            **pool_kwargs)

    def proxy_manager_for(self, proxy, **kw):      # pragma: no cover - trust_env is off
        raise RuntimeError("proxies are not supported by the guarded fetcher")


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


def origin_port(url: str) -> tuple[str, str, int]:
    """(scheme, hostname, port) of an http(s) URL; ValueError otherwise."""
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


class LocationOnly:
    """Adapter so Session.get_redirect_target (which fixes mis-encoded UTF-8 Locations)
    can be used without a requests.Response."""

    def __init__(self, headers):
        self.headers = headers
        self.is_redirect = "location" in headers


# ----------------------------------------------------------------- preparing a request

def prepare_request(method: str, url: str, base_headers, headers: dict | None = None,
                    data: bytes | None = None) -> requests.PreparedRequest:
    """What `Session.prepare_request` builds for the fetcher's sessions, without its merging.

    The fetcher's sessions set no cookies, auth, hooks or params and never fill their cookie
    jar (the adapter is called directly), so the merging `Session.prepare_request` does per
    request (ABC checks of empty settings, a cookie jar copy) only costs: it was a quarter of
    a request's CPU. Headers merge as there: the session's (`base_headers`, in order), then
    the request's, a None value removing one. A password in the URL still becomes Basic auth."""
    merged = requests.structures.CaseInsensitiveDict(base_headers)
    for k, v in (headers or {}).items():
        merged[k] = v
    for k in [k for k, v in merged.items() if v is None]:
        del merged[k]
    p = requests.PreparedRequest()
    p.prepare_method(method)
    p.prepare_url(url, None)
    p.prepare_headers(merged)
    p.prepare_body(data, None, None)
    p.prepare_auth(None, url)
    return p


# ----------------------------------------------------------------- reading a body

def read_body(resp, cap: int, deadline_at: float, wd: Watchdog, keep_raw: list | None = None):
    """(decoded body of at most `cap` bytes, truncated?, note). With `keep_raw` (a list), the
    payload as received (still content-encoded) is appended to it too, up to `cap` bytes
    (for the WARC); a body without Content-Encoding is kept once (the caller reuses it)."""
    raw = resp.raw
    encodings = parse_content_encoding(resp.headers.get("Content-Encoding"))
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
            if wd.fired:
                raise DeadlineExceeded()
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

def drain(resp, deadline_at: float, wd: Watchdog, keep: list | None = None) -> bool:
    """Read and drop up to DRAIN_LIMIT bytes (appended to `keep` when given); True if that
    was the whole body."""
    raw = resp.raw
    got = 0
    while got <= DRAIN_LIMIT:
        if time.monotonic() > deadline_at or wd.fired:
            raise DeadlineExceeded()
        chunk = raw.read(READ_CHUNK, decode_content=False)
        if wd.fired:
            raise DeadlineExceeded()
        if not chunk:
            raw.release_conn()
            return True
        got += len(chunk)
        if keep is not None:
            keep.append(chunk)
    raw.close()
    return False
