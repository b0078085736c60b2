"""The simulated web over HTTP (in-process server on loopback): what a client sees."""
import gzip
import time

import pytest

from tests.simweb import SimClock, SimWebServer, build_web
from tests.simweb.model import ENCODING_NAMES, HTML
from tests.simweb.refcrawl import RefCrawler, extract_links


@pytest.fixture(scope="module")
def served():
    clock = SimClock(1769904000.0)
    web = build_web("small", seed=1, clock=clock)
    srv = SimWebServer(web).start()
    c = RefCrawler(srv.hostmap_lines)
    try:
        yield web, srv, c, clock
    finally:
        srv.stop()


def url(web, host, path):
    return f"http://{web.netloc(host)}{path}"


def test_every_host_listens_on_its_own_loopback_address(served):
    web, srv, c, _ = served
    addrs = [l.rsplit(":", 1)[1] for l in srv.hostmap_lines]
    assert len(set(addrs)) == len(addrs) == len(web.hosts)
    assert all(a.startswith("127.") for a in addrs)
    for line in srv.hostmap_lines:
        host, port, addr = line.split(":")
        assert int(port) == srv.port == web.port
        r = c.session.get(f"http://{addr}:{port}/robots.txt", headers={"Host": host}, timeout=5,
                         allow_redirects=False)
        assert r.status_code in (200, 301, 404, 500)
        req = srv.requests[-1]
        assert req["addr"] == addr and req["host"] == host


def test_host_header_is_case_insensitive(served):
    web, srv, c, _ = served
    addr = web.hosts[0].addr
    r = c.session.get(f"http://{addr}:{srv.port}/", headers={"Host": f"SITE0.SimWeb.Test:{srv.port}"}, timeout=5,
                     allow_redirects=False)
    assert r.status_code == 200 and b"site0-0" in r.content


def test_hostmap_file_is_curl_resolve_syntax(served, tmp_path):
    web, srv, c, _ = served
    p = srv.write_hostmap(tmp_path / "hosts.txt")
    lines = p.read_text().split()
    assert lines == srv.hostmap_lines
    assert all(l.count(":") == 2 for l in lines)


def test_pages_are_served_in_each_encoding(served):
    web, srv, c, _ = served
    seen = set()
    for i in range(web.N):
        if web.kind[i] != HTML or web.dup_of[i] >= 0:
            continue
        e = ENCODING_NAMES[web.encoding[i]]
        if e in seen:
            continue
        seen.add(e)
        r = c.get(web.url(i))
        assert r.status_code == 200
        ctype = r.headers["Content-Type"]
        body = r.content
        if e == "utf-8":
            assert "charset=utf-8" in ctype and b'<meta charset="utf-8">' in body
            body.decode("utf-8")
        elif e == "gbk-meta":
            assert "charset" not in ctype and b'<meta charset="gbk">' in body
        elif e == "gbk-header":
            assert "charset=GBK" in ctype and b"<meta charset" not in body
        elif e == "gbk-undeclared":
            assert "charset" not in ctype and b"<meta charset" not in body
        elif e == "iso-8859-1":
            assert "charset=ISO-8859-1" in ctype
        if e.startswith("gbk"):
            text = body.decode("gbk")
            assert any("\u4e00" <= ch <= "\u9fff" for ch in text)
            with pytest.raises(UnicodeDecodeError):
                body.decode("utf-8")
        if e == "iso-8859-1":
            text = body.decode("iso-8859-1")
            assert any(ch in text for ch in "éïçüñèû")
    assert seen == set(ENCODING_NAMES)


def test_non_html_documents_are_terminal(served):
    web, srv, c, _ = served
    magic = {"pdf": b"%PDF-", "jpg": b"\xff\xd8", "png": b"\x89PNG", "doc": b"\xd0\xcf\x11\xe0"}
    gt = web.ground_truth()
    p = gt["pages"].to_pydict()
    found = set()
    for u, k, ct in zip(p["url"], p["kind"], p["content_type"]):
        if k in magic and k not in found and "mirror" not in u:
            r = c.get(u)
            assert r.status_code == 200 and r.headers["Content-Type"] == ct
            assert r.content.startswith(magic[k])
            found.add(k)
    assert {"pdf"} <= found


def test_robots_variants(served):
    web, srv, c, _ = served
    def robots(host):
        return c.get(url(web, host, "/robots.txt"))
    r = robots("site0.simweb.test")
    assert r.status_code == 200
    txt = r.text
    for needle in ("User-agent: *", "Disallow:", "Allow:", "Sitemap: http://site0.simweb.test"):
        assert needle in txt
    all_txt = "".join(robots(f"site{k}.simweb.test").text for k in range(3))
    assert "Crawl-delay:" in all_txt and "$" in all_txt and "*" in all_txt.replace("User-agent: *", "")
    assert robots("robots404.simweb.test").status_code == 404
    assert robots("robots500.simweb.test").status_code == 500
    rr = robots("robotsredirect.simweb.test")
    assert rr.status_code == 301 and rr.headers["Location"].endswith("/robots-moved.txt")
    assert "Disallow" in c.get(rr.headers["Location"]).text
    g = robots("robotsgarbage.simweb.test")
    assert g.status_code == 200 and b"\x00" in g.content
    h = robots("robotshuge.simweb.test")
    assert len(h.content) > 500 * 1024 and h.content.rstrip().endswith(b"Disallow: /")


