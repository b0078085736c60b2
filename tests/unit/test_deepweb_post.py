"""Deep-web POST submissions (--deep_web_post_hosts) and per-host budgets (#17): the pure
parts (request identity, candidates and URL-seen, settings, planner, page fate, WARC) and
the fetcher against a loopback server."""
import io
import json
import socket

import pytest
from warcio.archiveiterator import ArchiveIterator

from pipelines.settings import ROUND_SETTINGS, UsageError
from pipelines.settings_deepweb import parse_host_budgets, parse_post_hosts
from schemas import tables
from strategies.deepweb import planner
from strategies.deepweb import templates as tpl
from tests.unit.httpfixtures import LocalServer, loopback_config, page, status
from transforms.archive.warc import WarcFile, parse_cdxj
from transforms.deepweb import probing
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.records import TRANSIENT, FetchRequest
from transforms.page.fate import PageConfig, page_fate
from transforms.urls import canonical, request
from transforms.urls.scope import UrlFilter
from transforms.urlseen.candidates import candidates_and_edges
from transforms.urlseen.merge import merge_bucket


URL = "http://lib.test/suggest"
POST_FORM = {"action": URL, "method": "post",
             "inputs": [{"name": "title", "kind": "text", "values": [], "default": ""},
                        {"name": "fmt", "kind": "select", "values": ["book", "audio"], "default": "book"}]}
GET_FORM = {"action": "http://other.test/find", "method": "get",
            "inputs": [{"name": "q", "kind": "text", "values": [], "default": ""}]}
WORDS = [a + b for a in "bcdfg" for b in ("ar", "el", "ix", "on", "um", "ot")]   # 30 page words


def _found(form, page_url):
    return [{"page": page_url, "page_fp": 1, "depth": 0, "form": form, "words": WORDS, "links": []}]


# ----------------------------------------------------------------- request identity

def test_a_get_keeps_its_fingerprint_and_posts_differ_by_body():
    assert request.request_fingerprint(URL) == canonical.fingerprint(URL)
    assert request.request_fingerprint(URL, "GET", "x=1") == canonical.fingerprint(URL)
    a, b = request.request_fingerprint(URL, "POST", "title=a"), request.request_fingerprint(URL, "POST", "title=b")
    assert len({a, b, canonical.fingerprint(URL)}) == 3
    assert request.request_fingerprint(URL, "post", "title=a") == a
    key = request.request_key(URL, "POST", "title=a+b&fmt=book")
    assert request.split_key(key) == (URL, "POST", "title=a+b&fmt=book")
    assert request.split_key(URL) == (URL, None, None) and request.key_fingerprint(key) == \
        request.request_fingerprint(URL, "POST", "title=a+b&fmt=book")


def test_submission_request_of_a_post_form_is_a_key_with_its_body():
    assert tpl.submission_request(POST_FORM, {"title": "x y"}) == f"POST {URL} title=x+y&fmt=book"
    assert tpl.as_url(f"POST {URL} title=x") == URL + "?title=x"
    assert tpl.submission_request(GET_FORM, {"q": "z"}) == "http://other.test/find?q=z"


def test_two_posts_to_one_url_are_two_frontier_rows_with_their_bodies():
    bundle = {"src": "http://lib.test/", "src_fp": 7, "depth": 1, "source": tables.SOURCE_FORM,
              "dst": [URL, URL], "anchor": ["", ""], "method": "POST", "request_body": ["title=a", "title=b"]}
    link = {"src": "http://lib.test/", "src_fp": 7, "depth": 1, "dst": [URL], "anchor": ["x"]}
    cand, _ = candidates_and_edges([bundle, link], 1)
    rows = cand.to_pylist()
    assert [r["method"] for r in rows] == ["POST", "POST", None]
    assert [r["dst_fp"] for r in rows] == [request.request_fingerprint(URL, "POST", "title=a"),
                                          request.request_fingerprint(URL, "POST", "title=b"),
                                          canonical.fingerprint(URL)]
    frontier, _, _ = merge_bucket([], [], [], [cand], [], 1)
    got = {(r["method"], r["request_body"]) for r in frontier.to_pylist()}
    assert got == {("POST", "title=a"), ("POST", "title=b"), (None, None)}
    # the same POST again (another round's candidate) is known: no new row
    again, _, stats = merge_bucket([frontier], [], [], [candidates_and_edges([bundle], 2)[0]], [], 2)
    assert again.num_rows == 3 and stats["new_urls"] == 0


