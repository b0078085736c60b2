"""A real-site web for the real-web benchmark (issue #53): four documentation sets from Debian
packages, laid out as a static export of the same shape as tests/simweb/static.py's, for nginx.

    .venv/bin/python -m benchmarks.realweb.debdocs --out /tmp/debdocs --port 18510
    .venv/bin/python -m benchmarks.realweb.debdocs --out /tmp/debdocs --port 18510 --verify
    .venv/bin/python -m benchmarks.realweb.run --export /tmp/debdocs --work /tmp/rwdeb

The packages are fetched with ``apt-get download`` into ``--cache`` and unpacked there with
``dpkg-deb -x`` (nothing is installed). Each documentation set becomes one host
``<name>.docs.test`` (DOMAIN) whose root is the set's HTML directory (files hard-linked from
the cache). Symlinks are left out: in these packages they point into other packages (jQuery,
MathJax, fonts), so a real install without those would answer 404 too.

Layout of ``OUT`` (what run.py, nginx.py and analyse.py read): ``www/<host>/...``,
``www/<host>/robots.txt`` (rust-doc's own upstream file; a few Disallow rules of our own on the
others, each matching pages that are linked), ``manifest.json`` (hosts, domain, port, time,
n_pages = HTML files exported, n_files, default_type), ``seeds.txt`` (each host's index),
``hostmap.txt``, ``robots.json``, ``reachable.txt`` and ``stats.json``.

Ground truth (``reachable.txt``), computed here without beamcrawl's code: a breadth-first
search from the seeds over the links a crawler follows (``a``/``area`` href not
rel=nofollow, ``frame``/``iframe`` src, ``<meta http-equiv=refresh>``; ``<base href>``
honoured; none when ``<meta name=robots>`` says nofollow/none), resolved with urljoin,
fragment dropped, percent-encoded as a browser sends it, in canonical form
(benchmarks/realweb/canon.py), on an exported host, allowed by that host's robots.txt
(protego, ``*`` group), and answered 200 by nginx.py's configuration: no query, the file
``path`` or ``path + "index.html"`` exists. A page is any such URL, HTML or not (the crawlers
fetch every linked file: beamcrawl ``--deny_extensions ""``, Scrapy ``deny_extensions=[]``);
only HTML files (nginx's text/html suffixes) are parsed for links. Other files are served as
application/octet-stream unless mime.types names them.

The web from bookworm's packages (rust-doc 1.63.0+dfsg1-2, python3.11-doc 3.11.2-6+deb12u9,
postgresql-doc-15 15.20-0+deb12u1, debian-reference-en 2.100): 4 hosts, 35 024 files (570 MB),
33 815 of them HTML; 23 322 URLs reachable (rust 21 633, python 528, postgresql 1 147,
debian-reference 14; all HTML but one .py), 504 MB, 22.1 KB and 93 http(s) links (34 distinct
URLs) per HTML page; 30 link targets answer 404 (files Debian's rust-doc lacks, ?highlight=
queries), 25 are robots-denied. Most of rust-doc's 10 468 unreachable HTML files are
rustdoc's redirect stubs that no page links to. ``--verify`` checked all 23 352 URLs through
nginx: 0 mismatches.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit

from benchmarks.realweb.canon import canonical

DOMAIN = "docs.test"
HTML_SUFFIXES = (".html", ".htm", ".shtml")      # text/html in /etc/nginx/mime.types
DEFAULT_TYPE = "application/octet-stream"        # nginx default_type for this export


@dataclass(frozen=True)
class DocSet:
    name: str        # host is <name>.docs.test
    package: str     # Debian package
    root: str        # its HTML directory inside the package
    seed: str        # the index page (path)
    robots: str | None   # robots.txt written for the host; None: the package ships one


SETS = (
    DocSet("rust", "rust-doc", "usr/share/doc/rust-doc/html", "/", None),
    DocSet("python", "python3.11-doc", "usr/share/doc/python3.11/html", "/",
           "User-agent: *\nDisallow: /_sources/\nDisallow: /whatsnew/changelog.html\n"),
    DocSet("postgresql", "postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html", "/",
           "User-agent: *\nDisallow: /release-\nDisallow: /sql-commands.html\n"),
    DocSet("debian-reference", "debian-reference-en", "usr/share/debian-reference", "/index.en.html",
           "User-agent: *\nDisallow: /apa.en.html\nDisallow: /debian-reference.en.pdf\n"),
)


def fetch_packages(sets, cache: Path) -> dict:
    """Download (once) and unpack each set's package into ``cache``; package -> unpacked dir."""
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for s in sets:
        debs = sorted(glob.glob(str(cache / f"{s.package}_*.deb")))
        if not debs:
            r = subprocess.run(["apt-get", "download", s.package], cwd=cache, capture_output=True, text=True)
            debs = sorted(glob.glob(str(cache / f"{s.package}_*.deb")))
            if r.returncode or not debs:
                raise SystemExit(f"error: apt-get download {s.package} failed: "
                                 f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
        x = cache / "x" / Path(debs[-1]).stem
        if not (x / s.root).is_dir():
            shutil.rmtree(x, ignore_errors=True)
            x.mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", debs[-1], str(x)], check=True)
        out[s.package] = x
    return out


def _link_tree(src: Path, dst: Path) -> tuple[int, int]:
    """Hard-link (else copy) every regular file of ``src`` under ``dst``, symlinks left out;
    (files, bytes)."""
    n = size = 0
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for f in filenames:
            p = Path(dirpath, f)
            if p.is_symlink() or not p.is_file():
                continue
            try:
                os.link(p, dst / rel / f)
            except OSError:
                shutil.copyfile(p, dst / rel / f)
            n, size = n + 1, size + p.stat().st_size
    return n, size


# --- ground truth -------------------------------------------------------------------------

_REFRESH = re.compile(r"^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)$", re.I | re.S)
_SAFE_PATH = "/!$%&'()*+,;=:@[]^|\\~"          # left as is in a path (WHATWG path percent-encode set)
_SAFE_QUERY = _SAFE_PATH + "?/`{}"


def _as_sent(url: str) -> str:
    """``url`` percent-encoded as a browser puts it on the wire (UTF-8), then canonical."""
    s = urlsplit(url)
    path = quote(s.path, safe=_SAFE_PATH)
    query = quote(s.query, safe=_SAFE_QUERY)
    return canonical(f"{s.scheme}://{s.netloc}{path}" + (f"?{query}" if query else ""))


def _refresh_url(content: str) -> str | None:
    m = _REFRESH.match(content or "")
    u = m.group(1).strip().strip("'\"").strip() if m else ""
    return u or None


def page_links(body: bytes, url: str) -> list[str]:
    """Absolute URLs (fragments dropped, not yet canonical) a crawler follows from an HTML page."""
    import lxml.html
    try:
        doc = lxml.html.fromstring(body)
    except (ValueError, lxml.etree.ParserError):
        return []
    for m in doc.iter("meta"):
        if (m.get("name") or "").strip().lower() == "robots":
            words = {w.strip() for w in (m.get("content") or "").lower().split(",")}
            if words & {"nofollow", "none"}:
                return []
    base = url
    for b in doc.iter("base"):
        if b.get("href"):
            cand = urljoin(url, b.get("href").strip())
            if urlsplit(cand).scheme in ("http", "https"):
                base = cand
                break
    raw = []
    for el in doc.iter("a", "area", "frame", "iframe", "meta"):
        if el.tag in ("a", "area"):
            if "nofollow" in (el.get("rel") or "").lower().split():
                continue
            raw.append(el.get("href"))
        elif el.tag in ("frame", "iframe"):
            raw.append(el.get("src"))
        elif (el.get("http-equiv") or "").strip().lower() == "refresh":
            raw.append(_refresh_url(el.get("content")))
    out = []
    for h in raw:
        if h is None:
            continue
        h = re.sub(r"[\t\n\r]", "", h).strip()
        u = urljoin(base, h).split("#", 1)[0]
        if urlsplit(u).scheme in ("http", "https"):
            out.append(u)
    return out


def served_file(www: Path, url: str) -> Path | None:
    """The file nginx.py's config answers 200 with for ``url`` (no query: ``try_files $uri$qs
    ${uri}index.html``; a query would need a ``__Q__`` file, which this export has none of)."""
    s = urlsplit(url)
    if s.query:
        return None
    path = unquote(s.path)
    host_dir = www / (s.hostname or "")
    for cand in (path, path + "index.html"):
        f = host_dir / cand.lstrip("/")
        if cand.endswith("/") or not f.is_file():
            continue
        return f
    return None


def ground_truth(www: Path, seeds: list[str], robots: dict, port: int) -> dict:
    """Breadth-first search from ``seeds``; ``robots``: host -> robots.txt text. Returns
    reachable URLs (canonical), not-found and robots-denied link targets, and per-page figures."""
    from protego import Protego
    rules = {h: Protego.parse(t) for h, t in robots.items()}
    netloc = (lambda h: h) if port == 80 else (lambda h: f"{h}:{port}")
    seen, queue = set(), deque()
    reachable, missing, denied = {}, set(), set()
    html_pages = html_bytes = n_links = n_outlinks = 0

    def offer(u):
        c = _as_sent(u)
        if c in seen:
            return
        seen.add(c)
        host = urlsplit(c).hostname or ""
        if urlsplit(c).path == "/robots.txt":    # not a page (analyse.NOT_PAGES)
            return
        if host not in rules or urlsplit(c).scheme != "http" or urlsplit(c).netloc != netloc(host):
            return
        if not rules[host].can_fetch(c, "debdocs-truth"):
            denied.add(c)
            return
        queue.append(c)

    for s in seeds:
        offer(s)
    while queue:
        url = queue.popleft()
        f = served_file(www, url)
        if f is None:
            missing.add(url)
            continue
        reachable[url] = f.stat().st_size
        if f.name.lower().endswith(HTML_SUFFIXES):
            links = page_links(f.read_bytes(), url)
            html_pages, html_bytes = html_pages + 1, html_bytes + reachable[url]
            n_links += len(links)
            n_outlinks += len({_as_sent(u) for u in links})
            for u in links:
                offer(u)
    return {"reachable": reachable, "missing": missing, "denied": denied, "html_pages": html_pages,
            "html_bytes": html_bytes, "links": n_links, "distinct_links": n_outlinks}


# --- the export ---------------------------------------------------------------------------

def build(out: Path, port: int, cache: Path, sets=SETS, verbose=True) -> dict:
    """Write the export of ``sets`` to ``out`` (replaced); returns its figures (stats.json)."""
    t0 = time.time()
    unpacked = fetch_packages(sets, cache)
    shutil.rmtree(out, ignore_errors=True)
    www = out / "www"
    hosts, robots, seeds, per_host = {}, {}, [], {}
    net = (lambda h: h) if port == 80 else (lambda h: f"{h}:{port}")
    for s in sets:
        host = f"{s.name}.{DOMAIN}"
        n, size = _link_tree(unpacked[s.package] / s.root, www / host)
        if s.robots is not None:
            (www / host / "robots.txt").write_text(s.robots)
        text = (www / host / "robots.txt").read_text() if (www / host / "robots.txt").exists() else ""
        robots[host] = text
        hosts[host] = {"redirects": {}, "robots_status": 200, "charsets": {}, "package": s.package,
                       "deb": Path(glob.glob(str(cache / f"{s.package}_*.deb"))[-1]).name}
        seeds.append(f"http://{net(host)}{s.seed}")
        html = sum(1 for p in (www / host).rglob("*") if p.name.lower().endswith(HTML_SUFFIXES))
        per_host[host] = {"files": n, "bytes": size, "html_files": html}
    gt = ground_truth(www, seeds, robots, port)
    reach = sorted(gt["reachable"])
    (out / "reachable.txt").write_text("\n".join(reach) + "\n")
    (out / "seeds.txt").write_text("\n".join(seeds) + "\n")
    (out / "hostmap.txt").write_text("".join(f"{h}:{port}:127.0.0.1\n" for h in hosts))
    (out / "robots.json").write_text(json.dumps({h: [200, t] for h, t in robots.items()}))
    for h in hosts:
        per_host[h]["reachable"] = sum(1 for u in reach if urlsplit(u).hostname == h)
    hp = max(1, gt["html_pages"])
    stats = {"hosts": len(hosts), "html_files": sum(v["html_files"] for v in per_host.values()),
             "files": sum(v["files"] for v in per_host.values()),
             "bytes": sum(v["bytes"] for v in per_host.values()),
             "reachable": len(reach), "reachable_html": gt["html_pages"],
             "reachable_bytes": sum(gt["reachable"].values()),
             "html_kb_per_page": gt["html_bytes"] / hp / 1024,
             "links_per_page": gt["links"] / hp, "distinct_links_per_page": gt["distinct_links"] / hp,
             "not_found_targets": len(gt["missing"]), "robots_denied_targets": len(gt["denied"]),
             "per_host": per_host, "seconds": round(time.time() - t0, 1)}
    manifest = {"config": "debdocs", "domain": DOMAIN, "port": port, "time": time.time(),
                "n_pages": stats["html_files"], "n_files": stats["files"], "n_hosts": len(hosts),
                "default_type": DEFAULT_TYPE, "seeds": seeds, "hosts": hosts}
    (out / "stats.json").write_text(json.dumps(stats, indent=1))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=0, sort_keys=True))
    (out / "not_found.txt").write_text("\n".join(sorted(gt["missing"])) + "\n")
    return stats


