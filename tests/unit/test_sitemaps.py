"""Sitemap parsing: urlset, index, gzip, text; bombs and XXE stay harmless."""
import gzip
import zlib

from transforms.page.sitemaps import parse_lastmod, parse_sitemap

URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> https://a.test/one </loc><lastmod>2024-01-02</lastmod></url>
  <url><loc>/two</loc><lastmod>2024-01-02T03:04:05+01:00</lastmod><priority>0.5</priority></url>
  <url><loc>https://a.test/three</loc><lastmod>not a date</lastmod></url>
  <url><loc>javascript:alert(1)</loc></url>
  <url><lastmod>2024-01-01</lastmod></url>
</urlset>"""


def test_urlset_entries_with_lastmod():
    entries, children = parse_sitemap(URLSET, "https://a.test/sitemap.xml")
    assert children == []
    assert entries == [("https://a.test/one", 1704153600.0),
                       ("https://a.test/two", 1704161045.0),
                       ("https://a.test/three", None)]


def test_sitemap_index_lists_children():
    body = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>https://a.test/s1.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>
      <sitemap><loc>s2.xml</loc></sitemap></sitemapindex>"""
    assert parse_sitemap(body, "https://a.test/maps/index.xml") == (
        [], ["https://a.test/s1.xml.gz", "https://a.test/maps/s2.xml"])


def test_missing_or_wrong_namespace_still_parses():
    body = b"<urlset xmlns='http://example.com/wrong'><url><loc>http://a.test/x</loc></url></urlset>"
    assert parse_sitemap(body, "http://a.test/")[0] == [("http://a.test/x", None)]


def test_gzip_detected_by_magic():
    assert parse_sitemap(gzip.compress(URLSET), "https://a.test/sitemap.xml")[0][0][0] == "https://a.test/one"


def test_gzip_bomb_is_bounded():
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = b"<urlset><url><loc>http://a.test/x</loc></url><!-- "
    bomb = c.compress(head) + b"".join(c.compress(b"\0" * (1 << 20)) for _ in range(256)) + c.flush()
    entries, _ = parse_sitemap(bomb, "http://a.test/", max_bytes=1 << 20)   # 256 MiB -> 1 MiB
    assert entries == [("http://a.test/x", None)]


def test_billion_laughs_is_not_expanded():
    ents = "".join(f'<!ENTITY l{i} "{("&l%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    body = (f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY l0 "lol">{ents}]>'
            f"<urlset><url><loc>http://a.test/&l9;</loc></url></urlset>").encode()
    entries, _ = parse_sitemap(body, "http://a.test/")
    assert all(len(loc) < 100 for loc, _ in entries)
    assert not any("lol" in loc for loc, _ in entries)


def test_xxe_does_not_read_files(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    body = (f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY xxe SYSTEM "file://{secret}">]>'
            f"<urlset><url><loc>http://a.test/&xxe;</loc></url></urlset>").encode()
    entries, _ = parse_sitemap(body, "http://a.test/")
    assert not any("TOPSECRET" in loc for loc, _ in entries)


def test_entity_bomb_does_not_lose_the_other_entries():
    # libxml2 stops at its amplification limit even with entities unresolved; the DOCTYPE is
    # dropped first, so the bomb's reference is inert and the following entries survive
    ents = "".join(f'<!ENTITY l{i} "{("&l%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    body = (f'<?xml version="1.0"?>\n<!DOCTYPE u [\n<!ENTITY l0 "lol">{ents}\n]>\n'
            f"<urlset><url><loc>http://a.test/&l9;</loc></url>"
            f"<url><loc>http://a.test/ok</loc></url></urlset>").encode()
    entries, _ = parse_sitemap(body, "http://a.test/")
    assert [loc for loc, _ in entries] == ["http://a.test/", "http://a.test/ok"]


def test_xxe_sitemap_keeps_its_plain_entries(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    body = (f'<?xml version="1.0"?><!doctype u [<!ENTITY xxe SYSTEM "file://{secret}">'
            f'<!ENTITY net SYSTEM "http://127.0.0.1:9/x">]>'
            f"<urlset><url><loc>http://a.test/&xxe;</loc></url><url><loc>http://a.test/&net;</loc></url>"
            f"<url><loc>http://a.test/ok</loc></url></urlset>").encode()
    entries, _ = parse_sitemap(body, "http://a.test/")
    assert [loc for loc, _ in entries] == ["http://a.test/", "http://a.test/", "http://a.test/ok"]


def test_doctype_without_internal_subset_and_unterminated_doctype():
    body = b'<!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/x.dtd"><urlset><url><loc>http://a.test/1</loc></url></urlset>'
    assert parse_sitemap(body, "http://a.test/") == ([("http://a.test/1", None)], [])
    body = b'<!DOCTYPE u [ <!ENTITY x "y"> <urlset><url><loc>http://a.test/1</loc></url></urlset>'
    entries, _ = parse_sitemap(body, "http://a.test/")      # never raises; nothing expanded
    assert all("y" not in loc[len("http://a.test/"):] for loc, _ in entries)


def test_text_sitemap():
    body = b"http://a.test/1\r\nhttps://a.test/2\nnot a url\nftp://a.test/3\n"
    assert parse_sitemap(body, "http://a.test/") == ([("http://a.test/1", None), ("https://a.test/2", None)], [])


def test_garbage_yields_nothing():
    assert parse_sitemap(b"<html><body>nope", "http://a.test/") == ([], [])
    assert parse_sitemap(b"\x1f\x8bnot really gzip", "http://a.test/") == ([], [])
    assert parse_sitemap(b"", "http://a.test/") == ([], [])


def test_lastmod_formats():
    assert parse_lastmod("2024") == 1704067200.0
    assert parse_lastmod("2024-02") == 1706745600.0
    assert parse_lastmod("2024-01-01T00:00:00Z") == 1704067200.0
    assert parse_lastmod("2024-01-01T01:00+01:00") == 1704067200.0
    assert parse_lastmod("2024-01-01T00:00:00.5Z") == 1704067200.5
    assert parse_lastmod("yesterday") is None and parse_lastmod(None) is None


def test_url_cap():
    body = b"<urlset>" + b"".join(b"<url><loc>http://a.test/%d</loc></url>" % i for i in range(20)) + b"</urlset>"
    assert len(parse_sitemap(body, "http://a.test/", max_urls=5)[0]) == 5
