"""WARC 1.1 records of a round's fetches, and their CDXJ index lines (pure; no Beam).

Per fetch (`capture`: an archived entry of transforms.page.fate) three records, each its
own gzip member, in Common Crawl's order:

    request   the HTTP request line and headers sent (WARC-Concurrent-To: the response);
              a deep-web POST's (--deep_web_post_hosts) with its form-encoded body as payload
    response  the status line and headers as received, then the payload as received
              (still Content-Encoding'd); WARC-IP-Address; WARC-Truncated: length when the
              body was cut (body cap, or a non-2xx body read only up to the drain limit)
    (revisit  instead of the response when the server answered 304 Not Modified to a
              revisit's validators (--mode incremental): the status line and headers, no
              payload, WARC-Profile server-not-modified, WARC-Refers-To-Target-URI the URL)
    metadata  application/warc-fields: `fetchTimeMs: N` and one `outlink: URL HOP` per link
              the page gave (HOP: L link, R redirect, S sitemap entry, X child sitemap),
              WARC-Concurrent-To: the response

A file starts with a `warcinfo` record. The payload is stored de-chunked, so a received
`Transfer-Encoding` header is kept as `X-Crawler-Transfer-Encoding` (as Common Crawl does).

CDXJ: one line per response record, `SURT-KEY TIMESTAMP14 {json}` with url, mime, status,
digest, length, offset and filename (pywb's fields), sorted by key then time. A POST is
indexed as pywb does (`post_query_url`: its body and `__wb_method=post` in the key's query),
with `method` and `requestBody` fields.
"""
from __future__ import annotations

import io
import json
import time
from datetime import datetime, timezone
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

SOFTWARE = "beamcrawl/0.1 (+https://github.com/beamcrawl/beamcrawl)"
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
DATED = "%Y%m%d%H%M%S"


def surt(url: str) -> str:
    """The SURT key of `url` as pywb/cdxj-indexer write it for plain URLs: lower case, host
    reversed with commas and without a leading www, default port dropped, query sorted:
    http://www.Example.org:80/a?b=2&a=1 -> org,example)/a?a=1&b=2"""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower().strip(".")
    if host.startswith("www.") or (host.startswith("www") and host[3:4].isdigit() and "." in host):
        host = host.split(".", 1)[1]
    labels = host.split(".")
    key = ",".join(reversed(labels))
    port = parts.port
    if port and port != {"http": 80, "https": 443}.get(parts.scheme.lower()):
        key += f":{port}"
    path = parts.path or "/"
    query = ""
    if parts.query:
        query = "?" + "&".join(sorted(parts.query.split("&")))
    return (key + ")" + path + query).lower()


def timestamp14(t: float) -> str:
    return time.strftime(DATED, time.gmtime(t))


def warc_date(t: float) -> str:
    return datetime_to_iso_date(datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=None), use_micros=True)


def _stored_headers(headers):
    return [("X-Crawler-Transfer-Encoding" if k.lower() == "transfer-encoding" else k, v)
            for k, v in headers]


def _media_type(headers):
    for k, v in headers:
        if k.lower() == "content-type":
            return v.split(";")[0].strip().lower() or "unk"
    return "unk"


class _Counting:
    """A write-only file wrapper that counts bytes (record offsets)."""

    def __init__(self, out):
        self.out, self.pos = out, 0

    def write(self, data):
        self.out.write(data)
        self.pos += len(data)
        return len(data)

    def flush(self):
        pass