# ----------------------------------------------------------------- settings

def test_host_budget_and_post_host_settings_are_checked():
    assert parse_host_budgets("A.test=3, b.test:8080=0") == (("a.test", 3), ("b.test:8080", 0))
    assert parse_post_hosts("Lib.test, x.test:81") == ("lib.test", "x.test:81")
    s = ROUND_SETTINGS["deep_web_host_budgets"]
    for bad, why in [("a.test", "not host=N"), ("a.test=x", "whole number"), ("a=1,a=2", "twice"),
                     ("a.test=-1", "at least 0"), ("http://a.test/=1", "not a host name")]:
        with pytest.raises(UsageError, match=why) as e:
            s.coerce(bad)
        assert str(e.value).startswith("--deep_web_host_budgets ")
    with pytest.raises(UsageError, match="--deep_web_post_hosts .*not a host name"):
        ROUND_SETTINGS["deep_web_post_hosts"].coerce("https://lib.test/")


def test_for_host_picks_the_budget_and_the_post_allowance():
    cfg = planner.ProbeConfig(budget=50, post_hosts=("lib.test",),
                              host_budgets=(("lib.test", 4), ("jobs.test:81", 2), ("jobs.test", 9)))
    assert cfg.for_host("lib.test:8080").budget == 4 and cfg.for_host("lib.test:8080").post
    assert cfg.for_host("jobs.test:81").budget == 2 and cfg.for_host("jobs.test:82").budget == 9
    assert cfg.for_host("other.test").budget == 50 and not cfg.for_host("other.test").post


# ----------------------------------------------------------------- planner

def _advance(host, found, cfg, state=None, digests=()):
    return probing.advance_host(host, found, list(digests), [state] if state else [], 1, cfg, UrlFilter())


def test_post_forms_are_planned_only_on_allowed_hosts():
    row, forms, kept, _, _ = _advance("lib.test", _found(POST_FORM, "http://lib.test/"), planner.ProbeConfig())
    state = json.loads(row["state"])
    assert [f["phase"] for f in state["forms"].values()] == ["post"] and kept == [] and state["sent"] == 0
    assert forms[0]["method"] == "post"
    cfg = planner.ProbeConfig(post_hosts=("lib.test",), words_per_round=5)
    row, _, kept, _, _ = _advance("lib.test", [], cfg, state)          # allowed now: taken up
    state = json.loads(row["state"])
    assert state["sent"] > 0 and all(k.startswith(f"POST {URL} ") for k in state["queries"])
    assert {b.get("method") for b in kept} == {"POST"}
    assert sum(len(b["request_body"]) for b in kept) == state["sent"]
    assert all(len(b["dst"]) == len(b["request_body"]) and set(b["dst"]) == {URL} for b in kept)
    row, _, kept, _, _ = _advance("lib.test", [], planner.ProbeConfig(words_per_round=5), state)
    state = json.loads(row["state"])                                     # allowance withdrawn
    assert [f["phase"] for f in state["forms"].values()] == ["post"] and kept == []


def test_a_post_digest_is_matched_to_its_submission():
    cfg = planner.ProbeConfig(post_hosts=("lib.test",), words_per_round=2, templates=False)
    row, _, kept, _, _ = _advance("lib.test", _found(POST_FORM, "http://lib.test/"), cfg)
    state = json.loads(row["state"])
    key = sorted(state["queries"])[0]
    digest = {"url": key, "result": {"records": ["http://lib.test/item/1"], "words": [["x"]],
                                     "signature": 5, "count": 1, "next": None}}
    row, _, _, _, _ = _advance("lib.test", [], cfg, state, [digest])
    state = json.loads(row["state"])
    assert state["queries"][key]["state"] == "done" and len(state["records"]) == 1