def test_sitemap_index_with_gzipped_child_and_lastmod(served):
    web, srv, c, _ = served
    idx = c.get(url(web, "site0.simweb.test", "/sitemap_index.xml"))
    assert idx.status_code == 200 and b"<sitemapindex" in idx.content
    import re
    locs = re.findall(rb"<loc>([^<]+)</loc>", idx.content)
    assert any(l.endswith(b".gz") for l in locs)
    urls = []
    for loc in locs:
        r = c.get(loc.decode())
        body = gzip.decompress(r.content) if loc.endswith(b".gz") else r.content
        assert b"<urlset" in body and b"<lastmod>" in body
        urls += re.findall(rb"<loc>([^<]+)</loc>", body)
    h = web.hosts[0]
    assert len(urls) == sum(1 for i in range(h.start, h.end) if web.kind[i] != 5)


def test_etag_last_modified_and_conditional_get(served):
    web, srv, c, clock = served
    i = next(i for i in range(web.N) if web.kind[i] == HTML and web.change_rate[i] > 0
             and web.page_host[i] == 0 and web.dup_of[i] < 0 and not web.query_page[i])
    u = web.url(i)
    r = c.get(u)
    assert r.status_code == 200
    etag, lm = r.headers["ETag"], r.headers["Last-Modified"]
    assert c.get(u, headers={"If-None-Match": etag}).status_code == 304
    assert c.get(u, headers={"If-Modified-Since": lm}).status_code == 304
    assert c.get(u, headers={"If-None-Match": '"nope"'}).status_code == 200
    # advance simulated time past the next change: new ETag, new content, 200 to old validators
    nxt = web.change_times(i, clock(), clock() + 400 / web.change_rate[i])[0]
    clock.set(nxt + 1)
    r2 = c.get(u, headers={"If-None-Match": etag})
    assert r2.status_code == 200 and r2.headers["ETag"] != etag and r2.content != r.content
    assert r2.headers["Last-Modified"] != lm
    assert c.get(u, headers={"If-Modified-Since": lm}).status_code == 200
    # links do not change, only text
    assert {d for d, _, _ in extract_links(r.content, u)} == {d for d, _, _ in extract_links(r2.content, u)}


def test_static_page_never_changes(served):
    web, srv, c, clock = served
    i = next(i for i in range(web.N) if web.kind[i] == HTML and web.change_rate[i] == 0)
    a = c.get(web.url(i))
    clock.advance(365 * 86400)
    b = c.get(web.url(i), headers={"If-None-Match": a.headers["ETag"]})
    assert b.status_code == 304


def test_gzip_hosts_compress_when_asked(served):
    web, srv, c, _ = served
    web2 = build_web("small", seed=1, gzip_host_share=1.0)
    srv2 = SimWebServer(web2).start()
    try:
        c2 = RefCrawler(srv2.hostmap_lines)
        r = c2.get(web2.seeds[0], headers={"Accept-Encoding": "gzip"})
        assert r.headers.get("Content-Encoding") == "gzip" and b"<html" in r.content
        r = c2.get(web2.seeds[0], headers={"Accept-Encoding": "identity"})
        assert "Content-Encoding" not in r.headers
    finally:
        srv2.stop()


def test_two_webs_run_at_once_on_different_ports():
    a = SimWebServer(build_web("small", seed=1)).start()
    b = SimWebServer(build_web("small", seed=1)).start()
    try:
        assert a.port != b.port
    finally:
        a.stop()
        b.stop()


def test_head_and_404_and_unknown_method(served):
    web, srv, c, _ = served
    h = c.session.head(f"http://{web.hosts[0].addr}:{srv.port}/", headers={"Host": "site0.simweb.test"}, timeout=5,
                       allow_redirects=False)
    assert h.status_code == 200 and h.content == b"" and int(h.headers["Content-Length"]) > 0
    assert c.get(url(web, "site0.simweb.test", "/no/such/page")).status_code == 404
    p = c.session.post(f"http://{web.hosts[0].addr}:{srv.port}/", data=b"x", timeout=5, allow_redirects=False)
    assert p.status_code == 405


