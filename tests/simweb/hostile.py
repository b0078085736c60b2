"""Hostile hosts (only with ``hostile=True``). Every misbehaviour ends by itself.

hostile.simweb.test
  /                    index linking to everything below
  /trickle             200, Content-Length N, then 1 body byte per second (N = trickle_seconds), then close
  /reset               200, Content-Length 100000, 10000 bytes, then TCP RST
  /big.html            a text/html page of big_page_bytes (10 MB)
  /bomb.html           Content-Encoding: gzip body that inflates to gzip_bomb_bytes (1 GiB) of zeros
  /loop/a, /loop/b     302 to each other forever
  /chain/N             302 to /chain/N+1 forever
  /go/metadata         302 to http://metadata.simweb.test:PORT/latest/meta-data/ (forbidden address)
  /go/numeric          302 to http://127.169.254.254:PORT/latest/meta-data/ (same, by address)
  /long                page linking to /long/xxxx… (a long_url_chars-character URL)
  /malformed.html      broken HTML that still holds links
  /invalid-utf8.html   declared UTF-8, contains invalid byte sequences
  /binary.html         Content-Type text/html, body is random binary
trap.simweb.test       /calendar/YYYY/MM/ and /calendar/YYYY/MM/DD/: an infinite calendar
ratelimit.simweb.test  429 + Retry-After: 2 when a request follows the previous one to this
                       host by less than ratelimit_min_gap seconds (real time); else a page
flaky.simweb.test      the n-th request to the host answers 503 + Retry-After: 1 when
                       n % flaky_period < 3 (bursts of three), else a page
metadata.simweb.test   served on 127.169.254.254, the stand-in for a cloud metadata address;
                       a crawler must never connect to it (ground truth hosts.forbidden)
slow.simweb.test       robots.txt "Crawl-delay: 2" and "Disallow: /private/"; / links /p0..p3.html
                       and /private/secret.html

hostile.simweb.test also serves (linked from its index unless said otherwise):
  /gone.html           410;  /missing.html: 404
  /meta-nofollow.html  <meta name=robots content=nofollow>, links /only-from-nofollow.html
  /meta-noindex.html   <meta name=robots content=noindex>, links /noindex-target.html
  /xrobots-nofollow.html, /xrobots-noindex.html   the same directives as an X-Robots-Tag header
                       (nofollow links /only-from-xrobots-nofollow.html)
  /utf8-twin.html, /gbk.html (GBK, <meta charset=gbk>), /gb2312.html (GB2312 in the header)
                       the same Chinese page (title, text, links /twin-a.html, /twin-b.html)
  /sitemap-laughs.xml  billion-laughs urlset (not linked); /sitemap-xxe.xml: urlset whose
                       entities point at file:///etc/passwd and at the metadata host (not linked)
  /stall               200 with headers, then 4 s of silence before each body byte (a read timeout)
  /error500.html       500 without Retry-After (a plain transient server error)
  /sitemap.xml         sitemap index of those two (what a crawler tries when robots.txt names
                       no sitemap); their harmless entries /laughs-ok.html, /xxe-ok.html are pages
"""
from __future__ import annotations

import random
import time
import zlib

_BIG: dict = {}
_BOMB: dict = {}


def _ok(body: bytes, ctype="text/html; charset=utf-8"):
    from .model import Response
    return Response(200, [("Content-Type", ctype)], body)


def _page(title, links, extra=""):
    items = "".join(f'<li><a href="{h}">{t}</a></li>' for h, t in links)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>'
            f"<body><h1>{title}</h1>{extra}<ul>{items}</ul></body></html>").encode()


def big_body(n: int) -> bytes:
    if n not in _BIG:
        line = b"<p>" + b"all work and no play makes a big page " * 20 + b"</p>\n"
        head = b"<!DOCTYPE html><html><head><title>Big page</title></head><body>\n"
        tail = b"</body></html>\n"
        k = (n - len(head) - len(tail)) // len(line)
        body = head + line * k
        body += b" " * (n - len(body) - len(tail)) + tail
        _BIG[n] = body
    return _BIG[n]