class WarcFile:
    """One open WARC file: `add(capture)` writes its three records and returns its CDXJ
    line; `size` is the bytes written so far. The caller owns (and closes) `out`."""

    def __init__(self, out, filename: str, info: dict | None = None):
        self.filename = filename
        self._out = _Counting(out)
        self._writer = WARCWriter(self._out, gzip=True, warc_version="1.1")
        self.records = 0
        fields = {"software": SOFTWARE, "format": "WARC File Format 1.1",
                  "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"}
        fields.update(info or {})
        record = self._writer.create_warcinfo_record(filename, fields)
        self._info_id = record.rec_headers.get_header("WARC-Record-ID")
        self._write(record)

    @property
    def size(self) -> int:
        return self._out.pos

    def _write(self, record):
        start = self._out.pos
        self._writer.write_record(record)
        self.records += 1
        return start, self._out.pos - start

    def add(self, capture: dict) -> str:
        """Write `capture`'s request, response and metadata records; its CDXJ line."""
        http, url, when = capture["http"], capture["url"], capture["fetch_time"]
        date = warc_date(when)
        common = {"WARC-Date": date, "WARC-Warcinfo-ID": self._info_id}
        protocol, _, status = http["status_line"].partition(" ")
        headers = _stored_headers(http["headers"])
        response_headers = dict(common)
        if http.get("ip"):
            response_headers["WARC-IP-Address"] = http["ip"]
        if http.get("payload_cut"):
            response_headers["WARC-Truncated"] = "length"
        payload = capture["payload"] or b""
        code = status.split(" ")[0]
        if code == "304":    # WARC 1.1 6.7.2: a revisit, the server said the content is unchanged
            response = self._writer.create_warc_record(
                url, "revisit", http_headers=StatusAndHeaders(status, headers, protocol=protocol),
                warc_headers_dict=dict(response_headers, **{
                    "WARC-Profile": NOT_MODIFIED_PROFILE, "WARC-Refers-To-Target-URI": url}))
        else:
            response = self._writer.create_warc_record(
                url, "response", payload=io.BytesIO(payload), length=None,
                http_headers=StatusAndHeaders(status, headers, protocol=protocol),
                warc_headers_dict=response_headers)
        response_id = response.rec_headers.get_header("WARC-Record-ID")
        sent = http.get("request_body")     # a POST's body: the request record's payload
        request = self._writer.create_warc_record(
            url, "request", http_headers=StatusAndHeaders(http["request_line"], http["request_headers"],
                                                          is_http_request=True),
            **({"payload": io.BytesIO(sent), "length": None} if sent else {}),
            warc_headers_dict=dict(common, **{"WARC-Concurrent-To": response_id}))
        self._write(request)
        offset, length = self._write(response)
        lines = [f"fetchTimeMs: {int(capture.get('elapsed_ms') or 0)}"]
        lines += [f"outlink: {u} {hop}" for u, hop in capture.get("outlinks") or ()]
        self._write(self._writer.create_warc_record(
            url, "metadata", payload=io.BytesIO(("\r\n".join(lines) + "\r\n").encode("utf-8")),
            warc_content_type="application/warc-fields",
            warc_headers_dict=dict(common, **{"WARC-Concurrent-To": response_id})))
        key = surt(url)
        if sent:   # pywb's convention: a POST's index key carries its method and form body
            key = surt(post_query_url(url, sent))
        fields = {"url": url, "mime": "warc/revisit" if code == "304" else _media_type(http["headers"]),
                  "status": code, "digest": response.rec_headers.get_header("WARC-Payload-Digest")
                  or response.rec_headers.get_header("WARC-Block-Digest"),
                  "length": str(length), "offset": str(offset), "filename": self.filename}
        if sent:
            fields["method"] = http["request_line"].split(" ", 1)[0]
            fields["requestBody"] = sent.decode("utf-8", "replace")
        return cdxj_line(key, timestamp14(when), fields)


def post_query_url(url: str, body: bytes) -> str:
    """The URL a POST is indexed under (pywb): its form body and ``__wb_method=post`` as
    query parameters, so each submission has its own key and a GET lookup of the URL
    never returns a POST's answer."""
    extra = "__wb_method=post&" + body.decode("utf-8", "replace")
    return url + ("&" if "?" in url else "?") + extra


def cdxj_line(key: str, stamp: str, fields: dict) -> str:
    return f"{key} {stamp} {json.dumps(fields, sort_keys=True)}"


def sort_index(lines) -> list:
    """CDXJ lines in index order: by key, then timestamp (then the rest)."""
    return sorted(lines)


def parse_cdxj(line: str):
    """(key, timestamp, fields) of one CDXJ line."""
    key, stamp, rest = line.rstrip("\n").split(" ", 2)
    return key, stamp, json.loads(rest)


def lookup(lines: list, url: str) -> list:
    """The (timestamp, fields) of `url`'s captures in sorted CDXJ `lines` (binary search on
    the SURT key; an exact URL match is preferred over other URLs of the same key)."""
    import bisect
    key = surt(url)
    i = bisect.bisect_left(lines, key + " ")
    found = []
    while i < len(lines) and lines[i].startswith(key + " "):
        _, stamp, fields = parse_cdxj(lines[i])
        found.append((stamp, fields))
        i += 1
    exact = [f for f in found if f[1].get("url") == url]
    return exact or found
