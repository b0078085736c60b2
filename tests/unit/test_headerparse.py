"""transforms.fetch.headerparse builds the same HTTPMessage as http.client's email-parser path."""
import email.parser
import http.client
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.fetch import headerparse


def _by_email_parser(block: bytes):
    """http.client's own parse: its header lines, then email.parser (written out here)."""
    fp = io.BytesIO(block)
    lines = http.client._read_headers(fp)
    text = b"".join(lines).decode("iso-8859-1")
    return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text), fp.tell()


def _fields(message):
    fields = dict(vars(message))
    fields["defects"] = [(type(d).__name__, str(d)) for d in message.defects]
    if isinstance(fields["_payload"], list):   # parts (a message/ or multipart/ type)
        fields["_payload"] = [_fields(part) for part in fields["_payload"]]
    return fields


def _same(block: bytes):
    want, want_at = _by_email_parser(block)
    fp = io.BytesIO(block)
    got = headerparse.parse_headers(fp)
    assert _fields(got) == _fields(want)
    assert fp.tell() == want_at
    assert got.items() == want.items()


NGINX = (b"Server: nginx/1.22.1\r\nDate: Wed, 02 Dec 2026 01:50:00 GMT\r\n"
         b"Content-Type: text/html\r\nContent-Length: 18532\r\nConnection: keep-alive\r\n"
         b"ETag: \"6751-4862\"\r\nAccept-Ranges: bytes\r\n\r\n<html>body</html>")


@pytest.mark.parametrize("block", [
    NGINX,
    b"\r\n",                                            # no headers
    b"A: 1\nB:2\n\n",                                   # bare LF
    b"X-Spaces:   \t value with : colon \t \r\n\r\n",   # blanks around the value
    b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n",      # repeated
    b"Title: caf\xe9 \xff\r\n\r\n",                     # Latin-1 bytes
    b"Folded: one\r\n two\r\n\r\n",                     # a folded line (email parser)
    b"Bad Name: x\r\nOther: y\r\n\r\n",                 # a space in a name ends the headers
    b"From someone\r\nA: b\r\n\r\n",                    # a unix From line
    b"Content-Type: multipart/byteranges; boundary=XX\r\n\r\n",
    b"content-type: Message/HTTP\r\n\r\n",
    b"A: b\x0bc\r\n\r\n",                               # str.splitlines breaks at VT
    b"A: b\x85c\r\n\r\n",                               # ... and at NEL
    b"A: b\rc\r\n\r\n",                                 # a bare CR inside a value
    b":no name\r\n\r\n",
    b"NoColon\r\n\r\n",
    b"A: b\r\n",                                        # cut short: no blank line
    b"",
])
def test_odd_and_usual_blocks_give_the_email_parsers_message(block):
    _same(block)


_NAME = st.text(st.sampled_from("AZaz09-_:!~ \t\x7f\xe9"), min_size=0, max_size=6)
_VALUE = st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")) | st.text(
    st.sampled_from("abc :;\t\x0b\x0c\x1c\x85\r/multipartmessage"), max_size=12).map(lambda t: t.encode("latin-1"))
_LINE = st.tuples(_NAME, _VALUE, st.sampled_from([b"\r\n", b"\n"])).map(
    lambda t: t[0].encode("latin-1") + b":" + t[1] + t[2])
_USUAL_LINE = st.tuples(st.text(st.sampled_from("ACEXaz09-_!~."), min_size=1, max_size=8),
                        st.text(st.sampled_from("ab :;/=\t\"\xe9\xff"), max_size=12),
                        st.sampled_from([b"\r\n", b"\n"])).map(
    lambda t: t[0].encode() + b":" + t[1].encode("latin-1") + t[2])
_ODD_LINE = st.sampled_from([b" folded\r\n", b"\tfolded\n", b"From x\r\n", b"no colon\r\n",
                             b"Content-Type: multipart/mixed\r\n", b"content-TYPE: text/html\r\n"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_USUAL_LINE, _USUAL_LINE, _USUAL_LINE, _LINE, _ODD_LINE), max_size=6), st.sampled_from([b"\r\n", b"\n", b""]), st.binary(max_size=8))
def test_any_header_block_gives_the_email_parsers_message(lines, end, body):
    _same(b"".join(lines) + end + body)


def test_install_puts_it_in_http_client_and_responses_read_the_same():
    assert headerparse.install() and headerparse.install()   # idempotent
    assert http.client.parse_headers is headerparse.parse_headers

    class _Sock:
        def __init__(self, data):
            self.data = data

        def makefile(self, mode):
            return io.BytesIO(self.data)

    response = http.client.HTTPResponse(_Sock(b"HTTP/1.1 200 OK\r\n" + NGINX))
    response.begin()
    assert response.getheader("content-length") == "18532" and response.read(4) == b"<htm"
    assert response.msg.get_all("etag") == ['"6751-4862"']
