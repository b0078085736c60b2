"""The libcurl sender's own parts and its head reading; its fetches are tested through the host
fetcher in test_fetcher.py, test_robots.py, test_warc.py and the others."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from transforms.fetch.curlhead import BadHead, _any_head, _usual_head, parse_head
from transforms.fetch.curlsender import CurlResponse, _Exchange, connect_to, origin
from transforms.fetch.records import DRAIN_LIMIT, READ_CHUNK

CAP = 1 << 20


def _feed(ex: _Exchange, head: bytes, body_bytes: int, piece: int = 16384) -> None:
    ex.heads.write(head)
    sent = 0
    while sent < body_bytes:
        if ex.write(b"x" * piece) == -1:
            return
        sent += piece


def test_a_plain_body_is_kept_up_to_the_cap_and_a_read_to_spare():
    ex = _Exchange(CAP)
    _feed(ex, b"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n", 8 * CAP)
    assert ex.cut and ex.got == sum(map(len, ex.chunks)) == max(CAP, DRAIN_LIMIT) + 2 * READ_CHUNK


def test_an_encoded_body_is_kept_up_to_the_readers_raw_budget():
    ex = _Exchange(CAP)
    _feed(ex, b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n", 8 * CAP)
    assert ex.cut and ex.got == 2 * CAP + 3 * READ_CHUNK


def test_a_body_within_the_limit_is_kept_whole():
    ex = _Exchange(CAP)
    _feed(ex, b"HTTP/1.1 200 OK\r\n\r\n", CAP, piece=CAP // 4)
    assert not ex.cut and ex.got == CAP and ex.progress() == CAP + 19


def test_the_final_head_is_read_after_an_interim_one_and_before_trailers():
    heads = (b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
             b"HTTP/1.0 404 Not  Found\r\nX-Folded: a\r\n\t b\r\nServer:x\r\nBare: lf\n\r\n"
             b"X-Trailer: t\r\n\r\n")
    assert parse_head(heads) == (10, "Not  Found", [("X-Folded", "a b"), ("Server", "x"), ("Bare", "lf")])


def test_header_values_are_latin_1_as_http_client_reads_them():
    assert parse_head(b"HTTP/1.1 200\r\nX-Name: caf\xe9\r\n\r\n") == (11, "", [("X-Name", "caf\xe9")])


@pytest.mark.parametrize("heads,why", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", "closed inside the head"),
    (b"", "closed inside the head"),
    (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(100)) + b"\r\n", "more than 99"),
    (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (65536 - 8) + b"\r\n\r\n", "too long"),   # 65 537 with CRLF
])
def test_a_head_cut_or_past_http_clients_limits_is_refused(heads, why):
    with pytest.raises(BadHead, match=why):
        parse_head(heads)


def test_99_header_lines_and_a_64_kib_line_are_read():
    heads = (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (65536 - 9) + b"\r\n"
             + b"".join(b"X-H%d: v\r\n" % i for i in range(98)) + b"\r\n")
    assert len(parse_head(heads)[2]) == 99


def test_the_response_reads_its_pieces_in_order_and_at_most_amt_bytes():
    r = CurlResponse(200, 11, "OK", [("Content-Type", "text/html"), ("content-type", "x")],
                     [b"abcdef", b"gh"])
    assert r.headers.get("CONTENT-TYPE") == "text/html, x" and r.headers.get("Server", "-") == "-"
    assert [r.read(4), r.read(4), r.read(4), r.read(4)] == [b"abcd", b"ef", b"gh", b""]


@pytest.mark.parametrize("url,want", [
    ("http://site.test/a?b", ("http", "site.test", 80, "http://site.test/a?b")),
    ("https://site.test:8443", ("https", "site.test", 8443, "https://site.test:8443")),
    ("http://u:p@Site.Test:81/x", ("http", "site.test", 81, "http://Site.Test:81/x")),
    ("http://[::1]:8080/", ("http", "::1", 8080, "http://[::1]:8080/")),
])
def test_origin_gives_scheme_host_port_and_the_url_without_userinfo(url, want):
    assert origin(url) == want


def test_connect_to_brackets_ipv6_literals():
    assert connect_to("site.test", 8080, "127.0.0.1") == "site.test:8080:127.0.0.1:8080"
    assert connect_to("::1", 80, "::1") == "[::1]:80:[::1]:80"


_LINE = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")) | st.sampled_from(
    [b"Content-Type: text/html", b"X-A:\tb \r", b"no colon", b": empty name", b"X\rY: v", b"X: a\r \r",
     b"Name : v", b"caf\xe9: \xe9"])


@given(status=st.sampled_from([b"HTTP/1.1 200 OK", b"HTTP/1.0 404", b"HTTP/1.1 301 Moved  For Good"]),
       lines=st.lists(_LINE, max_size=12))
def test_the_usual_heads_one_pass_reads_what_the_line_by_line_reading_reads(status, lines):
    heads = status + b"\r\n" + b"".join(line + b"\r\n" for line in lines) + b"\r\n"
    usual = _usual_head(heads)
    folded = any(line[:1] in (b" ", b"\t") for line in lines)
    assert (usual is None) == (folded or b"" in lines)       # (a blank line ends the head early)
    if usual is not None:
        assert usual == _any_head(heads)
