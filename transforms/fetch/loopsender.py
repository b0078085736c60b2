"""`sender.Sender`'s interface over aiohttp, for a fetcher running as a `greenpool` job.

`LoopSender.send` returns a response with the part of urllib3's streamed response the
fetcher reads (`status`, `headers`, `read(n)`, `close`, `release_conn`, and what
`exchange.http_exchange` records), and raises what `Sender.send` raises: requests' exceptions
or the fetcher's own (`ForbiddenAddressError`, `ResolveError`, `DeadlineExceeded`), so
`connection.classify_exception` classifies both engines' failures alike.

aiohttp (maintained, asyncio's most used HTTP client) parses responses with llhttp, Node.js'
C parser, in its lenient mode for responses, as browsers are lenient; its headers are
decoded here as ISO-8859-1, as http.client decodes them.

Kept from the threaded fetcher:
- every new connection dials the address the fetcher resolved and guarded (`_GuardedResolver`
  calls the fetcher's `dial`; DNS lookups run in a worker thread, never on the loop);
- TLS verifies the host name against certifi's bundle or --ca_bundle, as requests does;
- the whole-request deadline bounds every wait (connect, headers, each body read); the
  connect and read timeouts bound each socket wait;
- no cookies, no redirects followed, no proxies or netrc from the environment, no
  decompression here (the fetcher's bounded decoder does it).
"""
from __future__ import annotations

import asyncio
import errno
import http.client
import os
import socket
import ssl
import threading

import aiohttp
import yarl
from requests import exceptions as rx
from requests.utils import DEFAULT_CA_BUNDLE_PATH
from urllib3 import HTTPHeaderDict
from urllib3.util.ssl_ import create_urllib3_context

from transforms.fetch.connection import DeadlineExceeded
from transforms.fetch.exchange import Received
from transforms.fetch.greenpool import await_only

_RESET = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED)
_MAX_LINE = http.client._MAXLINE          # 65 536
_MAX_HEADERS = http.client._MAXHEADERS - 1   # 99: http.client counts the blank line too


class _GuardedResolver(aiohttp.abc.AbstractResolver):
    """aiohttp's name lookup, answered by the fetcher's guarded `dial(host, port)`."""

    def __init__(self, dial, known):
        self._dial, self._known = dial, known

    async def resolve(self, host, port=0, family=socket.AF_INET):
        addr = await dial_on_loop(self._dial, self._known, host, port)
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        return [{"hostname": host, "host": addr, "port": port, "family": fam, "proto": 0,
                 "flags": socket.AI_NUMERICHOST | socket.AI_NUMERICSERV}]

    async def close(self):
        pass


class LoopResponse:
    """An aiohttp response as the fetcher reads a urllib3 one (body not read yet)."""

    def __init__(self, resp: aiohttp.ClientResponse, deadline_at: float | None):
        self._resp, self._deadline_at = resp, deadline_at
        items = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers]
        self.status, self.reason = resp.status, resp.reason
        self.headers = HTTPHeaderDict(items)
        version = resp.version
        self._original_response = Received(10 * version.major + version.minor if version else 11,
                                            resp.reason, items)

    def read(self, amt: int, decode_content: bool = False) -> bytes:
        return await_only(_bounded(self._resp.content.read(amt), self._deadline_at))

    def release_conn(self) -> None:
        self._resp.release()

    def close(self) -> None:
        self._resp.close()        # the connection too: the rest of the body is unread


async def _bounded(awaitable, deadline_at: float | None):
    """`awaitable`'s result, or DeadlineExceeded once the request's deadline passes (the
    loop's clock is time.monotonic, the fetcher's); aiohttp's failures raised as
    `Sender.send` raises them."""
    cm = asyncio.timeout_at(deadline_at)
    try:
        async with cm:
            return await awaitable
    except TimeoutError as e:
        if cm.expired():
            raise DeadlineExceeded() from e
        raise _translated(e) from e
    except (aiohttp.ClientError, ssl.SSLError, ssl.CertificateError, OSError, ValueError) as e:
        raise _translated(e) from e


def green_sleep(seconds: float) -> None:
    """A green fetcher's pause: the loop serves the other hosts meanwhile."""
    await_only(asyncio.sleep(seconds))


async def dial_on_loop(dial, known, host: str, port: int) -> str:
    """`dial(host, port)` without blocking the loop: inline when `known(host, port)` says it
    needs no DNS lookup, else in a worker thread while the loop serves the other hosts."""
    if known(host, port):
        return dial(host, port)
    return await asyncio.get_running_loop().run_in_executor(None, dial, host, port)