def test_a_host_budget_caps_its_submissions_and_others_keep_the_default():
    cfg = planner.ProbeConfig(words_per_round=25, templates=False, host_budgets=(("small.test", 3),))
    small = dict(GET_FORM, action="http://small.test/find")
    row, _, kept, _, _ = _advance("small.test", _found(small, "http://small.test/"), cfg)
    assert json.loads(row["state"])["sent"] == 3 and sum(len(b["dst"]) for b in kept) == 3
    row, _, kept, _, _ = _advance("other.test", _found(GET_FORM, "http://other.test/"), cfg)
    assert json.loads(row["state"])["sent"] == 25 and sum(len(b["dst"]) for b in kept) == 25


# ----------------------------------------------------------------- page fate

def _post_page(status_code, location):
    return {"fp": request.request_fingerprint(URL, "POST", "title=a"), "url": URL, "host": "lib.test",
            "depth": 1, "source": tables.SOURCE_FORM, "method": "POST", "request_body": "title=a",
            "outcome": tables.REDIRECT, "http_status": status_code, "redirect_to": location,
            "fetch_time": 1.0, "retries": 0, "redirects": 0}


@pytest.mark.parametrize("code,method", [(303, None), (302, None), (301, None), (307, "POST"), (308, "POST")])
def test_redirect_after_a_post(code, method):
    fate = page_fate(_post_page(code, "http://lib.test/thanks"), PageConfig(round_no=1, now=1.0))
    (bundle,) = fate.links
    assert bundle["dst"] == ["http://lib.test/thanks"] and bundle.get("method") == method
    assert fate.visited["method"] == "POST" and fate.visited["request_body"] == "title=a"
    if method:
        assert bundle["request_body"] == ["title=a"]


# ----------------------------------------------------------------- fetcher

def _post(srv, allowed=("lib.test",), path="/suggest", body="title=a+b", **cfg):
    host = f"lib.test:{srv.port}"
    config = loopback_config({"lib.test": srv}, post_hosts=tuple(allowed), keep_http=True, **cfg)
    with HostFetcher(config) as f:
        req = FetchRequest(f"http://{host}{path}", 1, method="POST", body=body)
        (res,), _ = f.fetch_host(host, [req], None)
    return res


def test_a_post_is_sent_with_its_body_and_content_type():
    with LocalServer({"/robots.txt": status(404), "/suggest": page(b"<html>thanks</html>")}) as srv:
        res = _post(srv)
        assert res.outcome == tables.OK and res.body == b"<html>thanks</html>"
        assert srv.bodies == [("/suggest", b"title=a+b")]
        (post,) = [r for r in srv.requests if r[1] == "POST"]
        assert post[3]["Content-Type"] == "application/x-www-form-urlencoded"
        assert res.http["request_line"] == "POST /suggest HTTP/1.1"
        assert res.http["request_body"] == b"title=a+b"


def test_a_post_goes_out_on_a_new_connection_after_the_hosts_gets():
    """A POST is never sent on a kept-alive connection (a failure to connect then means it
    was not sent): after two GETs of the host, it opens one more connection than they did."""
    def connections(methods):
        with LocalServer({"/robots.txt": status(404), "/a": page(b"a"), "/b": page(b"b"),
                          "/suggest": page(b"thanks")}) as srv:
            host = f"lib.test:{srv.port}"
            config = loopback_config({"lib.test": srv}, post_hosts=("lib.test",))
            reqs = [FetchRequest(f"http://{host}{path}", i, method=method, body="t=1" if method else None)
                    for i, (path, method) in enumerate(methods)]
            with HostFetcher(config) as f:
                results, _ = f.fetch_host(host, reqs, None)
            assert [r.outcome for r in results] == [tables.OK] * len(methods)
            return srv.connections
    gets = [("/a", None), ("/b", None)]
    assert connections(gets + [("/suggest", "POST")]) == connections(gets) + 1


