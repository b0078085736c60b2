"""A plain reference crawler (requests + lxml) used to check the ground truth against what
is served. Independent of beamcrawl's own code on purpose: it canonicalises URLs, obeys
robots.txt for ``*`` and follows links/redirects exactly as the ground truth promises.
Connections go to the host map's loopback address with the host name in the Host header.
"""
from __future__ import annotations

import re
import time
from collections import deque
from urllib.parse import urljoin, urlsplit, urlunsplit

import lxml.html
import requests

_UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
ROBOTS_MAX_BYTES = 500 * 1024


def _pct_normalise(s: str) -> str:
    def rep(m):
        c = chr(int(m.group(1), 16))
        return c if c in _UNRESERVED else "%" + m.group(1).upper()
    return re.sub(r"%([0-9A-Fa-f]{2})", rep, s)


def canonical(url: str, base: str | None = None) -> str | None:
    """Absolute canonical form (see truth.py); None for non-http(s) links."""
    if base is not None:
        url = urljoin(base, url.strip())
    p = urlsplit(url)
    if p.scheme.lower() not in ("http", "https"):
        return None
    host = (p.hostname or "").lower()
    port = p.port
    net = host if port in (None, 80 if p.scheme.lower() == "http" else 443) else f"{host}:{port}"
    path = _pct_normalise(p.path or "/")
    # urljoin resolves dot segments of relative refs; resolve absolute ones too
    segs = []
    for s in path.split("/")[1:]:
        if s == "..":
            if segs:
                segs.pop()
        elif s != ".":
            segs.append(s)
    if path.endswith(("/..", "/.")):
        segs.append("")
    path = "/" + "/".join(segs)
    return urlunsplit((p.scheme.lower(), net, path, _pct_normalise(p.query), ""))


def extract_links(body: bytes, url: str) -> list[tuple[str, str, str]]:
    """(dst canonical, anchor, tag) of followable links: a/area (not rel=nofollow), frame,
    iframe, meta refresh; javascript:/mailto: dropped; <base href> honoured."""
    try:
        doc = lxml.html.fromstring(body)
    except Exception:
        return []
    base = url
    b = doc.xpath("//base[@href]")
    if b:
        base = urljoin(url, b[0].get("href").strip())
    out = []
    for el in doc.iter("a", "area", "frame", "iframe", "meta"):
        tag = el.tag
        if tag == "meta":
            if (el.get("http-equiv") or "").lower() != "refresh":
                continue
            m = re.search(r"url\s*=\s*['\"]?([^'\"]+)", el.get("content") or "", re.I)
            if not m:
                continue
            href, anchor, tag = m.group(1), "", "meta_refresh"
        elif tag in ("a", "area"):
            href = el.get("href")
            if href is None or "nofollow" in (el.get("rel") or "").lower().split():
                continue
            anchor = el.text_content().strip() if tag == "a" else (el.get("alt") or "")
        else:
            href = el.get("src")
            if href is None:
                continue
            anchor = el.get("title") or ""
        if href.strip().lower().startswith(("javascript:", "mailto:")):
            continue
        c = canonical(href, base)
        if c:
            out.append((c, anchor, tag))
    return out


class RefCrawler:
    def __init__(self, hostmap_lines, timeout: float = 5.0, max_pages: int = 100000,
                 max_seconds: float = 300.0, user_agent: str = "simweb-refcrawl/1.0"):
        self.addr = {}
        for line in hostmap_lines:
            host, port, addr = line.strip().rsplit(":", 2)
            self.addr[(host.lower(), int(port))] = addr
        self.session = requests.Session()
        self.session.trust_env = False   # never route loopback requests through an env proxy
        self.session.headers["User-Agent"] = user_agent
        self.timeout = timeout
        self.max_pages = max_pages
        self.max_seconds = max_seconds
        self.robots = {}
        self.fetched = {}     # url -> status
        self.links = {}       # src url -> list of (dst, anchor, tag)
        self.bodies = {}      # url -> (content-type, bytes)
        self.robots_denied = set()

    def get(self, url: str, **kw) -> requests.Response:
        p = urlsplit(url)
        port = p.port or 80
        addr = self.addr[(p.hostname.lower(), port)]
        assert addr.startswith("127."), addr
        target = p.path + ("?" + p.query if p.query else "")
        netloc = p.hostname if port == 80 else f"{p.hostname}:{port}"
        headers = {"Host": netloc, **kw.pop("headers", {})}
        kw.setdefault("timeout", self.timeout)
        return self.session.get(f"http://{addr}:{port}{target}", headers=headers,
                                allow_redirects=False, **kw)

    def allowed(self, url: str) -> bool:
        from protego import Protego
        p = urlsplit(url)
        key = p.netloc
        if key not in self.robots:
            rurl = f"http://{key}/robots.txt"
            rule = True
            for _ in range(5):
                r = self.get(rurl)
                if r.status_code in (301, 302, 303, 307, 308):
                    rurl = urljoin(rurl, r.headers["Location"])
                    continue
                if r.status_code >= 500:
                    rule = False
                elif r.status_code >= 400:
                    rule = True
                else:
                    rule = Protego.parse(r.content[:ROBOTS_MAX_BYTES].decode("utf-8", "replace"))
                break
            self.robots[key] = rule
        rule = self.robots[key]
        return rule if isinstance(rule, bool) else rule.can_fetch(url, "simweb-truth")

    def crawl(self, seeds) -> "RefCrawler":
        t0 = time.time()
        seen = set()
        q = deque()
        for s in seeds:
            c = canonical(s)
            if c not in seen:
                seen.add(c)
                q.append(c)
        while q and len(self.fetched) < self.max_pages and time.time() - t0 < self.max_seconds:
            url = q.popleft()
            if (urlsplit(url).hostname, urlsplit(url).port or 80) not in self.addr:
                continue
            if not self.allowed(url):
                self.robots_denied.add(url)
                continue
            r = self.get(url)
            self.fetched[url] = r.status_code
            outs = []
            if r.status_code in (301, 302, 303, 307, 308):
                outs = [(canonical(r.headers["Location"], url), "", "redirect")]
            elif r.status_code == 200:
                ctype = r.headers.get("Content-Type", "")
                self.bodies[url] = (ctype, r.content)
                if ctype.startswith("text/html"):
                    links = extract_links(r.content, url)
                    self.links[url] = links
                    outs = links
            for dst, _, _ in outs:
                if dst and dst not in seen:
                    seen.add(dst)
                    q.append(dst)
        return self
