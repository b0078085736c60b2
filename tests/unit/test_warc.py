"""The WARC archive without a pipeline: what the fetcher keeps of an exchange, the records
and index lines of a capture, the page step's capture, the commit's listing, --store."""
import gzip
import io
import json

import pytest
from warcio.archiveiterator import ArchiveIterator

from pipelines.config import RoundConfig, stores
from pipelines.crawldir import CrawlDir
from pipelines.settings import effective_round_settings
from schemas import tables
from tests.unit.httpfixtures import LocalServer, loopback_config, page, raw_body, status
from transforms.archive.warc import WarcFile, lookup, parse_cdxj, sort_index, surt
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.records import FetchRequest
from transforms.page.fate import PageConfig, page_fate


NO_ROBOTS = {"/robots.txt": status(404)}
HTML = b"<html><head><title>t</title></head><body>" + b"<p>word</p>" * 400 + b'<a href="/b">b</a></body></html>'


def _fetch(srv, path, keep_http=True, **kw):
    config = loopback_config({"site.test": srv}, keep_http=keep_http, **kw)
    with HostFetcher(config) as f:
        results, _ = f.fetch_host(f"site.test:{srv.port}", [FetchRequest(f"http://site.test:{srv.port}{path}", 1)], None)
    return results[0]


def test_the_fetcher_keeps_the_gzip_payload_as_received_and_the_headers_in_order():
    served = gzip.compress(HTML, mtime=0)
    with LocalServer({**NO_ROBOTS, "*": raw_body(served, {"Content-Encoding": "gzip", "Content-Type": "text/html",
                                                          "X-B": "2", "X-A": "1"})}) as srv:
        r = _fetch(srv, "/a?q=1")
    assert r.body == HTML and r.http["payload"] == served and not r.http["payload_cut"]
    assert r.http["status_line"] == "HTTP/1.1 200 OK"
    names = [k for k, _ in r.http["headers"]]
    assert names.index("X-B") < names.index("X-A") and "Content-Encoding" in names
    assert r.http["request_line"] == "GET /a?q=1 HTTP/1.1"
    assert r.http["request_headers"][0] == ("Host", f"site.test:{srv.port}")
    assert r.http["ip"] == "127.0.0.1"


def test_an_identity_body_is_not_held_twice_and_nothing_is_kept_without_keep_http():
    with LocalServer({**NO_ROBOTS, "*": page(HTML)}) as srv:
        kept = _fetch(srv, "/a")
        plain = _fetch(srv, "/a", keep_http=False)
    assert kept.http["payload"] is None and kept.body == HTML
    assert plain.http is None and plain.body == HTML


def test_a_capped_payload_is_flagged_cut_and_a_404_body_is_kept():
    served = gzip.compress(HTML, mtime=0)
    with LocalServer({**NO_ROBOTS, "/big": raw_body(served, {"Content-Encoding": "gzip"}),
                      "/gone": status(404, b"no such page")}) as srv:
        big = _fetch(srv, "/big", max_body=1000)
        gone = _fetch(srv, "/gone")
    assert big.http["payload_cut"] and len(big.http["payload"]) <= 1000 and len(big.body) == 1000
    assert gone.http["status_line"].startswith("HTTP/1.1 404") and gone.http["payload"] == b"no such page"


def _capture(url="http://www.example.test/a?b=2&a=1", payload=b"<html>x</html>", cut=False, when=1.7e9):
    return {"url": url, "fetch_time": when, "elapsed_ms": 12.5, "payload": payload,
            "outlinks": [("http://example.test/b", "L"), ("http://example.test/c", "R")],
            "http": {"request_line": "GET /a?b=2&a=1 HTTP/1.1", "request_headers": [("Host", "www.example.test")],
                     "status_line": "HTTP/1.1 200 OK", "ip": "127.0.0.1", "payload_cut": cut,
                     "headers": [("Content-Type", "text/html; charset=utf-8"), ("Transfer-Encoding", "chunked")]}}


