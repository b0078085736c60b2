"""HostFetcher and the fetch step's FetchHosts against loopback servers started here (bounded in time)."""
import gzip
import pickle
import ssl
import time
import zlib

import pyarrow as pa
import pytest

from schemas import tables
from schemas.tables import FORBIDDEN_ADDRESS, HTTP_ERROR, NOT_MODIFIED, OK, REDIRECT
from tests.unit.httpfixtures import (MAX_HANDLER_SECONDS, LocalServer, hang, loopback_config, page, raw_body,
                                     reset_mid_body, self_signed_cert, sequence, status, streamed, trickle)
from transforms.fetch.httpbody import parse_content_encoding
from transforms.fetch.records import TRANSIENT, FetchConfig, FetchRequest, HostState
from transforms.fetch.step import FetchHosts
from transforms.fetch import hostfetcher
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.connection import media_type, parse_retry_after
from transforms.fetch.httpbody import BoundedDecoder, decompress_bounded
from transforms.fetch.netguard import Resolver

NO_ROBOTS = {"/robots.txt": status(404)}


def fetch(srv, paths, state=None, name="site.test", **cfg):
    host = f"{name}:{srv.port}"
    config = loopback_config({name: srv}, **cfg)
    with HostFetcher(config) as f:
        reqs = [p if isinstance(p, FetchRequest) else FetchRequest(f"http://{host}{p}", i)
                for i, p in enumerate(paths)]
        return f.fetch_host(host, reqs, state)


def gaps(times):
    return [b - a for a, b in zip(times, times[1:])]


# ----------------------------------------------------------------- politeness

def test_requests_to_a_host_are_spaced_by_the_delay_robots_included():
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        results, state = fetch(srv, ["/a", "/b", "/c"], delay_per_host=0.3)
        times = srv.times()
    assert [r.outcome for r in results] == [OK, OK, OK]
    assert len(times) == 4 and min(gaps(times)) >= 0.29
    assert state.fetches == 4 and state.errors == 0 and state.last_fetch_time >= times[-1]


def test_previous_round_last_fetch_time_is_respected():
    with LocalServer({"*": page(b"ok")}) as srv:
        t0 = time.time()
        fetch(srv, ["/a"], state=HostState("x", last_fetch_time=t0), delay_per_host=0.4, obey_robots=False)
        assert srv.times()[0] - t0 >= 0.39


def test_crawl_delay_raises_the_gap():
    with LocalServer({"/robots.txt": page(b"User-agent: *\nCrawl-delay: 0.4\n"), "*": page(b"ok")}) as srv:
        results, state = fetch(srv, ["/a", "/b"], delay_per_host=0.01)
        times = srv.times()
    assert min(gaps(times)) >= 0.39 and state.crawl_delay == 0.4


def test_crawl_delay_above_the_cap_defers_the_host():
    with LocalServer({"/robots.txt": page(b"User-agent: *\nCrawl-delay: 100\n"), "*": page(b"ok")}) as srv:
        results, state = fetch(srv, ["/a", "/b"], max_crawl_delay=30)
        assert srv.paths() == ["/robots.txt"]
    assert [(r.outcome, r.reason) for r in results] == [(TRANSIENT, "crawl_delay_too_long")] * 2
    assert state.crawl_delay == 100


def test_keep_alive_one_connection_for_the_host():
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        fetch(srv, ["/a", "/b", "/c"])
        assert srv.connections == 1


def test_identifying_user_agent_and_host_header():
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        fetch(srv, ["/a"])
        headers = srv.requests[-1][3]
    assert headers["User-Agent"].startswith("beamcrawl/") and "+http" in headers["User-Agent"]
    assert headers["Host"] == f"site.test:{srv.port}"
    assert "gzip" in headers["Accept-Encoding"]


# ----------------------------------------------------------------- address guard

def test_loopback_is_refused_unless_allowed():
    with LocalServer({"*": page(b"ok")}) as srv:
        results, state = fetch(srv, ["/a", "/b"], allow_loopback=False)
        assert srv.connections == 0
    assert [(r.outcome, r.reason) for r in results] == [(FORBIDDEN_ADDRESS, "loopback")] * 2
    assert state.fetches == 0 and state.address == "127.0.0.1"


