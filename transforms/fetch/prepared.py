"""A request as it goes out: what requests' `Session.prepare_request` would build (pure: no Beam).

The fetcher sends through libcurl (`curlsender`) but keeps requests' rules for what it sends:
the URL as requests prepares it (a URL requests would leave as it is takes a fast path that
checks so; any other URL is prepared by requests' own `PreparedRequest`), headers checked and
merged as requests merges them, and a password in the URL as Basic auth.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import requests
from requests.utils import check_header_validity


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
