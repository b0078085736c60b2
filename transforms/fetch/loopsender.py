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

import aiohttp
import yarl
from requests import exceptions as rx
from requests.utils import DEFAULT_CA_BUNDLE_PATH
from urllib3 import HTTPHeaderDict
from urllib3.util.ssl_ import create_urllib3_context

from transforms.fetch.connection import DeadlineExceeded
from transforms.fetch.greenpool import await_only

_RESET = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED)


class _GuardedResolver(aiohttp.abc.AbstractResolver):
    """aiohttp's name lookup, answered by the fetcher's guarded `dial(host, port)`."""

    def __init__(self, dial, known):
        self._dial, self._known = dial, known

    async def resolve(self, host, port=0, family=socket.AF_INET):
        if self._known(host, port):
            addr = self._dial(host, port)
        else:      # a real DNS lookup: in a worker thread, the loop serves the other hosts
            addr = await asyncio.get_running_loop().run_in_executor(None, self._dial, host, port)
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        return [{"hostname": host, "host": addr, "port": port, "family": fam, "proto": 0,
                 "flags": socket.AI_NUMERICHOST | socket.AI_NUMERICSERV}]

    async def close(self):
        pass


class _Received:
    """The response as received, where `exchange.http_exchange` looks for http.client's."""

    def __init__(self, version: int, reason: str | None, items: list[tuple[str, str]]):
        self.version, self.reason, self._items = version, reason, items
        self.msg = self

    def raw_items(self):
        return self._items


class LoopResponse:
    """An aiohttp response as the fetcher reads a urllib3 one (body not read yet)."""

    def __init__(self, resp: aiohttp.ClientResponse, deadline_at: float | None):
        self._resp, self._deadline_at = resp, deadline_at
        items = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers]
        self.status, self.reason = resp.status, resp.reason
        self.headers = HTTPHeaderDict(items)
        version = resp.version
        self._original_response = _Received(10 * version.major + version.minor if version else 11,
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


class LoopSender:
    """One fetcher's connections on the pool's loop (one aiohttp session, created on first
    use) and `send`. `dial(host, port)` resolves and guards; `known(host, port)` says it
    needs no DNS lookup. Not thread-safe: one fetcher, one greenlet."""

    def __init__(self, dial, known, verify: bool | str = True):
        self._dial, self._known = dial, known
        self._where = DEFAULT_CA_BUNDLE_PATH if verify is True else verify
        self._ssl = _ssl_context(verify)
        self._session: aiohttp.ClientSession | None = None

    def _open_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=0, limit_per_host=0, use_dns_cache=False, ssl=self._ssl if self._ssl is not None else True,
            resolver=_GuardedResolver(self._dial, self._known), enable_cleanup_closed=False)
        return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                     auto_decompress=False, trust_env=False, timeout=aiohttp.ClientTimeout(),
                                     skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"))

    def clear(self) -> None:
        """Close every connection (the next request opens a new one)."""
        session, self._session = self._session, None
        if session is not None:
            await_only(session.close())

    close = clear

    def send(self, prep, connect_timeout: float, read_timeout: float, deadline_at: float | None = None):
        """The response to `prep` (a `sender.Prepared`) with its headers read, body unread."""
        try:
            url = yarl.URL(prep.url, encoded=True)
            if url.user is not None or url.password is not None:
                url = url.with_user(None)       # requests made it an Authorization header
        except (ValueError, TypeError) as e:
            raise rx.InvalidURL(str(e)) from e
        if self._ssl is None and url.scheme == "https":
            raise OSError(f"Could not find a suitable TLS CA certificate bundle, invalid path: {self._where}")
        if self._session is None:
            self._session = self._open_session()
        timeout = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=connect_timeout,
                                        sock_read=read_timeout)
        resp = await_only(_bounded(self._session.request(
            prep.method, url, headers=prep.headers, data=prep.body, allow_redirects=False,
            timeout=timeout, compress=None, chunked=None), deadline_at))
        return LoopResponse(resp, deadline_at)


def _ssl_context(verify: bool | str) -> ssl.SSLContext | bool | None:
    """requests' verification: certifi's bundle, or a --ca_bundle file or directory; None
    when that path does not exist."""
    if verify is False:
        return False
    ctx = create_urllib3_context()
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    where = DEFAULT_CA_BUNDLE_PATH if verify is True else verify
    if os.path.isdir(where):
        ctx.load_verify_locations(capath=where)
    elif os.path.exists(where):
        ctx.load_verify_locations(cafile=where)
    else:
        return None       # (raised on the first https request, as requests raised it)
    return ctx
