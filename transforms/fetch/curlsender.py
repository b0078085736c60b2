"""The fetcher's HTTP client: one request sent over libcurl (pycurl) (pure: no Beam).

Why libcurl: a GET of a ~1.9 KB page from nginx over a kept-alive connection cost
0.057–0.085 ms of this process's CPU with pycurl against 0.264–0.296 ms with urllib3 alone
(scratch benchmark, one thread), because libcurl writes the request and parses the response
in C with the interpreter lock released; in a whole round the fetch processes used ~30 % less
CPU than on urllib3, and whole bench50k crawls ran ~10 % faster (benchmarks/RESULTS.md,
twentieth session). The urllib3 and aiohttp engines that were once beside it are gone
(benchmarks/RESULTS.md, twenty-eighth session). libcurl is the most used HTTP client there
is, and pycurl its maintained binding (wheels with their own libcurl on PyPI).

`CurlSender.send` runs the whole exchange in libcurl and keeps the body as received, up to
what the fetcher's readers could take of it for the body cap (past it the transfer is cut
and that connection closed). It returns a `CurlResponse` with the part of a streamed
urllib3 response the fetcher reads (`status`, `headers`, `read(n)`, `close`, `release_conn`,
and what `exchange.http_exchange` records), so the body cap, decoding, classification and
the WARC record are the fetcher's own. Failures are raised as requests' exceptions, or the
fetcher's (`ForbiddenAddressError`, `ResolveError`, `DeadlineExceeded`), which
`connection.classify_exception` classifies.

What it keeps to:
- every request dials the address the fetcher resolved and guarded (`dial`), by libcurl's
  CONNECT_TO; the Host header, SNI and certificate check keep the host name; and libcurl
  asks the guard again about the address of every socket it opens (OPENSOCKETFUNCTION):
  a refused one is never connected to (ForbiddenAddressError);
- TLS verifies the host name against certifi's bundle or --ca_bundle, as requests does;
- the whole-request deadline bounds the exchange; the connect timeout bounds the connect
  (and TLS handshake); the read timeout bounds each silence once connected (the multi
  handle's wait, checked here, so fractions of a second hold);
- http.client's limits on a response head (a header line up to 64 KiB, 99 header lines);
- no cookies, no redirects followed, no proxies from the environment, no decompression
  here (the fetcher's bounded decoder does it), HTTP/1.1 only, http and https only.
"""
from __future__ import annotations

import errno
import http.client
import io
import os
import socket
import time
from urllib.parse import urlsplit, urlunsplit

import pycurl
from requests import exceptions as rx
from requests.utils import DEFAULT_CA_BUNDLE_PATH

from transforms.fetch.connection import DeadlineExceeded, origin_port
from transforms.fetch.netguard import ForbiddenAddressError
from transforms.fetch.curlhead import BadHead, parse_head
from transforms.fetch.exchange import Received
from transforms.fetch.records import DRAIN_LIMIT, READ_CHUNK

_IDLE_POLL = 1.0                              # longest wait in the multi handle between checks

_TLS_ERRORS = {pycurl.E_SSL_CONNECT_ERROR, pycurl.E_PEER_FAILED_VERIFICATION, pycurl.E_SSL_CERTPROBLEM,
               pycurl.E_SSL_CIPHER, pycurl.E_SSL_CACERT_BADFILE, pycurl.E_SSL_ENGINE_NOTFOUND,
               pycurl.E_SSL_ENGINE_SETFAILED, pycurl.E_SSL_SHUTDOWN_FAILED, pycurl.E_SSL_CRL_BADFILE,
               pycurl.E_SSL_ISSUER_ERROR, pycurl.E_SSL_PINNEDPUBKEYNOTMATCH,
               pycurl.E_SSL_INVALIDCERTSTATUS, pycurl.E_SSL_CACERT, pycurl.E_USE_SSL_FAILED}
_RESET_ERRNOS = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED)
_RESETS = {pycurl.E_RECV_ERROR, pycurl.E_SEND_ERROR}
_CUT = {pycurl.E_GOT_NOTHING, pycurl.E_PARTIAL_FILE}
_WEIRD_SERVER_REPLY = 8                       # (pycurl names it E_FTP_WEIRD_SERVER_REPLY)
_PROTOCOL = {_WEIRD_SERVER_REPLY, pycurl.E_UNSUPPORTED_PROTOCOL, pycurl.E_HTTP_RETURNED_ERROR,
             100, pycurl.E_HTTP2, pycurl.E_BAD_CONTENT_ENCODING}   # (100: CURLE_TOO_LARGE)


