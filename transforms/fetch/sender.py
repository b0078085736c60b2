"""A fetcher's keep-alive connections and one request sent over them (urllib3, pure).

The fetcher used requests' `HTTPAdapter` over urllib3. For one GET of a page from a local
server, requests' layer (preparing the request, choosing the pool, copying the response
into a `requests.Response` with a cookie jar) cost about as much CPU as urllib3's own work
(py-spy and cProfile of `HostFetcher`, 2 000 pages from nginx). The fetcher now calls
urllib3 itself and keeps what it relied on requests for:

- `prepare_request`: the URL sent is the one requests prepares (a URL requests would leave
  as it is takes a fast path that checks so; any other URL is prepared by requests' own
  `PreparedRequest`), headers are checked and merged as requests merges them, and a
  password in the URL becomes Basic auth;
- `Sender.send`: the pool for the URL's scheme, host and port with requests' TLS settings
  (certifi's bundle, or --ca_bundle), one `urlopen` with no retries and no redirects, and
  urllib3's failures raised as the requests exceptions the adapter raised, so
  `connection.classify_exception` classifies them as before;
- every connection dials the address the fetcher resolved and guarded (`_DialMixin`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlparse

import requests
from requests import exceptions as rx
from requests.utils import DEFAULT_CA_BUNDLE_PATH, check_header_validity
from urllib3 import exceptions as ux
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.poolmanager import PoolManager
from urllib3.util import Retry, Timeout

from transforms.fetch import headerparse

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


# ----------------------------------------------------------------- preparing a request

@dataclass
class Prepared:
    """A request as it goes out: `headers` in the order sent (http.client adds Host)."""
    method: str
    url: str
    headers: dict
    body: bytes | None
    path_url: str           # the request target: path[?query]


# A URL requests' preparation leaves unchanged: lower-case http(s) scheme and ASCII host, a
# port without leading zeros, no user info, a path of characters that need no quoting, no
# '%', no fragment. (Checked against requests: tests/unit/test_prepare_request.py.)
_PLAIN = re.compile(r"(?:http|https)://[a-z0-9][a-z0-9.-]*(?::([1-9][0-9]{0,4}))?"
                    r"(/[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*)\Z")


def _plain_target(url: str) -> str | None:
    """The request target of a URL requests would send as it is, else None."""
    m = _PLAIN.match(url)
    if m is None:
        return None
    port, target = m.groups()
    if "/." in target or url.endswith("?") or (port is not None and int(port) > 65535):
        return None          # dot segments, an empty query, a bad port: requests' way
    return target


def _merged(base_headers: dict, headers: dict | None) -> dict:
    """The session's headers, then the request's (a None value removes one), as requests'
    CaseInsensitiveDict merges them: a name keeps its first place and its last spelling."""
    store = {k.lower(): (k, v) for k, v in base_headers.items()}
    for k, v in (headers or {}).items():
        store[k.lower()] = (k, v)
    out = {}
    for k, v in store.values():
        if v is not None:
            check_header_validity((k, v))      # requests.exceptions.InvalidHeader
            out[k] = v
    return out


def prepare_request(method: str, url: str, base_headers: dict, headers: dict | None = None,
                    data: bytes | None = None) -> Prepared:
    """What requests' `Session.prepare_request` builds for the fetcher's sessions (no
    cookies, auth, hooks or params): same method, URL, headers (names, values, order), body
    and target. Raises requests' InvalidURL / InvalidHeader as it does."""
    method = method.upper()
    if data is None and method == "GET":        # (any other method gets a Content-Length)
        target = _plain_target(url)
        if target is not None:
            return Prepared(method, url, _merged(base_headers, headers), None, target)
    p = requests.PreparedRequest()
    p.prepare_method(method)
    p.prepare_url(url, None)     # first, as requests: a bad URL is InvalidURL whatever the headers
    p.prepare_headers(_merged(base_headers, headers))
    p.prepare_body(data, None, None)
    p.prepare_auth(None, url)
    return Prepared(p.method, p.url, dict(p.headers.items()), p.body, p.path_url)


# ----------------------------------------------------------------- sending it