def bomb_body(n: int) -> bytes:
    """gzip stream of n zero bytes (built once, ~1 MB for 1 GiB; takes a few seconds)."""
    if n not in _BOMB:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        chunk = b"\0" * (1 << 20)
        out = [c.compress(chunk) for _ in range(n >> 20)]
        out.append(c.compress(b"\0" * (n & ((1 << 20) - 1))))
        out.append(c.flush())
        _BOMB[n] = b"".join(out)
    return _BOMB[n]


SLOW_ROBOTS = b"User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n"

TWIN_TITLE = "\u4e2d\u6587\u7f51\u9875"                       # 中文网页
TWIN_TEXT = "\u5317\u4eac\u6b22\u8fce\u4f60\uff0c\u8fd9\u662f\u4e00\u4e2a\u4e2d\u6587\u7f51\u9875\u3002"
TWIN_LINKS = [("/twin-a.html", "\u7b2c\u4e00\u4e2a\u94fe\u63a5"), ("/twin-b.html", "\u7b2c\u4e8c\u4e2a\u94fe\u63a5")]

_LAUGHS = ('<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n'
           + "".join(f'<!ENTITY lol{k} "{("&lol" + (str(k - 1) if k > 1 else "") + ";") * 10}">\n'
                     for k in range(1, 10))
           + ']>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
           '<url><loc>{base}/laughs/&lol9;</loc></url><url><loc>{base}/laughs-ok.html</loc></url></urlset>')
_XXE = ('<?xml version="1.0"?>\n<!DOCTYPE urlset [\n<!ENTITY xxe SYSTEM "file:///etc/passwd">\n'
        '<!ENTITY net SYSTEM "{meta}/latest/meta-data/">\n]>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        '<url><loc>{base}/xxe/&xxe;</loc></url><url><loc>{base}/xxe/&net;</loc></url>'
        '<url><loc>{base}/xxe-ok.html</loc></url></urlset>')


def _twin(encoding: str, meta: bool, header: bool):
    from .model import Response
    head = f'<meta charset="{encoding}">' if meta else ""
    items = "".join(f'<li><a href="{h}">{t}</a></li>' for h, t in TWIN_LINKS)
    doc = (f"<!DOCTYPE html><html><head>{head}<title>{TWIN_TITLE}</title></head>"
           f"<body><h1>{TWIN_TITLE}</h1><p>{TWIN_TEXT}</p><ul>{items}</ul></body></html>")
    ctype = f"text/html; charset={encoding}" if header else "text/html"
    return Response(200, [("Content-Type", ctype)], doc.encode(encoding))