class _Headers(dict):
    """A head's fields by lower-case name, repeated names joined by ", " (as urllib3's
    HTTPHeaderDict joins them), with the case-insensitive `get` the fetcher reads them by.
    (Not urllib3's HTTPHeaderDict: scratch timeit, a usual 8-field head
    read three times, 12.4-12.8 us with HTTPHeaderDict, 4.1-4.8 us for the whole
    CurlResponse with this.)"""

    def get(self, name: str, default=None):
        return dict.get(self, name.lower(), default)


class CurlResponse:
    """A finished libcurl exchange as the fetcher reads a streamed urllib3 response."""

    def __init__(self, status: int, version: int, reason: str, items: list[tuple[str, str]],
                 chunks: list[bytes]):
        self.status, self.reason = status, reason
        headers = _Headers()
        for name, value in items:
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        self.headers = headers
        self._original_response = Received(version, reason, items)
        self._chunks = chunks
        self._next = 0

    def read(self, amt: int, decode_content: bool = False) -> bytes:
        """The next piece of the body as received (at most `amt` bytes); b"" at its end."""
        i = self._next
        if i >= len(self._chunks):
            return b""
        chunk = self._chunks[i]
        if len(chunk) > amt:
            self._chunks[i] = chunk[amt:]
            return chunk[:amt]
        self._chunks[i] = b""
        self._next = i + 1
        return chunk

    def release_conn(self) -> None:
        self._chunks = []

    close = release_conn


class _Exchange:
    """What libcurl hands over during one transfer: the heads as received (libcurl writes
    them to `heads` itself: no Python call a line) and the body's pieces (`write`, which
    stops the transfer past what the fetcher's readers could take)."""

    __slots__ = ("heads", "chunks", "got", "max_bytes", "plain_max", "cut")

    def __init__(self, cap: int):
        self.heads = io.BytesIO()
        self.chunks: list[bytes] = []
        self.got = 0
        # what the fetcher's readers take at most of a body, with a read to spare:
        # connection.read_body up to its raw budget (a body without Content-Encoding: up to
        # the cap), connection.drain up to DRAIN_LIMIT
        self.max_bytes = max(2 * cap + READ_CHUNK, DRAIN_LIMIT) + 2 * READ_CHUNK
        self.plain_max = max(cap, DRAIN_LIMIT) + 2 * READ_CHUNK
        self.cut = False           # the body went past max_bytes: the transfer was stopped

    def write(self, data: bytes):
        if not self.got and b"\ncontent-encoding:" not in self.heads.getvalue().lower():
            self.max_bytes = min(self.max_bytes, self.plain_max)     # (the first piece)
        room = self.max_bytes - self.got
        if len(data) > room:
            if room > 0:
                self.chunks.append(data[:room])
            self.got = self.max_bytes
            self.cut = True
            return -1                      # CURLE_WRITE_ERROR: stop reading this body
        self.got += len(data)
        self.chunks.append(data)
        return None

    def progress(self) -> int:
        """Bytes received so far, head and body."""
        return self.heads.tell() + self.got