def test_no_post_to_a_host_not_allowed_and_robots_txt_applies():
    with LocalServer({"/robots.txt": page(b"User-agent: *\nDisallow: /suggest\n", "text/plain"),
                      "/suggest": page(b"x")}) as srv:
        res = _post(srv, allowed=())
        assert (res.outcome, res.reason) == (tables.FAILED, "post_not_allowed") and srv.requests == []
        res = _post(srv, allowed=("lib.test:%d" % srv.port,))
        assert res.outcome == tables.ROBOTS_DENIED and srv.bodies == []


@pytest.mark.parametrize("route,reason", [(status(503), "http_503"),
                                          (status(503, headers={"Retry-After": "0"}), "retry_after"),
                                          (status(429), "http_429")])
def test_a_post_that_reached_the_server_is_never_retried(route, reason):
    with LocalServer({"/robots.txt": status(404), "/suggest": route}) as srv:
        res = _post(srv)
        assert res.outcome == tables.FAILED and res.reason == f"{reason} (POST not retried)"
        assert len(srv.bodies) == 1                      # sent once, not again after Retry-After


def test_a_post_whose_connection_failed_is_retried():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                            # nothing listens there: refused

    class Closed:
        host = "127.0.0.1"
    Closed.port = port
    res = _post(Closed(), obey_robots=False)
    assert res.outcome == TRANSIENT and res.reason == "connect_refused"


# ----------------------------------------------------------------- WARC

def test_warc_request_record_of_a_post_carries_its_body():
    buf = io.BytesIO()
    w = WarcFile(buf, "t.warc.gz")
    http = {"request_line": "POST /suggest HTTP/1.1",
            "request_headers": [("Host", "lib.test"), ("Content-Type", "application/x-www-form-urlencoded"),
                                ("Content-Length", "9")],
            "request_body": b"title=a+b", "status_line": "HTTP/1.1 200 OK",
            "headers": [("Content-Type", "text/html")], "payload_cut": False, "ip": "127.0.0.1"}
    line = w.add({"url": URL, "fetch_time": 1e9, "http": http, "payload": b"<html>ok</html>"})
    key, _, fields = parse_cdxj(line)
    assert "__wb_method=post" in key and "title=a+b" in key
    assert fields["method"] == "POST" and fields["requestBody"] == "title=a+b"
    reqs = [(r.http_headers.protocol, r.content_stream().read())
            for r in ArchiveIterator(io.BytesIO(buf.getvalue())) if r.rec_type == "request"]
    assert reqs == [("POST", b"title=a+b")]


def test_a_post_answer_is_never_scheduled_for_a_revisit():
    import pyarrow as pa
    from transforms.recrawl.state import next_state
    rows = [{"fp": 1, "url": "http://lib.test/", "host": "lib.test", "outcome": "ok", "content_fp": 5},
            {"fp": 2, "url": URL, "host": "lib.test", "outcome": "ok", "content_fp": 6,
             "method": "POST", "request_body": "title=a"}]
    out, _ = next_state(pa.Table.from_pylist(rows, schema=tables.VISITED), {}, {}, 1, 100.0)
    assert out.column("fp").to_pylist() == [1]


def test_a_post_stays_a_post_when_readmitted_or_moved_to_another_shard():
    import pyarrow as pa
    from tests.unit.frontier_rows import frontier as frontier_table
    from transforms.shard.split import frontier_as_candidates
    from transforms.urlseen.readmit import readmission
    fp = request.request_fingerprint(URL, "POST", "title=a")
    rows = pa.Table.from_pylist([dict(fp=fp, url=URL, depth=1, first_parent="http://lib.test/",
                                      source="form", refused_by="g", method="POST", request_body="title=a")])
    cand, _ = readmission(rows, UrlFilter())
    assert cand.select(["dst_fp", "method", "request_body"]).to_pylist() == [
        {"dst_fp": fp, "method": "POST", "request_body": "title=a"}]
    moved = frontier_as_candidates(frontier_table([dict(fp=fp, url=URL, host="lib.test", method="POST",
                                                        request_body="title=a")]))
    assert moved.select(["dst_fp", "method", "request_body"]).to_pylist() == [
        {"dst_fp": fp, "method": "POST", "request_body": "title=a"}]