def test_a_capture_is_request_response_metadata_each_its_own_gzip_member():
    out = io.BytesIO()
    w = WarcFile(out, "f.warc.gz")
    line = w.add(_capture())
    w.add(_capture("http://example.test/z", b"truncated", cut=True, when=1.8e9))
    data = out.getvalue()
    recs = [(r.rec_type, dict(r.rec_headers.headers), r.http_headers, r.raw_stream.read())
            for r in ArchiveIterator(io.BytesIO(data))]
    assert [r[0] for r in recs] == ["warcinfo"] + ["request", "response", "metadata"] * 2
    req, resp, meta = recs[1:4]
    assert req[1]["WARC-Concurrent-To"] == resp[1]["WARC-Record-ID"] == meta[1]["WARC-Concurrent-To"]
    assert resp[3] == b"<html>x</html>" and resp[1]["WARC-IP-Address"] == "127.0.0.1"
    assert resp[2].get_header("X-Crawler-Transfer-Encoding") == "chunked" and not resp[2].get_header("Transfer-Encoding")
    assert "WARC-Truncated" not in resp[1] and recs[5][1]["WARC-Truncated"] == "length"
    assert meta[3].decode().splitlines() == ["fetchTimeMs: 12", "outlink: http://example.test/b L",
                                              "outlink: http://example.test/c R"]
    key, stamp, fields = parse_cdxj(line)
    assert (key, stamp) == ("test,example)/a?a=1&b=2", "20231114221320")
    member = data[int(fields["offset"]):int(fields["offset"]) + int(fields["length"])]
    assert gzip.decompress(member).startswith(b"WARC/1.1\r\n") and b"WARC-Type: response" in gzip.decompress(member)[:400]
    assert fields["status"] == "200" and fields["mime"] == "text/html" and fields["digest"].startswith("sha1:")


@pytest.mark.parametrize("url", ["http://www.Example.org:80/a/B?z=1&a=2", "https://example.org:8443/",
                                 "http://sub.example.org/path;p?x=%20y&b=&a", "http://example.org",
                                 "http://a.test:8080/p/q.html?id=7&cat=b"])
def test_surt_keys_agree_with_the_surt_package(url):
    import surt as surt_pkg   # installed with cdxj-indexer (requirements-dev.txt)
    assert surt(url) == surt_pkg.surt(url)


def test_lookup_finds_the_captures_of_a_url_by_binary_search():
    lines = sort_index([f"{surt(u)} {t} " + json.dumps({"url": u, "n": t}) for u, t in
                        [("http://a.test/", "20200101000000"), ("http://a.test/x", "20200101000000"),
                         ("http://a.test/", "20210101000000"), ("http://b.test/", "20200101000000")]])
    assert [t for t, _ in lookup(lines, "http://a.test/")] == ["20200101000000", "20210101000000"]
    assert lookup(lines, "http://c.test/") == []


def _page(**kw):
    p = {"fp": 1, "url": "http://a.test/", "host": "a.test", "depth": 0, "fetch_time": 1.7e9, "elapsed_ms": 3.0,
         "outcome": tables.OK, "http_status": 200, "content_type": "text/html", "body": HTML,
         "http": {"payload": None, "status_line": "HTTP/1.1 200 OK", "headers": []}}
    p.update(kw)
    return p


def test_the_page_step_archives_what_it_fetched_with_its_outlinks_but_not_noindex():
    config = PageConfig(round_no=1, now=1.7e9, archive=True, store_pages=False)
    fate = page_fate(_page(), config)
    assert fate.stored is None and fate.archived["payload"] == HTML
    assert fate.archived["outlinks"] == [("http://a.test/b", "L")]
    noindex = HTML.replace(b"<head>", b'<head><meta name="robots" content="noindex">')
    assert page_fate(_page(body=noindex), config).archived is None
    assert page_fate(_page(), PageConfig(round_no=1, now=1.7e9)).archived is None
    gone = page_fate(_page(http_status=404, outcome=tables.HTTP_ERROR, body=b"",
                           http={"payload": b"gone", "status_line": "HTTP/1.1 404 Not Found", "headers": []}), config)
    assert gone.archived["payload"] == b"gone"