def verify(out: Path, port: int, work: Path) -> int:
    """Every URL of reachable.txt and not_found.txt through nginx: 200 and the file's bytes,
    resp. not 200. Returns the number of mismatches."""
    import http.client

    from benchmarks.realweb.nginx import Nginx
    bad = n = 0
    www = out / "www"
    with Nginx(out, port, work):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for name, want_ok in (("reachable.txt", True), ("not_found.txt", False)):
            for u in (out / name).read_text().split():
                s = urlsplit(u)
                c.request("GET", s.path + (f"?{s.query}" if s.query else ""), headers={"Host": s.netloc})
                r = c.getresponse()
                body = r.read()
                n += 1
                ok = (r.status == 200) == want_ok and (not want_ok or body == served_file(www, u).read_bytes())
                if not ok:
                    bad += 1
                    if bad <= 5:
                        print(f"mismatch {u}: nginx {r.status}, expected {'200' if want_ok else 'not 200'}")
    print(f"verified {n} URLs through nginx: {bad} mismatches")
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb.debdocs", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="export directory (replaced)")
    ap.add_argument("--port", type=int, default=18510, help="nginx port (in the exported URLs)")
    ap.add_argument("--cache", type=Path, default=Path("/work/debdocs-cache"),
                    help="where the .deb files are downloaded and unpacked (kept between builds)")
    ap.add_argument("--verify", action="store_true",
                    help="no build: check the export's ground truth against nginx (port --port)")
    a = ap.parse_args(argv)
    if a.verify:
        if not (a.out / "manifest.json").exists():
            raise SystemExit(f"error: {a.out} has no manifest.json; build it first")
        return 1 if verify(a.out, a.port, a.out.parent / (a.out.name + "-nginx-verify")) else 0
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise SystemExit("error: apt-get and dpkg-deb are needed (a Debian system)")
    st = build(a.out, a.port, a.cache)
    print(f"{st['hosts']} hosts, {st['html_files']} HTML files ({st['files']} files, "
          f"{st['bytes'] / 2**20:.0f} MB); reachable {st['reachable']} URLs ({st['reachable_html']} HTML, "
          f"{st['reachable_bytes'] / 2**20:.0f} MB), {st['html_kb_per_page']:.1f} KB and "
          f"{st['links_per_page']:.0f} links ({st['distinct_links_per_page']:.0f} distinct) per HTML page; "
          f"{st['not_found_targets']} link targets 404, {st['robots_denied_targets']} robots-denied; "
          f"{st['seconds']} s -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
