"""Hostile hosts misbehave as specified and stop by themselves (every loop here is bounded)."""
import time
import zlib

import pytest
import requests

from tests.simweb import SimWebServer, build_web
from tests.simweb.refcrawl import RefCrawler, extract_links


@pytest.fixture(scope="module")
def hostile():
    web = build_web("small", seed=1, hostile=True, trickle_seconds=3,
                    gzip_bomb_bytes=64 * 1024 * 1024, ratelimit_min_gap=0.5)
    srv = SimWebServer(web).start()
    c = RefCrawler(srv.hostmap_lines, timeout=10)
    try:
        yield web, srv, c
    finally:
        srv.stop()


def u(web, host, path):
    return f"http://{web.netloc(host + '.simweb.test')}{path}"


def test_hostile_hosts_are_off_by_default_and_linked_when_on(hostile):
    assert "hostile.simweb.test" not in build_web("small", seed=1).by_name
    web, srv, c = hostile
    r = c.get(web.seeds[0])
    assert u(web, "hostile", "/") in {d for d, _, _ in extract_links(r.content, web.seeds[0])}
    idx = c.get(u(web, "hostile", "/"))
    assert idx.status_code == 200 and b"/trickle" in idx.content


def test_hostile_hosts_are_not_in_reachable(hostile):
    web, srv, c = hostile
    reach = web.ground_truth()["reachable"].column("url").to_pylist()
    assert not any(x in r for r in reach for x in ("hostile.", "trap.", "ratelimit.", "flaky.", "metadata."))


def test_trickle_sends_one_byte_per_second_then_closes(hostile):
    web, srv, c = hostile
    t = time.time()
    with pytest.raises((requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError)):
        c.get(u(web, "hostile", "/trickle"), timeout=(2, 0.5)).content
    t = time.time()
    r = c.get(u(web, "hostile", "/trickle"), timeout=(2, 5))
    assert r.content == b"xxx" and 2.5 < time.time() - t < 8


def test_reset_mid_body(hostile):
    web, srv, c = hostile
    with pytest.raises((requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError)):
        c.get(u(web, "hostile", "/reset")).content


def test_big_page_is_ten_megabytes(hostile):
    web, srv, c = hostile
    r = c.session.get(f"http://{web.by_name['hostile.simweb.test'].addr}:{srv.port}/big.html",
                      headers={"Host": "hostile.simweb.test"}, stream=True, timeout=10, allow_redirects=False)
    assert int(r.headers["Content-Length"]) == 10 * 1024 * 1024
    first = next(r.iter_content(65536))
    assert first.startswith(b"<!DOCTYPE html>")
    r.close()


def test_gzip_bomb_inflates_far_beyond_its_size(hostile):
    web, srv, c = hostile
    r = c.session.get(f"http://{web.by_name['hostile.simweb.test'].addr}:{srv.port}/bomb.html",
                      headers={"Host": "hostile.simweb.test"}, stream=True, timeout=30, allow_redirects=False)
    assert r.headers["Content-Encoding"] == "gzip"
    raw = r.raw.read(int(r.headers["Content-Length"]), decode_content=False)
    assert len(raw) < 1024 * 1024
    d = zlib.decompressobj(31)
    out = d.decompress(raw, 10 * 1024 * 1024)   # bounded inflation
    assert len(out) == 10 * 1024 * 1024 and d.unconsumed_tail


def test_redirect_loops_and_chains(hostile):
    web, srv, c = hostile
    a = c.get(u(web, "hostile", "/loop/a"))
    b = c.get(u(web, "hostile", "/loop/b"))
    assert a.status_code == b.status_code == 302
    assert a.headers["Location"] == "/loop/b" and b.headers["Location"] == "/loop/a"
    loc = "/chain/0"
    for _ in range(20):
        r = c.get(u(web, "hostile", loc))
        assert r.status_code == 302
        loc = r.headers["Location"]
    assert loc == "/chain/20"


