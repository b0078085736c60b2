"""sender.prepare_request builds what Session.prepare_request would for the fetcher's
sessions: same method, URL as sent, request target, headers (names, values, order), body
and auth. URLs requests leaves unchanged take a fast path; every other URL requests'
own preparation; both must give requests' request."""
import requests
from hypothesis import example, given, settings
from hypothesis import strategies as st

from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.records import FetchConfig
from transforms.fetch.prepared import _plain_target, prepare_request

URLS = [
    "http://example.test/", "http://example.test:8080/a/b?x=1&y=%20z#frag",
    "https://EXAMPLE.test/ä/ö?q=ü", "http://xn--bcher-kva.test/p", "http://bücher.test/p q",
    "http://user:secret@example.test/private", "http://example.test/%7Euser/%zz",
    "http://[::1]:8080/v6", "http://example.test/?a=1&a=2;b", "https://example.test",
    "http://example.test/a/./b/../c", "http://example.test/p?", "http://example.test:080/",
    "http://example.test:99999/", "http://example.test/a?b?c=d/e@f", "HTTP://example.test/",
    "http://.example.test/", "http://example.test/.well-known/x", "http://example.test//a",
]
HEADER_NAMES = ["If-None-Match", "If-Modified-Since", "Accept", "accept", "User-Agent",
                "Content-Type", "X-Extra"]


def _base_headers():
    with HostFetcher(FetchConfig()) as f:
        return dict(f._headers)


def _session(base):
    s = requests.Session()
    s.headers.clear()
    s.headers.update(base)
    return s


def _as_sent(p):
    return (p.method, p.url, p.path_url, list(p.headers.items()), p.body)


def _same_as_requests(method, url, headers, data):
    base = _base_headers()
    session = _session(base)
    assert (_outcome(prepare_request, method, url, base, headers, data)
            == _outcome(lambda *a: session.prepare_request(requests.Request(method, url, headers=headers, data=data))))


@settings(max_examples=200, deadline=None)
@given(url=st.sampled_from(URLS),
       method=st.sampled_from(["GET", "POST", "get"]),
       headers=st.none() | st.dictionaries(st.sampled_from(HEADER_NAMES),
                                            st.none() | st.text("abcdefgh \"=/-0123456789", max_size=12),
                                            max_size=4),
       data=st.none() | st.binary(max_size=20))
def test_same_request_as_session_prepare_request(url, method, headers, data):
    _same_as_requests(method, url, headers, data)


# URLs near the fast path's edges: every character class it admits or refuses
_PATH_CHARS = st.text(st.sampled_from(list("aZ09-._~!$&'()*+,;=:@/?%#[] \"<>\\^`{|}é\t")), max_size=25)


@settings(max_examples=500, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "HTTP", "ftp"]),
       host=st.sampled_from(["example.test", "a-b.c9.test", "Example.test", "exa_mple.test",
                             "-x.test", "x..test", "", "bücher.test"]),
       port=st.sampled_from(["", ":80", ":8080", ":0", ":65535", ":65536", ":08"]),
       path=_PATH_CHARS)
@example(scheme="http", host="example.test", port="", path="/a/../b")
@example(scheme="http", host="example.test", port="", path="/a?")
def test_generated_urls_are_prepared_as_requests_prepares_them(scheme, host, port, path):
    _same_as_requests("GET", f"{scheme}://{host}{port}/{path}", None, None)


def test_the_fast_path_takes_the_crawlers_own_urls():
    assert _plain_target("http://site1.example.test:8080/a/b.html?x=1&y=2") == "/a/b.html?x=1&y=2"
    for url in ("http://example.test/a%20b", "http://u:p@example.test/", "http://example.test/a#f",
                "http://example.test/a/../b", "http://Example.test/", "http://example.test/p?"):
        assert _plain_target(url) is None, url


def _outcome(build, *args):
    """The request as sent, or the exception's type and message (bad URLs or header values)."""
    try:
        return _as_sent(build(*args))
    except requests.exceptions.RequestException as e:
        return type(e), str(e)


def test_the_fetchers_own_headers_come_first_and_a_request_header_replaces_one():
    got = prepare_request("GET", "http://example.test/", _base_headers(), {"accept": "text/html"})
    names = [k for k, _ in got.headers.items()]
    assert names == ["User-Agent", "accept", "Accept-Encoding"]
    assert got.headers["accept"] == "text/html"


def test_a_password_in_the_url_becomes_basic_auth_as_before():
    got = prepare_request("GET", "http://u:p@example.test/", _base_headers())
    assert got.headers["Authorization"] == "Basic dTpw"

def _origin_port_by_urlsplit(url):
    """connection.origin_port without its one-regex fast path."""
    from unittest import mock

    from transforms.fetch import connection
    with mock.patch.object(connection, "_PLAIN_ORIGIN", mock.Mock(match=lambda url: None)):
        return connection.origin_port(url)


def _origin_or_error(fn, url):
    try:
        return fn(url)
    except ValueError as e:
        return type(e)


@settings(max_examples=300)
@given(scheme=st.sampled_from(["http", "https", "HTTP", "ftp"]),
       host=st.text("abcXY0-.é", max_size=8),
       port=st.one_of(st.none(), st.text("0123456789", max_size=6), st.just("8o")),
       rest=st.sampled_from(["", "/", "/a?b", "?q", "#f", "/p@x:1", "x"]))
@example(scheme="http", host="a", port="0", rest="/")
@example(scheme="http", host="a", port="65536", rest="/")
def test_origin_ports_fast_path_reads_what_urlsplit_reads(scheme, host, port, rest):
    from transforms.fetch.connection import origin_port
    url = f"{scheme}://{host}" + ("" if port is None else f":{port}") + rest
    assert _origin_or_error(origin_port, url) == _origin_or_error(_origin_port_by_urlsplit, url)