def test_deny_cidr_refuses_a_loopback_address_and_no_connection_arrives():
    with LocalServer({"*": page(b"ok")}, host="127.0.0.2") as srv:
        results, _ = fetch(srv, ["/a"], deny_addresses=("127.0.0.2/32",))
        assert srv.connections == 0
    assert (results[0].outcome, results[0].reason) == (FORBIDDEN_ADDRESS, "denied_by_flag")


def test_dns_failure_is_transient_and_looked_up_once():
    calls = []

    def gai(host, port, *a):
        calls.append(host)
        raise OSError("no such host")

    with HostFetcher(FetchConfig(delay_per_host=0.01), resolver=Resolver(getaddrinfo=gai)) as f:
        results, state = f.fetch_host("nowhere.test", [FetchRequest(f"http://nowhere.test/{i}", i) for i in range(3)], None)
    assert [(r.outcome, r.reason) for r in results] == [(TRANSIENT, "dns")] * 3
    assert calls == ["nowhere.test"] and state.fetches == 0


def test_https_dials_the_resolved_address_with_sni_and_certificate_of_the_name(tmp_path):
    made = self_signed_cert(str(tmp_path), "secure.test")
    if made is None:
        pytest.skip("openssl not available")
    cert, key = made
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    with LocalServer({**NO_ROBOTS, "*": page(b"secret")}, tls=ctx) as srv:
        cfg = loopback_config({"secure.test": srv, "other.test": srv}, ca_bundle=cert)
        with HostFetcher(cfg) as f:
            ok, _ = f.fetch_host("secure.test", [FetchRequest(f"https://secure.test:{srv.port}/p", 1)], None)
            bad, _ = f.fetch_host("other.test", [FetchRequest(f"https://other.test:{srv.port}/p", 2)], None)
        assert srv.requests[-1][3]["Host"] == f"secure.test:{srv.port}"
    assert (ok[0].outcome, ok[0].body) == (OK, b"secret")
    assert (bad[0].outcome, bad[0].reason) == (TRANSIENT, "robots_tls")   # name mismatch


# ----------------------------------------------------------------- status mapping

def test_redirect_is_recorded_not_followed():
    with LocalServer({**NO_ROBOTS, "/old": status(301, b"moved", {"Location": "new?x=1"}),
                      "*": page(b"ok")}) as srv:
        results, _ = fetch(srv, ["/old"])
        assert srv.paths() == ["/robots.txt", "/old"]
    r = results[0]
    assert (r.outcome, r.http_status, r.reason) == (REDIRECT, 301, "http_301")
    assert r.redirect_to == f"http://site.test:{srv.port}/new?x=1" and r.body == b""


def test_a_location_in_raw_utf8_or_in_latin1_is_read_and_the_host_goes_on():
    # the handler sends header values as ISO-8859-1: "\u00c3\u00a9" goes out as the UTF-8 bytes of
    # "\u00e9", "\u00e9" as the single byte 0xE9 (not UTF-8, which requests' reading raised on)
    with LocalServer({**NO_ROBOTS, "/utf8": status(301, b"", {"Location": "/caf\u00c3\u00a9"}),
                      "/latin1": status(302, b"", {"Location": "/caf\u00e9?x"}), "*": page(b"ok")}) as srv:
        results, _ = fetch(srv, ["/utf8", "/latin1", "/next"])
    base = f"http://site.test:{srv.port}"
    assert [(r.outcome, r.redirect_to) for r in results] == [
        (REDIRECT, f"{base}/caf\u00e9"), (REDIRECT, f"{base}/caf\u00e9?x"), (OK, None)]


def test_redirect_without_location_is_an_error():
    with LocalServer({**NO_ROBOTS, "*": status(302)}) as srv:
        results, _ = fetch(srv, ["/a"])
    assert (results[0].outcome, results[0].reason) == (HTTP_ERROR, "redirect_without_location")


