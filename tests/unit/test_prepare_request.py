"""connection.prepare_request builds what Session.prepare_request would for the fetcher's
sessions: same method, URL as sent, headers (names, values, order), body and auth."""
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.fetch.connection import prepare_request
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.records import FetchConfig

URLS = [
    "http://example.test/", "http://example.test:8080/a/b?x=1&y=%20z#frag",
    "https://EXAMPLE.test/ä/ö?q=ü", "http://xn--bcher-kva.test/p", "http://bücher.test/p q",
    "http://user:secret@example.test/private", "http://example.test/%7Euser/%zz",
    "http://[::1]:8080/v6", "http://example.test/?a=1&a=2;b", "https://example.test",
]
HEADER_NAMES = ["If-None-Match", "If-Modified-Since", "Accept", "accept", "User-Agent",
                "Content-Type", "X-Extra"]


def _session():
    with HostFetcher(FetchConfig()) as f:
        return f._session


def _as_sent(p):
    return (p.method, p.url, list(p.headers.items()), p.body)


@settings(max_examples=200, deadline=None)
@given(url=st.sampled_from(URLS),
       method=st.sampled_from(["GET", "POST", "get"]),
       headers=st.none() | st.dictionaries(st.sampled_from(HEADER_NAMES),
                                            st.none() | st.text("abcdefgh \"=/-0123456789", max_size=12),
                                            max_size=4),
       data=st.none() | st.binary(max_size=20))
def test_same_request_as_session_prepare_request(url, method, headers, data):
    session = _session()
    assert (_outcome(prepare_request, method, url, session.headers, headers, data)
            == _outcome(lambda *a: session.prepare_request(requests.Request(method, url, headers=headers, data=data))))


def _outcome(build, *args):
    """The request as sent, or the exception's type and message (bad header values)."""
    try:
        return _as_sent(build(*args))
    except requests.exceptions.RequestException as e:
        return type(e), str(e)


def test_the_fetchers_own_headers_come_first_and_a_request_header_replaces_one():
    session = _session()
    got = prepare_request("GET", "http://example.test/", session.headers, {"accept": "text/html"})
    names = [k for k, _ in got.headers.items()]
    assert names == ["User-Agent", "accept", "Accept-Encoding"]
    assert got.headers["Accept"] == "text/html"


def test_a_password_in_the_url_becomes_basic_auth_as_before():
    session = _session()
    got = prepare_request("GET", "http://u:p@example.test/", session.headers)
    assert got.headers["Authorization"] == "Basic dTpw"