def test_redirect_to_forbidden_address(hostile):
    web, srv, c = hostile
    gt = web.ground_truth()
    hosts = gt["hosts"].to_pydict()
    forbidden = {h: a for h, a, f in zip(hosts["host"], hosts["addr"], hosts["forbidden"]) if f}
    assert forbidden == {"metadata.simweb.test": "127.169.254.254"}
    assert web.forbidden_addrs == ["127.169.254.254"]
    r = c.get(u(web, "hostile", "/go/metadata"))
    assert r.status_code == 302 and r.headers["Location"].startswith("http://metadata.simweb.test:")
    r = c.get(u(web, "hostile", "/go/numeric"))
    assert r.headers["Location"].startswith("http://127.169.254.254:")
    from tests.simweb.requestlog import requests_to_forbidden
    assert requests_to_forbidden(srv.requests, gt) == []


def test_rate_limited_host_answers_429_with_retry_after(hostile):
    web, srv, c = hostile
    statuses = [c.get(u(web, "ratelimit", f"/p{k}.html")) for k in range(3)]
    assert statuses[0].status_code in (200, 429)
    assert statuses[1].status_code == 429 and statuses[1].headers["Retry-After"] == "2"
    time.sleep(0.6)
    assert c.get(u(web, "ratelimit", "/")).status_code == 200


def test_flaky_host_answers_bursts_of_503(hostile):
    web, srv, c = hostile
    codes = [c.get(u(web, "flaky", "/")).status_code for _ in range(20)]
    assert codes.count(503) == 6 and codes.count(200) == 14
    assert "503, 503, 503" in ", ".join(map(str, codes))


def test_spider_trap_is_infinite(hostile):
    web, srv, c = hostile
    url = u(web, "trap", "/calendar/2026/1/")
    seen = set()
    for _ in range(30):
        r = c.get(url)
        assert r.status_code == 200
        links = [d for d, a, _ in extract_links(r.content, url) if a == "Next month"]
        url = links[0]
        assert url not in seen
        seen.add(url)
    assert "/calendar/2028/7/" in url


def test_ten_thousand_character_urls(hostile):
    web, srv, c = hostile
    r = c.get(u(web, "hostile", "/long"))
    (dst, _, _), = extract_links(r.content, u(web, "hostile", "/long"))
    assert len(dst) > 10000
    assert c.get(dst).status_code == 200


def test_malformed_invalid_utf8_and_binary_html(hostile):
    web, srv, c = hostile
    m = c.get(u(web, "hostile", "/malformed.html"))
    assert m.status_code == 200
    assert len(extract_links(m.content, u(web, "hostile", "/malformed.html"))) >= 3
    bad = c.get(u(web, "hostile", "/invalid-utf8.html"))
    assert "utf-8" in bad.text[:100].lower() or b'charset="utf-8"' in bad.content
    with pytest.raises(UnicodeDecodeError):
        bad.content.decode("utf-8")
    b = c.get(u(web, "hostile", "/binary.html"))
    assert b.headers["Content-Type"] == "text/html" and b"\x00" in b.content


def test_server_survives_all_of_it(hostile):
    web, srv, c = hostile
    assert c.get(web.seeds[0]).status_code == 200


def test_trickle_logs_its_end_when_the_client_hangs_up(hostile):
    web, srv, c = hostile
    n = len(srv.requests)
    t = time.time()
    with pytest.raises((requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError)):
        c.get(u(web, "hostile", "/stall"), timeout=(2, 0.5)).content   # 4 s before each byte
    end = time.time() + 5
    while len(srv.requests) == n and time.time() < end:
        time.sleep(0.05)
    rec = [r for r in srv.requests[n:] if r["path"] == "/stall"][0]
    assert rec["end"] - t < 2.0, "logged at the next trickle tick, not at the hang-up"


def test_plain_500_and_410(hostile):
    web, srv, c = hostile
    assert c.get(u(web, "hostile", "/error500.html")).status_code == 500
    assert c.get(u(web, "hostile", "/gone.html")).status_code == 410