def test_deep_web_form_and_results_over_http(served):
    web, srv, c, _ = served
    from urllib.parse import urlencode
    import lxml.html
    from tests.simweb.deepweb import query
    form = c.get(url(web, "jobs.simweb.test", "/"))
    doc = lxml.html.fromstring(form.content)
    f = doc.forms[0]
    assert f.method.upper() == "GET" and f.action == "/search"
    assert {"q", "category", "industry", "city", "sort"} <= set(f.fields.keys())
    params = {"q": "engineer", "category": "Engineering", "industry": "", "city": "Berlin", "sort": "salary"}
    expected = query(web.records, **params)
    got = []
    page = 1
    while True:
        r = c.get(url(web, "jobs.simweb.test", "/search?" + urlencode({**params, "page": page})))
        d = lxml.html.fromstring(r.content)
        ids = [int(a.get("href").rsplit("/", 1)[1]) for a in d.xpath("//li[@class='result']/a")]
        got += ids
        if not d.xpath("//a[@rel='next']") or page > 100:
            break
        page += 1
    assert got == expected and len(got) > web.cfg.results_per_page
    assert f"{len(expected)} jobs found".encode() in c.get(url(web, "jobs.simweb.test", "/search?" + urlencode(params))).content
    # sort changes only the order
    other = query(web.records, **{**params, "sort": "title"})
    assert sorted(other) == sorted(expected) and other != expected
    rec = c.get(url(web, "jobs.simweb.test", f"/job/{expected[0]}"))
    assert web.records.rows[expected[0]]["title"].encode() in rec.content
    # records are not in the link graph
    reach = set(web.ground_truth()["reachable"].column("url").to_pylist())
    assert not any("/job/" in u or "/search" in u for u in reach)
    assert url(web, "jobs.simweb.test", "/") in reach


def test_request_log_records_what_matters(served):
    web, srv, c, _ = served
    n = len(srv.requests)
    c.get(web.seeds[1], headers={"If-None-Match": '"x"', "Accept-Encoding": "gzip"})
    rec = srv.requests[n]
    assert rec["host"] == "site1.simweb.test" and rec["path"] == "/" and rec["method"] == "GET"
    assert rec["status"] == 200 and rec["start"] <= rec["end"]
    assert rec["headers"]["User-Agent"].startswith("simweb-refcrawl")
    assert rec["headers"]["If-None-Match"] == '"x"' and rec["headers"]["Accept-Encoding"] == "gzip"
    assert rec["addr"] == web.hosts[1].addr and "sim_time" in rec


def test_refuses_non_loopback_addresses():
    web = build_web("small", seed=1, addr_prefix="10.0")
    with pytest.raises(ValueError):
        SimWebServer(web).start()


def _words(body):
    import lxml.html
    return set(lxml.html.fromstring(body).text_content().split())


def test_near_duplicates_and_mirrors_are_served_as_recorded(served):
    web, srv, c, _ = served
    p = web.ground_truth()["pages"].to_pydict()
    near = [(u, d) for u, d, k in zip(p["url"], p["is_duplicate_of"], p["dup_kind"]) if k == "near"]
    mirror = [(u, d) for u, d, k, kind in zip(p["url"], p["is_duplicate_of"], p["dup_kind"], p["kind"])
              if k == "mirror" and kind == "html"]
    assert near and mirror
    for u, d in near:
        a, b = _words(c.get(u).content), _words(c.get(d).content)
        jacc = len(a & b) / len(a | b)
        assert 0.7 < jacc < 1.0, (u, d, jacc)
    for u, d in mirror[:10]:
        a, b = c.get(u), c.get(d)
        assert a.status_code == b.status_code == 200
        assert _words(a.content) == _words(b.content)


def test_query_parameter_order_variants_serve_the_same_page(served):
    web, srv, c, _ = served
    p = web.ground_truth()["pages"].to_pydict()
    variants = [(u, d) for u, d, k in zip(p["url"], p["is_duplicate_of"], p["dup_kind"]) if k == "query_order"]
    assert variants
    for u, d in variants:
        a, b = c.get(u), c.get(d)
        assert a.status_code == b.status_code == 200 and a.headers["ETag"] == b.headers["ETag"]
        # the canonical link names the sorted order (on the original host, also from mirrors)
        path = d.split("/", 3)[3].replace("&", "&amp;")
        assert f'rel="canonical" href="http://'.encode() in a.content
        assert f'{path}">'.encode() in a.content


def test_server_routes_unnormalised_targets_like_a_real_server(served):
    web, srv, c, _ = served
    i = next(i for i in range(web.N) if web.kind[i] == HTML and web.paths[i].startswith("/news/"))
    p = web.paths[i]
    for target in ("/%6Eews" + p[5:], "/x/.." + p, "/news/./" + p[6:]):
        r = c.session.get(f"http://{web.hosts[web.page_host[i]].addr}:{srv.port}{target}",
                          headers={"Host": web.hosts[web.page_host[i]].name}, timeout=5, allow_redirects=False)
        assert r.status_code == 200, target


def test_pipelined_requests_and_post_bodies(served):
    import socket
    web, srv, c, _ = served
    s = socket.create_connection((web.hosts[0].addr, srv.port), timeout=5)
    try:
        req = (b"POST / HTTP/1.1\r\nHost: site0.simweb.test\r\nContent-Length: 5\r\n\r\nhel")
        s.sendall(req)
        time.sleep(0.1)
        s.sendall(b"lo" + b"GET /robots.txt HTTP/1.1\r\nHost: site0.simweb.test\r\n\r\n"
                  b"GET / HTTP/1.1\r\nHost: site0.simweb.test\r\nConnection: close\r\n\r\n")
        data = b""
        deadline = time.time() + 5
        while time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    assert data.count(b"HTTP/1.1 ") == 3
    assert data.startswith(b"HTTP/1.1 405") and b"HTTP/1.1 200 OK" in data