def test_conditional_get_gets_304():
    def route(h):
        if h.headers.get("If-None-Match") == '"v1"' and h.headers.get("If-Modified-Since"):
            h.send_response(304)
            h.send_header("ETag", '"v1"')
            h.end_headers()
        else:
            page(b"fresh", headers={"ETag": '"v1"', "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"})(h)

    with LocalServer({**NO_ROBOTS, "/p": route}) as srv:
        url = f"http://site.test:{srv.port}/p"
        first, _ = fetch(srv, [FetchRequest(url, 1)])
        again, _ = fetch(srv, [FetchRequest(url, 1, etag=first[0].etag, last_modified=first[0].last_modified)])
    assert (first[0].outcome, first[0].etag, first[0].body) == (OK, '"v1"', b"fresh")
    assert (again[0].outcome, again[0].http_status) == (NOT_MODIFIED, 304)
    assert again[0].last_modified == "Mon, 01 Jan 2024 00:00:00 GMT"


@pytest.mark.parametrize("code,outcome,reason", [
    (404, HTTP_ERROR, "http_404"), (410, HTTP_ERROR, "http_410"), (403, HTTP_ERROR, "http_403"),
    (408, TRANSIENT, "http_408"), (429, TRANSIENT, "http_429"), (500, TRANSIENT, "http_500"),
    (999, HTTP_ERROR, "http_999")])
def test_status_mapping(code, outcome, reason):
    with LocalServer({**NO_ROBOTS, "*": status(code)}) as srv:
        results, state = fetch(srv, ["/a"])
    assert (results[0].outcome, results[0].reason, results[0].http_status) == (outcome, reason, code)
    assert state.errors == (1 if outcome == TRANSIENT else 0)


def test_content_type_and_x_robots_tag():
    with LocalServer({**NO_ROBOTS, "*": page(b"x", "Text/HTML; Charset=ISO-8859-1",
                                            {"X-Robots-Tag": "noindex"})}) as srv:
        r = fetch(srv, ["/a"])[0][0]
    assert r.content_type == "text/html" and r.content_type_header == "Text/HTML; Charset=ISO-8859-1"
    assert r.x_robots_tag == "noindex"
    assert media_type(None) is None and media_type("application/xml") == "application/xml"


# ----------------------------------------------------------------- bodies