@pytest.mark.parametrize("given, expected", [
    ({}, (False, True)), ({"store": "both"}, (True, True)), ({"store": "parquet"}, (True, False)),
    ({"store": "none"}, (False, False)), ({"store_pages": True}, (True, True)),
    ({"store": "both", "store_pages": False}, (False, True))])
def test_store_and_its_deprecated_alias(given, expected):
    s = effective_round_settings(given, {})
    assert stores(s) == expected
    cfg = RoundConfig.build(s, 1, 0.0)
    assert (cfg.page.store_pages, cfg.page.archive, cfg.fetch.keep_http) == (expected[0], expected[1], expected[1])
    assert (cfg.warc_max_bytes is not None) == expected[1]


def test_commit_lists_only_the_warc_files_of_committed_bundles_and_deletes_the_rest(tmp_path):
    c = CrawlDir(str(tmp_path))
    d = tmp_path / "rounds" / "000001" / "warc"
    d.mkdir(parents=True)
    for name in ("beamcrawl-000001-aaa-00000.warc.gz", "beamcrawl-000001-bbb-00000.warc.gz"):
        (d / name).write_bytes(b"x")
    (d / "files.json").write_text(json.dumps([{"name": "beamcrawl-000001-aaa-00000.warc.gz", "bytes": 1}]))
    (d / "index.cdxj").write_text("")
    c.commit(1, {}, {})
    assert c.manifest(1)["warc"] == ["beamcrawl-000001-aaa-00000.warc.gz"]
    assert c.warc_index(1) == str(d / "index.cdxj")
    assert sorted(p.name for p in d.glob("*.warc.gz")) == ["beamcrawl-000001-aaa-00000.warc.gz"]


def test_a_round_killed_before_its_commit_leaves_no_listed_warc_and_is_discarded(tmp_path):
    c = CrawlDir(str(tmp_path))
    d = tmp_path / "rounds" / "000002" / "warc"
    d.mkdir(parents=True)
    (d / "beamcrawl-000002-ccc-00000.warc.gz").write_bytes(b"half")
    assert c.committed_rounds() == []
    assert c.discard_uncommitted(2) and not d.exists()
    c.commit(2, {}, {})   # a round without WARC (--store parquet): nothing listed, no index
    assert c.manifest(2)["warc"] == [] and c.warc_index(2) is None


def test_a_304_to_a_revisit_is_a_revisit_record_with_the_server_not_modified_profile(tmp_path):
    cap = _capture(payload=b"")
    cap["http"] = dict(cap["http"], status_line="HTTP/1.1 304 Not Modified",
                       headers=[("ETag", '"v1"'), ("Date", "Tue, 14 Nov 2023 22:13:20 GMT")])
    path = tmp_path / "r.warc.gz"
    with open(path, "wb") as out:
        w = WarcFile(out, "r.warc.gz")
        line = w.add(cap)
    recs = list(ArchiveIterator(open(path, "rb")))
    assert [r.rec_type for r in recs] == ["warcinfo", "request", "revisit", "metadata"]
    rev = recs[2]
    assert rev.rec_headers.get_header("WARC-Profile") == \
        "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
    assert rev.rec_headers.get_header("WARC-Refers-To-Target-URI") == cap["url"]
    assert rev.http_headers.get_statuscode() == "304" and rev.http_headers.get_header("ETag") == '"v1"'
    _, _, fields = parse_cdxj(line)
    assert fields["status"] == "304" and fields["mime"] == "warc/revisit"
    # an independent reader accepts it, digests included
    import subprocess
    import sys
    check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", "-v", str(path)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
