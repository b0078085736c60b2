"""One HTTP exchange as sent and received, for the WARC archive (pure; no Beam).

`http_exchange` runs only when `FetchConfig.keep_http` is on (`--store warc|both`). It
records what a WARC `request` and `response` record need and nothing the fetcher does not
already hold:

    request_line      "GET /path?q HTTP/1.1" ("POST /path HTTP/1.1" for a deep-web POST)
    request_body      the body sent (a POST's form-encoded fields), else None
    request_headers   [(name, value)] sent: Host first, then the session's and the request's
    status_line       "HTTP/1.1 200 OK", as received
    headers           [(name, value)] as received, in order, repeated names kept
    payload           the body as received (still content-encoded), or None when it is the
                      same bytes as the decoded body (no Content-Encoding): never a second copy
    payload_cut       the payload is not the whole body (body cap, or an error/redirect body
                      read only up to the drain limit)
    ip                the address the connection dialled

Bodies of non-2xx responses are read (up to the fetcher's drain limit) and kept here too.
"""
from __future__ import annotations

from urllib.parse import urlsplit


class Received:
    """A response as received, in the shape of http.client's where `http_exchange` reads it
    (`version`, `reason`, `msg.raw_items()`): the `_original_response` of the responses that
    `curlsender` builds."""

    def __init__(self, version: int, reason: str | None, items: list[tuple[str, str]]):
        self.version, self.reason, self._items = version, reason, items
        self.msg = self

    def raw_items(self):
        return self._items


def _received_headers(resp):
    """Header lines in the order and case they came (http.client's message), else urllib3's."""
    original = getattr(resp, "_original_response", None)
    msg = getattr(original, "msg", None)
    if msg is not None and hasattr(msg, "raw_items"):
        return [(str(k), str(v)) for k, v in msg.raw_items()]
    return [(str(k), str(v)) for k, v in resp.headers.items()]


def _status_line(resp):
    original = getattr(resp, "_original_response", None)
    version = {9: "HTTP/0.9", 10: "HTTP/1.0", 11: "HTTP/1.1"}.get(getattr(original, "version", 11), "HTTP/1.1")
    reason = getattr(original, "reason", None) or resp.reason or ""
    return f"{version} {resp.status} {reason}".rstrip()


def http_exchange(prep, resp, kept, body, cut, addresses=None) -> dict:
    """The exchange of `prepared.Prepared` `prep` and its response `resp` (a `CurlResponse`).

    `kept`: the raw chunks the body reader kept ([] when the body had no Content-Encoding,
    so the decoded `body` is the payload); `cut`: the payload is not the whole body."""
    parts = urlsplit(prep.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    netloc = parts.netloc.rsplit("@", 1)[-1]
    request_headers = [("Host", netloc)] + [(k, v) for k, v in prep.headers.items() if k.lower() != "host"]
    payload = b"".join(kept) if kept else None
    if payload is None and body == b"" and kept is not None:
        payload = b""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    body = prep.body.encode("utf-8") if isinstance(prep.body, str) else prep.body
    return {
        "request_line": f"{prep.method} {target} HTTP/1.1",
        "request_body": body or None,       # a POST's form-encoded body, as sent
        "request_headers": request_headers,
        "status_line": _status_line(resp),
        "headers": _received_headers(resp),
        "payload": payload,
        "payload_cut": bool(cut),
        "ip": (addresses or {}).get(((parts.hostname or "").lower(), port)),
    }