def origin(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, the URL without user:password@) of an http(s) URL; requests made
    a password in the URL an Authorization header. InvalidURL for anything else."""
    try:
        scheme, host, port = origin_port(url)
    except ValueError as e:
        raise rx.InvalidURL(str(e)) from e
    if "@" in url:                   # (no "@" anywhere: no user info to drop)
        parts = urlsplit(url)
        if "@" in parts.netloc:
            url = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    return scheme, host, port, url


def connect_to(host: str, port: int, addr: str) -> str:
    """libcurl's CONNECT_TO entry sending `host:port`'s requests to `addr` (IPv6 in brackets)."""
    name = f"[{host}]" if ":" in host else host
    dialled = f"[{addr}]" if ":" in addr else addr
    return f"{name}:{port}:{dialled}:{port}"


class CurlSender:
    """One fetcher's connections (a libcurl multi handle and its easy handle, whose connection
    cache keeps the keep-alive connections) and `send`. `dial(host, port)` resolves and
    guards. Not thread-safe: one fetcher, one thread."""

    def __init__(self, dial, verify: bool | str = True, guard=None):
        self._dial = dial
        self._guard = guard       # address -> None (allowed) or why not (netguard.AddressGuard.check)
        self._refused = None      # (address, reason) of the socket the guard refused last
        self.verify = verify
        self._ca = DEFAULT_CA_BUNDLE_PATH if verify is True else verify
        self._ca_found = verify is False or (bool(self._ca) and os.path.exists(self._ca))
        self._multi = None
        self._easy = None
        self._set = {}           # option -> the value the easy handle has (set again only on change)

    def _open(self):
        easy = pycurl.Curl()
        for opt, value in ((pycurl.NOSIGNAL, 1), (pycurl.FOLLOWLOCATION, 0), (pycurl.PROXY, ""),
                           (pycurl.NOPROXY, "*"), (pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1),
                           (pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS),
                           (pycurl.HTTP_CONTENT_DECODING, 0), (pycurl.PATH_AS_IS, 1),
                           (pycurl.TCP_NODELAY, 1)):
            easy.setopt(opt, value)
        if self._guard is not None:
            easy.setopt(pycurl.OPENSOCKETFUNCTION, self._open_socket)
        if self.verify is False:
            easy.setopt(pycurl.SSL_VERIFYPEER, 0)
            easy.setopt(pycurl.SSL_VERIFYHOST, 0)
        elif self._ca_found:
            easy.setopt(pycurl.CAPATH if os.path.isdir(self._ca) else pycurl.CAINFO, self._ca)
        self._easy, self._multi, self._set = easy, pycurl.CurlMulti(), {}
        return self._easy, self._multi

    def _open_socket(self, purpose, address):
        """libcurl's socket for a connection to `address`, if the guard allows the address
        (else none: the connect fails and `send` raises ForbiddenAddressError)."""
        family, socktype, protocol, sockaddr = address
        reason = self._guard(sockaddr[0])
        if reason is not None:
            self._refused = (sockaddr[0], reason)
            return pycurl.SOCKET_BAD
        return socket.socket(family, socktype, protocol)

    def clear(self) -> None:
        """Close every connection (the next request opens a new one)."""
        easy, multi = self._easy, self._multi
        self._easy = self._multi = None
        if easy is not None:
            easy.close()
        if multi is not None:
            multi.close()

    close = clear

    def send(self, prep, connect_timeout: float, read_timeout: float, deadline_at: float | None = None,
             body_cap: int | None = None):
        """The response to `prep` (a `prepared.Prepared`), its body as received up to what the
        fetcher's readers take of it for a decoded `body_cap` (default 10 MiB)."""
        scheme, host, port, url = origin(prep.url)
        addr = self._dial(host, port, deadline_at)   # ForbiddenAddressError / ResolveError
        if scheme == "https" and not self._ca_found:
            raise OSError(f"Could not find a suitable TLS CA certificate bundle, invalid path: {self._ca}")
        easy, multi = (self._easy, self._multi) if self._easy is not None else self._open()
        ex = _Exchange(body_cap if body_cap is not None else 10 << 20)
        self._set_request(easy, prep, url, connect_to(host, port, addr), ex, connect_timeout, deadline_at)
        multi.add_handle(easy)
        try:
            code, message = self._run(easy, multi, ex, read_timeout, deadline_at)
        finally:
            multi.remove_handle(easy)
        if code and not (code == pycurl.E_WRITE_ERROR and ex.cut):
            os_errno = easy.getinfo(pycurl.OS_ERRNO)
            self.clear()              # whatever broke, no connection of it is used again
            refused, self._refused = self._refused, None
            if refused is not None:
                raise ForbiddenAddressError(host, *refused)
            raise _translated(code, message, os_errno)
        try:
            version, reason, items = parse_head(ex.heads.getvalue())
        except BadHead as e:
            self.clear()
            if str(e).startswith("connection closed"):   # libcurl takes a cut head for a whole one
                raise rx.ConnectionError(http.client.RemoteDisconnected(str(e))) from e
            raise http.client.HTTPException(str(e)) from e
        return CurlResponse(easy.getinfo(pycurl.RESPONSE_CODE), version, reason, items, ex.chunks)

    def _setopt(self, easy, option, value) -> None:
        if self._set.get(option, self) != value:
            easy.setopt(option, value)
            self._set[option] = value

    def _set_request(self, easy, prep, url, dial_to, ex, connect_timeout, deadline_at):
        setopt = self._setopt
        easy.setopt(pycurl.URL, url)
        setopt(easy, pycurl.CONNECT_TO, (dial_to,))
        setopt(easy, pycurl.HTTPHEADER, tuple(f"{k}: {v}" if v != "" else f"{k};"
                                              for k, v in prep.headers.items()) + ("Expect:",))
        if prep.method == "GET" and prep.body is None:
            setopt(easy, pycurl.CUSTOMREQUEST, None)
            if self._set.get(pycurl.POST):
                easy.setopt(pycurl.HTTPGET, 1)
                self._set[pycurl.POST] = 0
        else:
            body = prep.body or b""
            easy.setopt(pycurl.POST, 1)
            self._set[pycurl.POST] = 1
            easy.setopt(pycurl.POSTFIELDSIZE, len(body))
            easy.setopt(pycurl.COPYPOSTFIELDS, body)
            setopt(easy, pycurl.CUSTOMREQUEST, None if prep.method == "POST" else prep.method)
        left = 0 if deadline_at is None else max(1, int((deadline_at - time.monotonic()) * 1000))
        easy.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(min(connect_timeout * 1000, left or 1 << 30))))
        easy.setopt(pycurl.TIMEOUT_MS, left)
        easy.setopt(pycurl.WRITEHEADER, ex.heads)
        easy.setopt(pycurl.WRITEFUNCTION, ex.write)

    @staticmethod
    def _run(easy, multi, ex: _Exchange, read_timeout: float, deadline_at: float | None):
        """Drive the transfer to its end: (libcurl's error code, message), (0, "") when done.
        A silence of `read_timeout` once connected ends it as a read timeout."""
        quiet_since = time.monotonic()
        seen = 0
        while True:
            while True:
                ret, active = multi.perform()
                if ret != pycurl.E_CALL_MULTI_PERFORM:
                    break
            if not active:
                break
            now = time.monotonic()
            if deadline_at is not None and now >= deadline_at:
                return pycurl.E_OPERATION_TIMEDOUT, "deadline"
            got = ex.progress()
            if got != seen:
                seen, quiet_since = got, now
            quiet = now - quiet_since
            if quiet >= read_timeout and easy.getinfo(pycurl.PRETRANSFER_TIME) > 0:
                return pycurl.E_OPERATION_TIMEDOUT, f"read timed out after {quiet:.3f} s"
            wait = min(_IDLE_POLL, read_timeout - quiet if quiet < read_timeout else _IDLE_POLL)
            if deadline_at is not None:
                wait = min(wait, deadline_at - now)
            hint = multi.timeout()
            if hint >= 0:
                wait = min(wait, hint / 1000)
            multi.select(max(wait, 0.0))
        _queued, done, failed = multi.info_read()
        if failed:
            _handle, code, message = failed[0]
            return code, message
        return 0, ""


