"""Export a simulated web as static files (for nginx; benchmarks/realweb).

Every page of the ground truth's ``pages`` table is rendered by ``SimWeb.respond`` at ONE
fixed time (so changing pages are frozen) and written byte for byte as the simweb serves it
to a client that does not send ``Accept-Encoding: gzip``. URLs in the pages carry the web's
port, which must be fixed (the port nginx will listen on).

Layout of ``OUT``::

    www/<host>/<path>                 a page (path "/" -> index.html)
    www/<host>/<path>__Q__<query>     a page whose URL has a query (nginx: $uri + "__Q__" + $args)
    www/<host>/robots.txt             when the host's robots.txt answers 200
    manifest.json                     hosts, per-host redirects and robots status, charsets
    reachable.txt                     ground truth: URLs reachable from the seeds under robots
    seeds.txt, hostmap.txt            seed URLs; HOST:PORT:127.0.0.1 for --resolve_file

What differs from the live simweb (documented, on purpose): no gzip (nginx serves the
identity body), ETag/Last-Modified/Date are nginx's, 404 bodies are nginx's, and by default
``Crawl-delay`` lines are dropped from robots.txt (the benchmark runs at delay 0 and Scrapy
ignores Crawl-delay; the allow/disallow rules are unchanged). Dynamic hosts (jobs search,
hostile hosts, documents) cannot be exported: the export refuses them.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from .model import SimWeb, build_web

STATIC_KINDS = {"regular", "robots", "mirror", "template", "drafts"}
QUERY_MARK = "__Q__"
SITEMAP_PATHS = ("/sitemap_index.xml", "/sitemap-1.xml", "/sitemap-2.xml.gz")

# The benchmark web: the `large` preset cut to >= 50 000 reachable pages on >= 500 hosts (Zipf sizes:
# site0 ~8 100 pages, site1 ~4 000, ...; 515 hosts with mirrors and robots hosts), nothing dynamic.
BENCH_CONFIGS = {
    "bench50k": dict(base="large", name="bench50k", n_hosts=500, n_pages=55000,
                     deep_web=False, hostile=False, documents=False, template_pages=0),
    # a frontier that offers ~45 000 URLs to one round (bench50k's never offers 18 000):
    # bench_cores --config bench150k --round_pages 45000 keeps the crawl where it does
    "bench150k": dict(base="large", name="bench150k", n_hosts=1000, n_pages=140000,
                      deep_web=False, hostile=False, documents=False, template_pages=0),
    # #53's size sweep: >= 500 000 pages on 5 000 hosts (the large preset's host sizes: many
    # small hosts, a few big ones); benchmarks.bench_sweep crawls it round by round
    "bench500k": dict(base="large", name="bench500k", n_hosts=5000, n_pages=550000,
                      deep_web=False, hostile=False, documents=False, template_pages=0),
    "bench5k": dict(base="large", name="bench5k", n_hosts=60, n_pages=5000, n_mirrors=2,
                    seed_hosts=5, deep_web=False, hostile=False, documents=False,
                    template_pages=0),
}


def file_path(target: str) -> str:
    """Relative file name of a request target (canonical path[?query]) under www/<host>/."""
    path, sep, query = target.partition("?")
    rel = path.lstrip("/")
    if path.endswith("/"):
        rel += "index.html"
    if sep:
        rel += QUERY_MARK + query
    return rel


def _strip_crawl_delay(body: bytes) -> bytes:
    return re.sub(rb"(?im)^crawl-delay:[^\n]*\n", b"", body)


def export_static(web: SimWeb, out_dir, now: float | None = None, keep_crawl_delay: bool = False,
                  sitemaps: bool = True) -> dict:
    """Write the static export of ``web`` to ``out_dir``; returns the manifest."""
    if not web.port:
        raise ValueError("static export needs a fixed port (build_web(..., port=P))")
    bad = [h.name for h in web.hosts if h.kind not in STATIC_KINDS]
    if bad:
        raise ValueError(f"hosts {bad[:5]} are dynamic and cannot be exported as static files; "
                         "switch them off (deep_web/hostile/documents false)")
    now = web.cfg.sim_start if now is None else float(now)
    out = Path(out_dir)
    www = out / "www"
    gt = web.ground_truth()
    hosts = {h.name: {"redirects": {}, "robots_status": 200, "charsets": {}} for h in web.hosts}

    def write(host, target, body):
        p = www / host / file_path(target)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)

    def export_one(host, target):
        r = web.respond(host, target, headers={}, now=now)
        hd = dict(r.headers)
        if r.status == 200:
            write(host, target, r.body)
            ctype = hd.get("Content-Type", "")
            if "charset=" in ctype:
                hosts[host]["charsets"][target] = ctype.split("charset=", 1)[1].strip()
        elif r.status in (301, 302):
            hosts[host]["redirects"][target] = [r.status, hd["Location"]]
        return r

    n_pages = 0
    for url in gt["pages"].column("url").to_pylist():
        s = urlsplit(url)
        export_one(s.hostname, s.path + ("?" + s.query if s.query else ""))
        n_pages += 1
    for h in web.hosts:
        r = web.respond(h.name, "/robots.txt", headers={}, now=now)
        hosts[h.name]["robots_status"] = r.status
        if r.status == 200:
            write(h.name, "/robots.txt", r.body if keep_crawl_delay else _strip_crawl_delay(r.body))
        elif r.status in (301, 302):
            loc = dict(r.headers)["Location"]
            hosts[h.name]["redirects"]["/robots.txt"] = [r.status, loc]
            moved = urlsplit(loc).path
            r2 = web.respond(h.name, moved, headers={}, now=now)
            body = r2.body if keep_crawl_delay else _strip_crawl_delay(r2.body)
            write(h.name, moved, body)
        if sitemaps and h.kind in ("regular", "mirror"):
            for p in SITEMAP_PATHS:
                export_one(h.name, p)
    manifest = {"config": web.cfg.name, "seed": web.seed, "port": web.port, "time": now,
                "keep_crawl_delay": keep_crawl_delay, "n_pages": n_pages,
                "n_hosts": len(web.hosts), "seeds": web.seeds, "hosts": hosts}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=0, sort_keys=True))
    reach = sorted(gt["reachable"].column("url").to_pylist())
    (out / "reachable.txt").write_text("\n".join(reach) + "\n")
    (out / "seeds.txt").write_text("\n".join(web.seeds) + "\n")
    (out / "hostmap.txt").write_text("".join(f"{h.name}:{web.port}:127.0.0.1\n" for h in web.hosts))
    robots = {h.name: list(web.effective_robots(h)) for h in web.hosts}
    (out / "robots.json").write_text(json.dumps(robots))
    return manifest


def export_config(config, seed: int, port: int, out_dir, **kw) -> dict:
    """``config``: a BENCH_CONFIGS name, a preset or a JSON file (see config.py)."""
    spec = BENCH_CONFIGS.get(config, config)
    web = build_web(spec, seed, port=port)
    os.makedirs(out_dir, exist_ok=True)
    return export_static(web, out_dir, **kw)