def _bomb(mib: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(c.compress(b"\0" * (1 << 20)) for _ in range(mib)) + c.flush()


def test_gzip_page_is_decoded():
    html = b"<html>" + b"hello " * 5000 + b"</html>"
    with LocalServer({**NO_ROBOTS, "*": raw_body(gzip.compress(html), {"Content-Encoding": "gzip",
                                                                     "Content-Type": "text/html"})}) as srv:
        r = fetch(srv, ["/a"])[0][0]
    assert (r.outcome, r.body, r.truncated) == (OK, html, False)


def test_gzip_bomb_inflates_at_most_max_body():
    with LocalServer({**NO_ROBOTS, "*": raw_body(_bomb(64), {"Content-Encoding": "gzip"})}) as srv:
        r = fetch(srv, ["/a"], max_body=1 << 20)[0][0]
    assert (r.outcome, r.truncated, len(r.body), r.reason) == (OK, True, 1 << 20, "body_cap")


def test_big_page_is_truncated_at_the_cap():
    with LocalServer({**NO_ROBOTS, "*": streamed(10 * 1024 * 1024)}) as srv:
        r = fetch(srv, ["/a"], max_body=100 * 1024)[0][0]
    assert (r.outcome, r.truncated, len(r.body), r.reason) == (OK, True, 100 * 1024, "body_cap")


def test_body_exactly_at_the_cap_is_not_truncated():
    with LocalServer({**NO_ROBOTS, "*": page(b"x" * 1000)}) as srv:
        r = fetch(srv, ["/a"], max_body=1000)[0][0]
    assert (len(r.body), r.truncated) == (1000, False)


# Bounds on elapsed times are generous (a loaded machine runs late): what they guard is that
# the request ended at its limit, not at the end of what the server would have sent (the
# trickles and hangs last MAX_HANDLER_SECONDS = 15 s) or at a later limit.
LATE = 6.0


def test_trickling_body_is_cut_at_the_deadline():
    with LocalServer({**NO_ROBOTS, "*": trickle(every=0.2)}) as srv:
        results, state = fetch(srv, ["/a", "/b"], deadline=1.5, read_timeout=5, max_consecutive_failures=1)
    assert (results[0].outcome, results[0].reason, results[0].body) == (TRANSIENT, "deadline", b"")
    assert 1.4 <= results[0].elapsed_ms / 1000 < 1.5 + LATE
    assert results[1].reason == "host_parked"


def test_trickling_headers_are_cut_at_the_deadline():
    with LocalServer({**NO_ROBOTS, "*": trickle(every=0.1, headers_too=True)}) as srv:
        results, _ = fetch(srv, ["/a"], deadline=1.0, read_timeout=5)
    assert (results[0].outcome, results[0].reason) == (TRANSIENT, "deadline")
    assert 0.9 <= results[0].elapsed_ms / 1000 < 1.0 + LATE


def test_reset_mid_body_is_transient_and_partial_body_dropped():
    with LocalServer({**NO_ROBOTS, "/r": reset_mid_body(), "*": page(b"ok")}) as srv:
        results, state = fetch(srv, ["/r", "/ok"])
    assert (results[0].outcome, results[0].reason, results[0].body) == (TRANSIENT, "reset", b"")
    assert results[1].outcome == OK            # a new connection is made afterwards
    assert state.errors == 1 and state.consecutive_failures == 0


def _raw(data: bytes):
    """Answers the request with `data` as it is (not HTTP, or broken HTTP), then closes."""
    def route(h):
        h.wfile.write(data)
        h.wfile.flush()
        h.close_connection = True
    return route


@pytest.mark.parametrize("data,reason", [
    (b"SSH-2.0-OpenSSH_9.6\r\n", "protocol_error"),                   # not HTTP at all
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", "reset"),          # closed inside the headers
    (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", "reset"),  # closed inside the body
    (b"", "reset"),                                                    # closed without a word
])
def test_broken_responses_are_transient_with_their_reason(data, reason):
    with LocalServer({**NO_ROBOTS, "/x": _raw(data), "*": page(b"ok")}) as srv:
        results, _ = fetch(srv, ["/x", "/ok"])
    assert (results[0].outcome, results[0].reason) == (TRANSIENT, reason)
    assert results[1].outcome == OK


_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
# Responses that break the letter of RFC 9112, each as (bytes, outcome). libcurl reads them as
# browsers (and http.client) do.
ODD_RESPONSES = {
    "bare LF line ends": (b"HTTP/1.1 200 OK\nContent-Length: 5\n\nhello", OK),
    "no reason phrase": (b"HTTP/1.1 200\r\nContent-Length: 5\r\n\r\nhello", OK),
    "folded header": (_HEAD + b"X-Long: a\r\n b\r\nContent-Length: 5\r\n\r\nhello", OK),
    "chunk extension": (_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\n\r\n", OK),
    "HTTP/1.0, body to close": (b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\nhello", OK),
    "Latin-1 header value": (_HEAD + b"X-Name: caf\xe9\r\nContent-Length: 5\r\n\r\nhello", OK),
    "20 KB header line": (_HEAD + b"Content-Security-Policy: " + b"a" * 20000 + b"\r\nContent-Length: 5\r\n\r\nhello", OK),
    "99 header lines": (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(98))
                        + b"Content-Length: 5\r\n\r\nhello", OK),
    "70 KB header line": (_HEAD + b"X-Big: " + b"a" * 70000 + b"\r\nContent-Length: 5\r\n\r\nhello",
                          "protocol_error"),
    "100 header lines": (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(99))
                         + b"Content-Length: 5\r\n\r\nhello", "protocol_error"),
    "Content-Length and chunked": (_HEAD + b"Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   b"5\r\nhello\r\n0\r\n\r\n", OK),
    "space before the colon": (b"HTTP/1.1 200 OK\r\nContent-Type : text/html\r\nContent-Length: 5\r\n\r\nhello",
                               OK),
    "control byte in a name": (_HEAD + b"X-\x01Bad: v\r\nContent-Length: 5\r\n\r\nhello", OK),
    "Content-Length twice, same": (_HEAD + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
                                   OK),
    "Content-Length twice, differing": (_HEAD + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
                                        "protocol_error"),
    "not HTTP/": (b"ICY 200 OK\r\nContent-Length: 5\r\n\r\nhello", "protocol_error"),
}


@pytest.mark.parametrize("name", list(ODD_RESPONSES))
def test_odd_responses_are_read_as_browsers_read_them(name):
    data, want = ODD_RESPONSES[name]
    with LocalServer({**NO_ROBOTS, "/x": _raw(data)}) as srv:
        (r,), _ = fetch(srv, ["/x"])
    if want == OK:
        assert (r.outcome, r.http_status, r.body) == (OK, 200, b"hello")
    else:
        assert (r.outcome, r.reason) == (TRANSIENT, want)


def test_proxies_from_the_environment_are_not_used(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")          # nothing listens there
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        (r,), _ = fetch(srv, ["/a"])
        assert srv.paths() == ["/robots.txt", "/a"]
    assert (r.outcome, r.body) == (OK, b"ok")


def test_an_interim_head_is_skipped_for_the_final_one():
    data = (b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
    with LocalServer({**NO_ROBOTS, "/x": _raw(data)}) as srv:
        (r,), _ = fetch(srv, ["/x"])
    assert (r.outcome, r.http_status, r.body, r.content_type) == (OK, 200, b"hello", "text/plain")


def test_a_server_silent_after_the_request_is_a_read_timeout():
    with LocalServer({**NO_ROBOTS, "/h": hang(), "*": page(b"ok")}) as srv:
        results, _ = fetch(srv, ["/h"], read_timeout=0.3, deadline=10.0)
    assert (results[0].outcome, results[0].reason) == (TRANSIENT, "timeout_read")
    assert 0.25 <= results[0].elapsed_ms / 1000 < 0.3 + LATE


def test_connection_refused_is_transient():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # nothing listens there now
    cfg = FetchConfig(delay_per_host=0.01, allow_loopback=True, resolve=(("gone.test", port, "127.0.0.1"),))
    with HostFetcher(cfg) as f:
        results, state = f.fetch_host("gone.test", [FetchRequest(f"http://gone.test:{port}/", 1)], None)
    assert (results[0].outcome, results[0].reason) == (TRANSIENT, "robots_connect_refused")
    assert state.robots_state == "disallow_all"


@pytest.mark.parametrize("enc", ["deflate", "br", "gzip, br", "x-gzip"])
def test_bounded_decoder_encodings(enc):
    import brotli
    data = b"abc" * 10000
    comp = {"deflate": zlib.compress(data), "br": brotli.compress(data),
            "gzip, br": brotli.compress(gzip.compress(data)), "x-gzip": gzip.compress(data)}[enc]
    tokens = parse_content_encoding(enc)
    assert decompress_bounded(comp, tokens, 10 ** 6) == (data, False)
    assert decompress_bounded(comp, tokens, 100) == (data[:100], True)
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = raw_deflate.compress(data) + raw_deflate.flush()
    dec = BoundedDecoder(["deflate"], 10 ** 6)
    for i in range(0, len(raw), 7):             # tiny pieces: header sniffing across feeds
        dec.feed(raw[i:i + 7])
    dec.finish()
    assert dec.getvalue() == data


def test_brotli_bomb_is_bounded():
    import brotli
    bomb = brotli.compress(b"\0" * (256 << 20), quality=5)
    with LocalServer({**NO_ROBOTS, "*": raw_body(bomb, {"Content-Encoding": "br"})}) as srv:
        r = fetch(srv, ["/a"], max_body=1 << 20)[0][0]
    assert (r.truncated, len(r.body)) == (True, 1 << 20)


# ----------------------------------------------------------------- retry-after, backoff, parking

def test_429_retry_after_pauses_the_host_and_retries_once():
    with LocalServer({**NO_ROBOTS, "/a": sequence(status(429, headers={"Retry-After": "1"}), page(b"ok")),
                      "*": page(b"ok")}) as srv:
        results, state = fetch(srv, ["/a", "/b"])
        t = srv.times("/a")
    assert [r.outcome for r in results] == [OK, OK]
    assert len(t) == 2 and t[1] - t[0] >= 0.95


def test_honoured_retry_after_slows_the_rest_of_the_hosts_round():
    with LocalServer({**NO_ROBOTS, "/a": sequence(status(429, headers={"Retry-After": "1"}), page(b"ok")),
                      "*": page(b"ok")}) as srv:
        results, _ = fetch(srv, ["/a", "/b", "/c"], delay_per_host=0.05)
        t = [x for p in ("/a", "/b", "/c") for x in srv.times(p)]
    assert [r.outcome for r in results] == [OK, OK, OK]
    assert len(t) == 4 and min(gaps(t)) >= 0.95     # not back to 0.05 s after the 429


class _SkipClock:
    """Real time plus whatever was 'slept': sleeps are recorded, not waited. With
    real=False only the sleeps move it (from 1 000 000 000)."""

    def __init__(self, real=True):
        self.offset, self.sleeps, self.real = 0.0 if real else 1e9, [], real

    def __call__(self):
        return (time.time() if self.real else 0.0) + self.offset

    def sleep(self, s):
        self.sleeps.append(s)
        self.offset += s


def test_retry_after_slow_down_is_capped_at_max_crawl_delay():
    clock = _SkipClock()
    with LocalServer({**NO_ROBOTS, "/a": sequence(status(503, headers={"Retry-After": "100"}), page(b"ok")),
                      "*": page(b"ok")}) as srv:
        config = loopback_config({"site.test": srv}, delay_per_host=0.05, max_crawl_delay=5)
        with HostFetcher(config, clock=clock, sleep=clock.sleep) as f:
            results, _ = f.fetch_host(f"site.test:{srv.port}", [
                FetchRequest(f"http://site.test:{srv.port}{p}", i) for i, p in enumerate(["/a", "/b"])], None)
    assert [r.outcome for r in results] == [OK, OK]
    # after robots.txt: the delay; then the Retry-After pause; then the capped slow-down
    assert clock.sleeps == [pytest.approx(0.05, abs=0.05), pytest.approx(100, abs=0.5),
                            pytest.approx(5, abs=0.5)]


def test_retry_after_beyond_the_cap_pauses_the_rest_of_the_host():
    with LocalServer({**NO_ROBOTS, "*": status(503, headers={"Retry-After": "3600"})}) as srv:
        results, _ = fetch(srv, ["/a", "/b", "/c"], retry_after_cap=120)
        assert srv.paths() == ["/robots.txt", "/a"]
    assert (results[0].outcome, results[0].reason, results[0].retry_after) == (TRANSIENT, "retry_after", 3600)
    assert [(r.reason, r.retry_after) for r in results[1:]] == [("host_paused", 3600)] * 2


def test_503_burst_backs_off_then_parks_the_host():
    with LocalServer({**NO_ROBOTS, "*": status(503)}) as srv:
        results, state = fetch(srv, [f"/{i}" for i in range(6)], delay_per_host=0.05,
                               max_consecutive_failures=3)
        page_times = srv.times()[1:]
    assert [r.reason for r in results] == ["http_503"] * 3 + ["host_parked"] * 3
    assert len(page_times) == 3
    g = gaps(page_times)
    assert g[0] >= 0.099 and g[1] >= 0.199          # 0.05 * 2, 0.05 * 4
    assert state.consecutive_failures == 3 and state.errors == 3 and state.last_error == "http_503"


def test_parse_retry_after():
    now = 1_700_000_000.0
    assert parse_retry_after("120", now) == 120
    assert parse_retry_after("Wed, 15 Nov 2023 00:13:20 GMT", now) == 7200
    assert parse_retry_after("garbage", now) is None and parse_retry_after(None, now) is None


# ----------------------------------------------------------------- many hosts, state

def fetch_hosts(jobs, cfg, max_workers, planned=0, used=None, **fn_kw):
    """Run the round's FetchHosts DoFn (outside a runner) over (host, requests, state) jobs;
    returns (host, results as page dicts, new host row) per host, as the pipeline gets them.
    `fn_kw` go to FetchHosts; `used`, a dict, gets the fetch process the bundle used (or None)."""
    import apache_beam as beam
    fn = FetchHosts(cfg, threads=max_workers, sitemaps=False, **fn_kw)
    fn.setup()
    fn.start_bundle()
    out = []
    try:
        for host, reqs, state in jobs:
            rows = pa.Table.from_pylist([{"url": r.url, "fp": r.fp} for r in reqs])
            joined = {"urls": [rows], "state": [state.to_row()] if state else []}
            out.extend(fn.process((host, [(host, joined)]), planned))
        out.extend(v.value if hasattr(v, "windows") else v for v in fn.finish_bundle())
        if used is not None:
            used["process"] = fn._process
    finally:
        fn.teardown()
    pages, hosts = {}, []
    for item in out:
        if isinstance(item, beam.pvalue.TaggedOutput):
            if item.tag == "hosts":
                value = item.value.value if hasattr(item.value, "windows") else item.value
                hosts.append(value)
            continue
        pages.setdefault(item["url"].split("/")[2], []).append(item)
    return [(h["host"], sorted(pages.get(h["host"], []), key=lambda p: p["fp"]), h) for h in hosts]


def test_fetch_hosts_one_host_exception_does_not_lose_others(monkeypatch):
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        names = {f"h{i}.test": srv for i in range(4)}
        cfg = loopback_config(names)
        real = hostfetcher.HostFetcher._fetch_page

        def flaky(self, req, state, rnd):
            if "h1.test" in req.url and req.url.endswith("/2"):
                raise RuntimeError("boom")
            return real(self, req, state, rnd)

        real_host = hostfetcher.HostFetcher.fetch_host

        def explode(self, host, reqs, state, observe=None):
            if host.startswith("h2.test"):
                raise MemoryError("worse")
            return real_host(self, host, reqs, state, observe)

        monkeypatch.setattr(hostfetcher.HostFetcher, "_fetch_page", flaky)
        monkeypatch.setattr(hostfetcher.HostFetcher, "fetch_host", explode)
        jobs = [(f"{n}:{srv.port}", [FetchRequest(f"http://{n}:{srv.port}/{j}", j) for j in range(4)], None)
                for n in names]
        out = {h.split(":")[0]: (res, st) for h, res, st in fetch_hosts(iter(jobs), cfg, max_workers=2)}
    assert set(out) == set(names)
    assert [r["outcome"] for r in out["h0.test"][0]] == [OK] * 4
    assert [r["outcome"] for r in out["h3.test"][0]] == [OK] * 4
    h1 = out["h1.test"][0]
    assert [r["outcome"] for r in h1[:2]] == [OK, OK]
    assert all(r["outcome"] == TRANSIENT and r["reason"].startswith("internal_error: RuntimeError: boom")
               for r in h1[2:])
    assert all(r["reason"].startswith("internal_error: MemoryError") for r in out["h2.test"][0])
    assert [r["fp"] for r in out["h2.test"][0]] == [0, 1, 2, 3]


def test_fetch_hosts_runs_hosts_concurrently():
    """Each host's page is answered only once all six hosts' requests are open at once (a
    barrier in the server): hosts fetched one after another would each time out there."""
    import threading
    together = threading.Barrier(6, timeout=MAX_HANDLER_SECONDS - 5)

    def meet(h):
        try:
            together.wait()
        except threading.BrokenBarrierError:
            return status(503)(h)
        return page(b"ok")(h)

    with LocalServer({**NO_ROBOTS, "*": meet}) as srv:
        names = {f"c{i}.test": srv for i in range(6)}
        cfg = loopback_config(names, read_timeout=MAX_HANDLER_SECONDS, deadline=MAX_HANDLER_SECONDS)
        jobs = [(f"{n}:{srv.port}", [FetchRequest(f"http://{n}:{srv.port}/0", 0)], None) for n in names]
        out = list(fetch_hosts(jobs, cfg, max_workers=6))
    assert sorted((h.split(":")[0], r["outcome"]) for h, res, _ in out for r in res) == \
        [(n, OK) for n in sorted(names)]


def test_host_state_row_round_trip_matches_the_hosts_schema():
    st = HostState("a.test", robots_status=200, robots_state="parsed", robots_body="x",
                   robots_fetched_at=1.0, crawl_delay=2.0, sitemaps=["http://a.test/s.xml"],
                   address="127.0.0.1", fetches=3, errors=1, consecutive_failures=1,
                   last_error="reset", last_fetch_time=5.0)
    row = st.to_row()
    assert list(row) == [f.name for f in tables.HOSTS]
    pa.Table.from_pylist([row, HostState("b.test").to_row()], schema=tables.HOSTS)
    assert HostState.from_row(row, "a.test") == st
    assert HostState.from_row(None, "n.test") == HostState("n.test")


def test_fetch_config_is_picklable_and_validated():
    cfg = FetchConfig(deny_addresses=("10.0.0.0/8",), resolve=(("a.test", 80, "127.0.0.1"),))
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    with pytest.raises(ValueError):
        FetchConfig(deny_addresses=("nonsense",))
    with pytest.raises(ValueError):
        FetchConfig(user_agent="/no-token")


def test_bad_urls_are_permanent_errors_without_requests():
    with HostFetcher(FetchConfig()) as f:
        results, _ = f.fetch_host("x", [FetchRequest("ftp://x/a", 1), FetchRequest("http:///nohost", 2)], None)
    assert [(r.outcome, r.reason) for r in results] == [(HTTP_ERROR, "bad_url")] * 2


def test_connect_timeout_is_transient():
    import socket
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)                      # never accepted: once the backlog is full, SYNs are dropped
    port = ls.getsockname()[1]
    fillers = []
    try:
        for _ in range(5):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(c)
        cfg = FetchConfig(delay_per_host=0.01, allow_loopback=True, connect_timeout=0.5, obey_robots=False,
                          resolve=(("slow.test", port, "127.0.0.1"),))
        with HostFetcher(cfg) as f:
            results, state = f.fetch_host("slow.test", [FetchRequest(f"http://slow.test:{port}/", 1)], None)
    finally:
        for c in fillers:
            c.close()
        ls.close()
    assert (results[0].outcome, results[0].reason) == (TRANSIENT, "timeout_connect")
    assert 0.45 <= results[0].elapsed_ms / 1000 < 0.5 + LATE


def test_chunked_body_is_read():
    def route(h):
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for part in (b"<html>", b"chunk" * 1000, b"</html>"):
            h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        h.wfile.write(b"0\r\n\r\n")

    with LocalServer({**NO_ROBOTS, "*": route}) as srv:
        results, _ = fetch(srv, ["/a", "/b"])
        assert srv.connections == 1
    assert results[0].body == b"<html>" + b"chunk" * 1000 + b"</html>" and not results[0].truncated


def test_host_budget_stops_starting_requests():
    """On a clock that moves only when the fetcher sleeps: robots.txt at 0, then a page every
    0.1 s; the budget (0.25 s) is checked before each page, so pages start at 0.1, 0.2, 0.3
    and the next, at 0.3 > 0.25, is not started."""
    clock = _SkipClock(real=False)
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        config = loopback_config({"site.test": srv}, delay_per_host=0.1, host_budget=0.25)
        with HostFetcher(config, clock=clock, sleep=clock.sleep) as f:
            results, _ = f.fetch_host(f"site.test:{srv.port}", [
                FetchRequest(f"http://site.test:{srv.port}/{i}", i) for i in range(10)], None)
        assert len(srv.paths()) == 1 + 3
    assert [r.reason for r in results] == [None] * 3 + ["host_budget"] * 7
    assert clock.sleeps == [pytest.approx(0.1)] * 3


def test_last_fetch_time_in_the_future_does_not_stall_the_host():
    """A last fetch an hour ahead (another worker's clock): the fetcher waits only the delay
    after robots.txt (its sleeps are recorded here, not waited)."""
    clock = _SkipClock()
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        config = loopback_config({"site.test": srv}, delay_per_host=0.05)
        with HostFetcher(config, clock=clock, sleep=clock.sleep) as f:
            results, _ = f.fetch_host(f"site.test:{srv.port}", [FetchRequest(f"http://site.test:{srv.port}/a", 1)],
                                      HostState("x", last_fetch_time=clock() + 3600))
    assert results[0].outcome == OK
    assert max(clock.sleeps, default=0) <= 0.05 + 0.01, clock.sleeps


def test_internationalised_host_name_is_dialled_as_punycode():
    with LocalServer({**NO_ROBOTS, "*": page(b"ok")}) as srv:
        cfg = loopback_config({"xn--caf-dma.test": srv})
        with HostFetcher(cfg) as f:
            results, state = f.fetch_host("xn--caf-dma.test", [FetchRequest(f"http://café.test:{srv.port}/", 1)], None)
        assert srv.requests[-1][3]["Host"] == f"xn--caf-dma.test:{srv.port}"
    assert results[0].outcome == OK and state.address == "127.0.0.1"