def respond(web, host, target: str, headers: dict, now: float):
    from .model import Response
    cfg = web.cfg
    path = target.split("#", 1)[0]
    base = web.base_url
    if path == "/robots.txt":
        if host.robots != "404":
            return web.robots_response(host)
        return Response(404, [("Content-Type", "text/html")], b"no robots")
    if host.kind == "slow":
        if path.startswith("/private/"):
            return _ok(_page("Private", []))
        return _small_site(path, "Slow site", n=4, extra_links=[("/private/secret.html", "Secret")])
    kind = host.kind
    if kind == "metadata":
        return _ok(b'{"iam": {"security-credentials": "FAKE-SECRET-do-not-fetch"}}', "application/json")
    if kind == "trap":
        return _calendar(path)
    if kind == "ratelimit":
        st = web._hostile_state
        t = time.time()
        last = st["ratelimit_last"]
        st["ratelimit_last"] = t
        if last is not None and t - last < cfg.ratelimit_min_gap:
            return Response(429, [("Content-Type", "text/html"), ("Retry-After", "2")],
                            b"<html><body>Too many requests</body></html>")
        return _small_site(path, "Rate-limited site")
    if kind == "flaky":
        st = web._hostile_state
        n = st["flaky_n"]
        st["flaky_n"] = n + 1
        if n % cfg.flaky_period < 3:
            return Response(503, [("Content-Type", "text/html"), ("Retry-After", "1")],
                            b"<html><body>Service unavailable, try later</body></html>")
        return _small_site(path, "Flaky site")
    # hostile.simweb.test
    meta = web.by_name.get("metadata.simweb.test")
    if path == "/":
        links = [("/trickle", "Trickle"), ("/reset", "Reset"), ("/big.html", "Big page"),
                 ("/bomb.html", "Gzip bomb"), ("/loop/a", "Redirect loop"),
                 ("/chain/0", "Redirect chain"), ("/go/metadata", "Metadata redirect"),
                 ("/go/numeric", "Numeric redirect"), ("/long", "Long URLs"),
                 ("/malformed.html", "Malformed"), ("/invalid-utf8.html", "Invalid UTF-8"),
                 ("/binary.html", "Binary"),
                 (base("trap.simweb.test") + "/calendar/2026/1/", "Calendar"),
                 (base("ratelimit.simweb.test") + "/", "Rate limited"),
                 (base("flaky.simweb.test") + "/", "Flaky"),
                 (base("slow.simweb.test") + "/", "Crawl-delay 2"),
                 ("/gone.html", "Gone"), ("/missing.html", "Missing"),
                 ("/stall", "Stall"), ("/error500.html", "Server error"),
                 ("/meta-nofollow.html", "Meta nofollow"), ("/meta-noindex.html", "Meta noindex"),
                 ("/xrobots-nofollow.html", "X-Robots-Tag nofollow"),
                 ("/xrobots-noindex.html", "X-Robots-Tag noindex"),
                 ("/utf8-twin.html", "UTF-8 twin"), ("/gbk.html", "GBK twin"),
                 ("/gb2312.html", "GB2312 twin")]
        return _ok(_page("Hostile host", links))
    if path == "/stall":
        return Response(200, [("Content-Type", "text/html"), ("Content-Length", "2")],
                        b"", action=("trickle", b"ok", 4.0))
    if path == "/error500.html":
        return Response(500, [("Content-Type", "text/html")], b"<html><body>Internal error</body></html>")
    if path == "/gone.html":
        return Response(410, [("Content-Type", "text/html")], b"<html><body>Gone</body></html>")
    if path in ("/meta-nofollow.html", "/meta-noindex.html"):
        d = path[6:-5]
        target = "/only-from-nofollow.html" if d == "nofollow" else "/noindex-target.html"
        return _ok(_page(f"Meta {d}", [(target, "target")])
                   .replace(b"<title>", f'<meta name="robots" content="{d}"><title>'.encode(), 1))
    if path in ("/xrobots-nofollow.html", "/xrobots-noindex.html"):
        d = path[9:-5]
        target = "/only-from-xrobots-nofollow.html" if d == "nofollow" else "/xrobots-noindex-target.html"
        r = _ok(_page(f"X-Robots-Tag {d}", [(target, "target")]))
        r.headers.append(("X-Robots-Tag", d))
        return r
    if path in ("/only-from-nofollow.html", "/noindex-target.html", "/only-from-xrobots-nofollow.html",
                "/xrobots-noindex-target.html", "/twin-a.html", "/twin-b.html"):
        return _ok(_page("Target", []))
    if path == "/utf8-twin.html":
        return _twin("utf-8", True, True)
    if path == "/gbk.html":
        return _twin("gbk", True, False)
    if path == "/gb2312.html":
        return _twin("gb2312", False, True)
    if path == "/sitemap.xml":
        b = base(host.name)
        xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns='
               '"http://www.sitemaps.org/schemas/sitemap/0.9">'
               f"<sitemap><loc>{b}/sitemap-laughs.xml</loc></sitemap>"
               f"<sitemap><loc>{b}/sitemap-xxe.xml</loc></sitemap></sitemapindex>")
        return _ok(xml.encode(), "application/xml")
    if path in ("/laughs-ok.html", "/xxe-ok.html"):
        return _ok(_page("Sitemap entry", []))
    if path == "/sitemap-laughs.xml":
        return _ok(_LAUGHS.replace("{base}", base(host.name)).encode(), "application/xml")
    if path == "/sitemap-xxe.xml":
        body = _XXE.replace("{base}", base(host.name)).replace("{meta}", base("metadata.simweb.test"))
        return _ok(body.encode(), "application/xml")
    if path == "/trickle":
        n = int(cfg.trickle_seconds)
        return Response(200, [("Content-Type", "text/html"), ("Content-Length", str(n))],
                        b"", action=("trickle", b"x" * n, 1.0))
    if path == "/reset":
        return Response(200, [("Content-Type", "text/html"), ("Content-Length", "100000")],
                        b"", action=("reset", b"<html><body>" + b"r" * 9987))
    if path == "/big.html":
        return _ok(big_body(cfg.big_page_bytes))
    if path == "/bomb.html":
        return Response(200, [("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
                        b"", action=("bomb", cfg.gzip_bomb_bytes))
    if path in ("/loop/a", "/loop/b"):
        other = "/loop/b" if path == "/loop/a" else "/loop/a"
        return Response(302, [("Location", other), ("Content-Type", "text/html")], b"loop")
    if path.startswith("/chain/"):
        try:
            n = int(path[7:])
        except ValueError:
            n = 0
        return Response(302, [("Location", f"/chain/{n + 1}"), ("Content-Type", "text/html")], b"chain")
    if path == "/go/metadata":
        return Response(302, [("Location", base("metadata.simweb.test") + "/latest/meta-data/"),
                              ("Content-Type", "text/html")], b"go")
    if path == "/go/numeric":
        net = meta.addr + (f":{web.port}" if web.port not in (0, 80) else "") if meta else "127.169.254.254"
        return Response(302, [("Location", f"http://{net}/latest/meta-data/"),
                              ("Content-Type", "text/html")], b"go")
    if path == "/long":
        return _ok(_page("Long URL", [("/long/" + "x" * cfg.long_url_chars, "very long")]))
    if path.startswith("/long/"):
        return _ok(_page("Long URL target", []))
    if path == "/malformed.html":
        body = (b"<html><head><title>Malformed</title><body><table><tr><td><a href=/malformed-a.html>A"
                b"<td><a href='/malformed-b.html'>B</a><p><b><i>unclosed <a href=\"/malformed-c.html\">C"
                b"</b></i></table></div></span><a href=/malformed-d.html <a href=/x>D</a><!-- unclosed comment")
        return _ok(body)
    if path in ("/malformed-a.html", "/malformed-b.html", "/malformed-c.html", "/malformed-d.html", "/x"):
        return _ok(_page("Malformed target", []))
    if path == "/invalid-utf8.html":
        body = (b'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Invalid UTF-8</title></head>'
                b"<body><p>valid text \xff\xfe then \xc3\x28 and \xed\xa0\x80 surrogate \xf8\x88\x80\x80\x80"
                b'</p><a href="/long">more</a></body></html>')
        return _ok(body)
    if path == "/binary.html":
        r = random.Random(web.seed + 99)
        return _ok(bytes(r.randrange(256) for _ in range(4096)), "text/html")
    return Response(404, [("Content-Type", "text/html")], b"not found")


def _small_site(path, title, n=10, extra_links=()):
    from .model import Response
    pages = [f"/p{k}.html" for k in range(n)]
    if path != "/" and path not in pages:
        return Response(404, [("Content-Type", "text/html")], b"not found")
    return _ok(_page(title, [(p, f"{title} page {k}") for k, p in enumerate(pages)] + list(extra_links)))


def _calendar(path):
    from .model import Response
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] != "calendar":
        return _ok(_page("Calendar", [("/calendar/2026/1/", "January 2026")]))
    try:
        nums = [int(x) for x in parts[1:4]]
        y, m = nums[0], nums[1]
    except (ValueError, IndexError):
        return Response(404, [("Content-Type", "text/html")], b"not found")
    pm = (y, m - 1) if m > 1 else (y - 1, 12)
    nm = (y, m + 1) if m < 12 else (y + 1, 1)
    links = [(f"/calendar/{pm[0]}/{pm[1]}/", "Previous month"),
             (f"/calendar/{nm[0]}/{nm[1]}/", "Next month")]
    if len(nums) >= 3:
        links.append((f"/calendar/{y}/{m}/{nums[2] % 28 + 1}/", "Next day"))
    else:
        links += [(f"/calendar/{y}/{m}/{d}/", f"Day {d}") for d in range(1, 29)]
    return _ok(_page(f"Calendar {y}-{m}", links))