class Sender:
    """One fetcher's connections (`pools` keep-alive pools of one connection each) and
    `send`, which does for a `Prepared` what requests' `HTTPAdapter.send` did. Not
    thread-safe: one fetcher, one thread."""

    bounds_deadline = False     # a blocked socket read: the fetcher's watchdog shuts it down

    def __init__(self, dial, watch, verify: bool | str = True, pools: int = 4):
        headerparse.install()   # http.client's header parse without the email package
        self.verify = verify
        self._pools = _DialPoolManager(num_pools=pools, maxsize=1, block=False, dial=dial, watch=watch)
        self._last_pool = None   # (origin, its pool): see _pool
        self._retries = Retry(0, read=False)
        # where an https pool finds its CAs, looked up once (requests' adapter did per request)
        self._ca = DEFAULT_CA_BUNDLE_PATH if verify is True else verify
        self._ca_found = bool(self._ca) and os.path.exists(self._ca)
        self._ca_is_dir = self._ca_found and os.path.isdir(self._ca)
        self._pool_kwargs = {"cert_reqs": "CERT_REQUIRED"}
        if isinstance(verify, str):
            self._pool_kwargs["ca_cert_dir" if self._ca_is_dir else "ca_certs"] = verify

    def clear(self) -> None:
        """Close every connection (the next request opens a new one)."""
        self._last_pool = None
        self._pools.clear()

    close = clear

    def send(self, prep: Prepared, connect_timeout: float, read_timeout: float,
             deadline_at: float | None = None, body_cap: int | None = None):
        """The streamed urllib3 response (body unread, not decoded). (The whole-request
        deadline is the fetcher's watchdog's here: `deadline_at` is for `LoopSender`;
        `body_cap` for `CurlSender`, which reads the body before it returns.)"""
        try:
            pool = self._pool(prep.url)
        except ux.LocationValueError as e:
            raise rx.InvalidURL(e) from e
        chunked = not (prep.body is None or any(k.lower() == "content-length" for k in prep.headers))
        try:
            return pool.urlopen(
                method=prep.method, url=prep.path_url, body=prep.body, headers=prep.headers,
                redirect=False, assert_same_host=False, preload_content=False,
                decode_content=False, retries=self._retries,
                timeout=Timeout(connect=connect_timeout, read=read_timeout), chunked=chunked)
        except (ux.ProtocolError, OSError) as e:          # the adapter's mapping, in its order
            raise rx.ConnectionError(e) from e
        except ux.MaxRetryError as e:
            if isinstance(e.reason, ux.ConnectTimeoutError) and not isinstance(e.reason, ux.NewConnectionError):
                raise rx.ConnectTimeout(e) from e
            if isinstance(e.reason, ux.ResponseError):
                raise rx.RetryError(e) from e
            if isinstance(e.reason, ux.SSLError):
                raise rx.SSLError(e) from e
            raise rx.ConnectionError(e) from e
        except ux.ClosedPoolError as e:
            raise rx.ConnectionError(e) from e
        except ux.SSLError as e:
            raise rx.SSLError(e) from e
        except ux.ReadTimeoutError as e:
            raise rx.ReadTimeout(e) from e
        except ux.InvalidHeader as e:
            raise rx.InvalidHeader(e) from e

    def _pool(self, url: str):
        """The pool for the URL's origin, with the TLS settings requests' adapter gives it.
        The last origin's pool is kept until `clear` (or another origin): a fetcher asks for
        one host's pool request after request, and the pool manager's lookup (key
        normalisation, LRU) cost ~40 of a request's ~500 us under cProfile. (The manager
        drops a pool only for a fifth origin, never the one asked for last.)"""
        parsed = urlparse(url)
        scheme = parsed.scheme.lower()
        key = (scheme, parsed.hostname, parsed.port)
        last = self._last_pool
        if last is not None and last[0] == key and last[1].pool is not None:   # (None: closed)
            return last[1]
        pool = self._pools.connection_from_host(parsed.hostname, port=parsed.port, scheme=scheme,
                                                pool_kwargs=self._pool_kwargs)
        if scheme == "https" and self.verify:
            if not self._ca_found:
                raise OSError(f"Could not find a suitable TLS CA certificate bundle, invalid path: {self._ca}")
            pool.cert_reqs = "CERT_REQUIRED"
            if self._ca_is_dir:
                pool.ca_cert_dir = self._ca
            else:
                pool.ca_certs = self._ca
        else:
            pool.cert_reqs, pool.ca_certs, pool.ca_cert_dir = "CERT_NONE", None, None
        self._last_pool = (key, pool)
        return pool
