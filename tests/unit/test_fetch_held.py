"""What a host's fetch holds until the host is done (#12: a big host fetched whole in a fetch
process): its requests are made as the fetcher reaches them, and a result the streaming
hand-off took is counted, not kept."""
import pytest

from schemas.tables import OK
from tests.unit.httpfixtures import LocalServer, loopback_config, page, status
from transforms.fetch import hostfetcher
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.hostjob import FETCH_COLUMNS, RowRequests, _request, fetch_one_host
from transforms.fetch.hostrows import HostRows
from transforms.fetch.observed import ObservedResults
from transforms.fetch.progress import FetchProgress
from transforms.fetch.records import TRANSIENT, FetchRequest, FetchResult

ROUTES = {"/robots.txt": status(404), "*": page(b"<html>ok</html>")}


def _fetch(srv, n, observe, **cfg):
    host = f"site.test:{srv.port}"
    config = loopback_config({"site.test": srv}, **cfg)
    with HostFetcher(config) as f:
        return f.fetch_host(host, [FetchRequest(f"http://{host}/p{i}", i) for i in range(n)], None, observe)


@pytest.mark.parametrize("conns", [1, 3])
def test_results_the_observer_took_are_not_returned_the_others_are_in_order(conns):
    seen = []

    def take_even(res):
        seen.append(res.fp)
        return res.fp % 2 == 0

    with LocalServer(ROUTES) as srv:
        results, state = _fetch(srv, 9, take_even, delay_per_host=0, conns_per_host=conns)
    assert sorted(seen) == list(range(9))                 # every result was shown
    assert [r.fp for r in results] == [1, 3, 5, 7]        # only those not taken, in order
    assert all(r.outcome == OK for r in results) and state.fetches == 10


def test_after_an_internal_error_the_requests_not_reached_come_back_even_if_earlier_were_taken(monkeypatch):
    """The fetcher counts taken results: the URLs after the failure are the ones not done,
    not those after the few results it kept."""
    real = HostFetcher._fetch_one
    calls = []

    def flaky(self, req, *args):
        calls.append(req.fp)
        if len(calls) == 4:
            raise RuntimeError("boom")
        return real(self, req, *args)

    monkeypatch.setattr(hostfetcher.HostFetcher, "_fetch_one", flaky)
    with LocalServer(ROUTES) as srv:
        results, _ = _fetch(srv, 6, lambda res: res.outcome == OK, delay_per_host=0)
    assert [(r.fp, r.outcome) for r in results] == [(3, TRANSIENT), (4, TRANSIENT), (5, TRANSIENT)]
    assert all(r.reason.startswith("internal_error: RuntimeError") for r in results)


def test_an_observer_that_fails_takes_nothing():
    def broken(res):
        raise ValueError("meter")

    held = ObservedResults(broken)
    for fp in range(3):
        held.append(FetchResult(url=f"http://h/{fp}", fp=fp, fetch_time=0.0, elapsed_ms=0.0, outcome=OK))
    assert len(held) == 3 and [r.fp for r in held.kept] == [0, 1, 2]


def _rows(n):
    return [{"url": f"http://h.test/{i}", "fp": i, "etag": f'"e{i}"' if i % 2 else None,
             "last_modified": None, "method": "POST" if i == 3 else None,
             "request_body": "q=1" if i == 3 else None} for i in range(n)]


@pytest.mark.parametrize("as_columns", [False, True])
def test_row_requests_are_the_requests_made_at_once(as_columns):
    import pyarrow as pa
    rows = _rows(7)
    src = HostRows.from_table(pa.Table.from_pylist(rows), FETCH_COLUMNS) if as_columns else rows
    lazy, eager = RowRequests(src), [_request(r) for r in rows]
    assert len(lazy) == 7 and list(lazy) == eager
    assert lazy[3].method == "POST" and lazy[3].body == "q=1" and lazy[1].etag == '"e1"'
    assert lazy[-1] == eager[-1] and list(lazy[2:]) == eager[2:] and list(lazy[2:][1:3]) == eager[3:5]
    assert list(lazy[5:2]) == [] and len(lazy[10:]) == 0 and list(lazy[::3]) == eager[::3]
    with pytest.raises(IndexError):
        lazy[7]
    with pytest.raises(IndexError):
        lazy[2:][5]


class _Recording:
    """A fetcher that records what its observer says of each result."""

    def __init__(self, said):
        self.said = said

    def fetch_host(self, host, requests, state, observe=None):
        kept = []
        for req in requests:
            res = FetchResult(url=req.url, fp=req.fp, fetch_time=1.0, elapsed_ms=1.0, outcome=OK, body=b"b")
            self.said.append(observe(res) if observe else None)
            if not self.said[-1]:
                kept.append(res)
        return kept, state

    def close(self):
        pass


def test_fetch_one_host_takes_each_page_it_streams_and_only_those():
    said = []
    pages, _, _ = fetch_one_host(lambda: _Recording(said), "h.test", _rows(4), None, on_page=lambda p: None)
    assert said == [True] * 4 and pages == []
    said.clear()    # a progress meter alone takes nothing: the pages come back at the end
    pages, _, _ = fetch_one_host(lambda: _Recording(said), "h.test", _rows(4), None, FetchProgress())
    assert said == [False] * 4 and [p["fp"] for p in pages] == [0, 1, 2, 3]