def _translated(e: BaseException) -> BaseException:
    """The exception `Sender.send` (urllib3 through requests' mapping) raises for the same
    failure; the original stays chained (`__cause__`), where the classifier finds
    ForbiddenAddressError, ResolveError or ConnectionRefusedError too."""
    if isinstance(e, aiohttp.ConnectionTimeoutError):
        return rx.ConnectTimeout(str(e))
    if isinstance(e, (aiohttp.SocketTimeoutError, aiohttp.ServerTimeoutError, TimeoutError)):
        return rx.ReadTimeout(str(e))
    if isinstance(e, (aiohttp.ClientSSLError, ssl.SSLError, ssl.CertificateError)):
        return rx.SSLError(str(e))
    if isinstance(e, aiohttp.ClientConnectorError):
        return rx.ConnectionError(e.os_error)        # refused, unreachable, ...
    if isinstance(e, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError)):
        return rx.ConnectionError(http.client.RemoteDisconnected(str(e)))   # reset mid-response
    if isinstance(e, OSError) and e.errno in _RESET:
        return rx.ConnectionError(ConnectionResetError(e.errno, str(e)))
    if isinstance(e, aiohttp.ClientResponseError):
        return http.client.HTTPException(str(e))    # a response the parser rejects
    if isinstance(e, (aiohttp.InvalidURL, ValueError)):
        return rx.InvalidURL(str(e))
    return rx.ConnectionError(str(e))


class TlsContext:
    """The TLS settings of requests' verification (certifi's bundle, or a --ca_bundle file or
    directory), built on the first https request and shared by the fetchers of a worker
    (loading the bundle costs milliseconds: once per host fetcher, it was most of the fetch
    process's time). A bundle path that does not exist fails each https request, as in
    requests. Thread-safe."""

    def __init__(self, verify: bool | str = True):
        self.verify = verify
        self._ctx: ssl.SSLContext | None = None
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"verify": self.verify}

    def __setstate__(self, state):
        self.__init__(state["verify"])

    def __call__(self) -> ssl.SSLContext | bool:
        if self.verify is False:
            return False
        with self._lock:
            if self._ctx is None:
                where = DEFAULT_CA_BUNDLE_PATH if self.verify is True else self.verify
                if not os.path.exists(where):
                    raise OSError(f"Could not find a suitable TLS CA certificate bundle, invalid path: {where}")
                ctx = create_urllib3_context()
                ctx.check_hostname = True
                ctx.verify_mode = ssl.CERT_REQUIRED
                if os.path.isdir(where):
                    ctx.load_verify_locations(capath=where)
                else:
                    ctx.load_verify_locations(cafile=where)
                self._ctx = ctx
            return self._ctx


class LoopSender:
    """One fetcher's connections on the pool's loop (one aiohttp session, created on first
    use) and `send`. `dial(host, port)` resolves and guards; `known(host, port)` says it
    needs no DNS lookup; `tls` gives https requests their `TlsContext`. Not thread-safe:
    one fetcher, one greenlet."""

    bounds_deadline = True      # every wait on the loop is bounded by deadline_at

    def __init__(self, dial, known, tls: TlsContext):
        self._dial, self._known, self._tls = dial, known, tls
        self._session: aiohttp.ClientSession | None = None

    def _open_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=0, limit_per_host=0, use_dns_cache=False, enable_cleanup_closed=False,
            resolver=_GuardedResolver(self._dial, self._known))
        return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                     auto_decompress=False, trust_env=False, timeout=aiohttp.ClientTimeout(),
                                     skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
                                     # http.client's limits (a header line up to 64 KiB), not 8 KiB
                                     max_line_size=_MAX_LINE, max_field_size=_MAX_LINE,
                                     max_headers=_MAX_HEADERS)

    def clear(self) -> None:
        """Close every connection (the next request opens a new one)."""
        session, self._session = self._session, None
        if session is not None:
            await_only(session.close())

    close = clear

    def send(self, prep, connect_timeout: float, read_timeout: float, deadline_at: float | None = None,
             body_cap: int | None = None):
        """The response to `prep` (a `sender.Prepared`) with its headers read, body unread
        (streamed: `body_cap` is for `CurlSender`)."""
        try:
            url = yarl.URL(prep.url, encoded=True)
            if url.user is not None or url.password is not None:
                url = url.with_user(None)       # requests made it an Authorization header
        except (ValueError, TypeError) as e:
            raise rx.InvalidURL(str(e)) from e
        tls = self._tls() if url.scheme == "https" else True
        if self._session is None:
            self._session = self._open_session()
        timeout = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=connect_timeout,
                                        sock_read=read_timeout)
        resp = await_only(_bounded(self._session.request(
            prep.method, url, headers=prep.headers, data=prep.body, allow_redirects=False,
            timeout=timeout, ssl=tls), deadline_at))
        return LoopResponse(resp, deadline_at)