def _translated(code: int, message: str, os_errno: int = 0) -> BaseException:
    """The exception (requests' kinds, as `connection.classify_exception` reads them) for a
    libcurl failure (`os_errno`: the socket's last error, as libcurl saw it)."""
    if code == pycurl.E_OPERATION_TIMEDOUT:
        if message == "deadline" or message.startswith("Operation timed out"):
            return DeadlineExceeded()           # (TIMEOUT_MS is what was left of the deadline)
        if message.startswith("read timed out"):
            return rx.ReadTimeout(message)
        if "onnect" in message or "Resolving" in message:     # "Connection timed out after ..."
            return rx.ConnectTimeout(message)
        return rx.ReadTimeout(message)
    if os_errno == errno.ECONNREFUSED:
        return rx.ConnectionError(ConnectionRefusedError(os_errno, message))
    if os_errno in _RESET_ERRNOS and code != pycurl.E_COULDNT_CONNECT:
        return rx.ConnectionError(ConnectionResetError(os_errno, message))
    if code == pycurl.E_COULDNT_CONNECT:
        return rx.ConnectionError(OSError(os_errno, message))
    if code in _TLS_ERRORS:
        return rx.SSLError(message)
    if code in _RESETS:
        return rx.ConnectionError(ConnectionResetError(message))
    if code in _CUT:
        return rx.ConnectionError(http.client.RemoteDisconnected(message))
    if code in _PROTOCOL:
        return http.client.HTTPException(message)
    if code == pycurl.E_URL_MALFORMAT:
        return rx.InvalidURL(message)
    return rx.ConnectionError(OSError(f"libcurl error {code}: {message}"))

