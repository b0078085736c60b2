"""CPU per page of the page step, split by part (issue #12: CPU <= 2 ms per page).

    .venv/bin/python -m benchmarks.bench_page_cpu                       # this checkout
    .venv/bin/python -m benchmarks.bench_page_cpu --against /path/to/other/checkout
    .venv/bin/python -m benchmarks.bench_page_cpu --profile bighosts    # + cProfile of page_fate

Pages are rendered by the simulated web (no sockets): `bighosts` (4 hosts, ~100 links per
page, the shape of the issue's 33 k documentation web) and `bench5k` (the realweb
benchmark's quick web, the `large` preset: ~8 links per page). For each web it times, over
the same pages, CPU seconds (process time) of:

  page_fate     the whole page step of one page (transforms.page.fate.page_fate), with the
                realweb benchmark's URL filter (allow_domains simweb.test, no extensions)
  lxml          etree.fromstring of the body alone (the floor of any HTML parse)
  parse_html    transforms.page.parse.parse_html (links resolved, text, main blocks)
  resolve       transforms.urls.canonical.classify_many of the page's raw hrefs
  scope         UrlFilter.reasons of the page's canonical links
  main_blocks   transforms.page.maintext.main_blocks of the page's <body>
  body_fp       contentseen.body_fingerprint (exact-duplicate fingerprint of the body)
  block_fps     boilerplate.page_block_fps (the per-host template count's key)
  minhash       contentseen.minhash_signatures of the pages' main-content texts (one batch)
  candidates    urlseen.candidates.candidates_and_edges of the pages' kept link bundles
                (URL fingerprints, host keys, Arrow tables: the links' cost downstream)

in ms per page (best of --reps), and the kept links per page. With `--against DIR` the
same measurement runs in a child process with PYTHONPATH=DIR (another checkout, e.g. the
commit before a change), interleaved with this checkout's, and the ratios are printed:
compare ratios of one run, not absolute figures (the machine is shared).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

WEBS = ("bighosts", "bench5k")


def _pages(web_name: str, max_pages: int):
    from tests.simweb.model import build_web
    from tests.simweb.static import BENCH_CONFIGS
    from transforms.urls import canonical

    web = build_web(BENCH_CONFIGS.get(web_name, web_name), 1, port=8080)
    n = len(web.paths)
    step = max(1, n // (max_pages * 2))
    pages = []
    for i in range(0, n, step):
        if len(pages) >= max_pages:
            break
        h = web.hosts[web.page_host[i]]
        if h.kind not in ("regular", "mirror", "template"):
            continue
        r = web.respond(h, web.paths[i])
        headers = {k.lower(): v for k, v in r.headers}
        ctype = headers.get("content-type", "")
        if r.status != 200 or not ctype.startswith("text/html"):
            continue
        url = canonical.normalize(web.url(i))
        pages.append({"fp": canonical.fingerprint(url), "url": url, "host": canonical.host_key(url),
                      "depth": 1, "discovered_round": 1, "first_parent": None, "retries": 0,
                      "redirects": 0, "source": "link", "inlinks": 1, "fetch_time": 1.0,
                      "elapsed_ms": 1.0, "outcome": "ok", "reason": None, "http_status": 200,
                      "content_type": "text/html", "content_type_header": ctype, "body": r.body,
                      "truncated": False, "redirect_to": None, "etag": None,
                      "last_modified": None, "retry_after": None, "x_robots_tag": None,
                      "http": None})
    return pages


def _clock(fn, reps):
    best = None
    for _ in range(reps):
        t = time.process_time()
        fn()
        dt = time.process_time() - t
        best = dt if best is None else min(best, dt)
    return best


def measure(web_name: str, max_pages: int, reps: int) -> dict:
    """{part: ms per page} for one web in this process's checkout."""
    from lxml import etree

    from transforms.contentseen import fingerprints as cs
    from transforms.page import parse as parse_mod
    from transforms.page.boilerplate import BLOCKS_FOR_MINHASH, page_block_fps
    from transforms.page.fate import PageConfig, page_fate
    from transforms.page.maintext import main_blocks
    from transforms.urls.canonical import classify_many
    from transforms.urls.scope import UrlFilter
    from transforms.urlseen.candidates import candidates_and_edges

    pages = _pages(web_name, max_pages)
    cfg = PageConfig(round_no=2, now=2.0,
                     url_filter=UrlFilter(allow_domains=("simweb.test",), deny_extensions=()))
    n = len(pages)
    fates = [page_fate(p, cfg) for p in pages]
    links = [b for f in fates for b in f.links]
    blocks = [(f.visited or {}).get(BLOCKS_FOR_MINHASH) or [] for f in fates]
    texts = [" ".join(b) for b in blocks]
    bodies = [p["body"] for p in pages]
    decoded = [parse_mod.decode_body(p["body"], p["content_type_header"])[0].encode("utf-8")
               for p in pages]
    raw = []
    for d in decoded:
        root = etree.fromstring(d, parse_mod._parser())
        raw.append([el.get("href") or el.get("src") or "" for el in
                    root.iter("a", "area", "frame", "iframe")])
    canon = [[u for b in f.links for u in b["dst"]] for f in fates]
    bodies_el = []
    for d in decoded:
        root = etree.fromstring(d, parse_mod._parser())
        etree.strip_elements(root, "script", "style", "noscript", "template", with_tail=False)
        bodies_el.append(root.find("body") if root.find("body") is not None else root)
    filt = cfg.url_filter
    parser = parse_mod._parser()
    urls = [p["url"] for p in pages]
    parts = {
        "page_fate": lambda: [page_fate(p, cfg) for p in pages],
        "lxml": lambda: [etree.fromstring(d, parser) for d in decoded],
        "parse_html": lambda: [parse_mod.parse_html(b, u, "text/html; charset=utf-8")
                               for b, u in zip(bodies, urls)],
        "resolve": lambda: [classify_many(u, r) for u, r in zip(urls, raw)],
        "scope": lambda: [filt.reasons(c, 2) for c in canon],
        "main_blocks": lambda: [main_blocks(b) for b in bodies_el],
        "body_fp": lambda: [cs.body_fingerprint(b, u) for b, u in zip(bodies, urls)],
        "block_fps": lambda: [page_block_fps(b) for b in blocks],
        "minhash": lambda: cs.minhash_signatures(texts),
        "candidates": lambda: [candidates_and_edges(links[i:i + 200], 2)
                               for i in range(0, len(links), 200)],
    }
    out = {"pages": n, "links_per_page": round(sum(len(c) for c in canon) / max(n, 1), 1),
           "raw_hrefs_per_page": round(sum(len(r) for r in raw) / max(n, 1), 1)}
    for name, fn in parts.items():
        out[name] = round(1000 * _clock(fn, reps) / max(n, 1), 4)
    return out


def _profile(web_name: str, max_pages: int, top: int):
    import cProfile
    import pstats

    from transforms.page.fate import PageConfig, page_fate
    from transforms.urls.scope import UrlFilter
    pages = _pages(web_name, max_pages)
    cfg = PageConfig(round_no=2, now=2.0,
                     url_filter=UrlFilter(allow_domains=("simweb.test",), deny_extensions=()))
    pr = cProfile.Profile()
    pr.enable()
    for p in pages:
        page_fate(p, cfg)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(top)


def _child(repo: str, webs, max_pages: int, reps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=repo)
    cmd = [sys.executable, "-m", "benchmarks.bench_page_cpu", "--json", "--reps", str(reps),
           "--pages", str(max_pages), "--webs", ",".join(webs)]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # run this file's copy of the script against `repo`'s modules
    cmd[1:3] = [os.path.join(here, "benchmarks", "bench_page_cpu.py")]
    out = subprocess.run(cmd, env=env, cwd=repo, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--webs", default=",".join(WEBS))
    ap.add_argument("--pages", type=int, default=600, help="pages per web")
    ap.add_argument("--reps", type=int, default=3, help="best of N timings per part")
    ap.add_argument("--against", help="another checkout: measured in a child, ratios printed")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved runs with --against")
    ap.add_argument("--profile", help="a web: print a cProfile of page_fate on it")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    webs = [w for w in a.webs.split(",") if w]
    if a.profile:
        _profile(a.profile, a.pages, 30)
        return
    if a.json:
        print(json.dumps({w: measure(w, a.pages, a.reps) for w in webs}))
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not a.against:
        res = {w: measure(w, a.pages, a.reps) for w in webs}
        for w, r in res.items():
            print(f"{w}: {r['pages']} pages, {r['links_per_page']} kept links/page, "
                  f"{r['raw_hrefs_per_page']} raw hrefs/page")
            for k, v in r.items():
                if k not in ("pages", "links_per_page", "raw_hrefs_per_page"):
                    print(f"  {k:12s} {v:8.3f} ms/page")
        return
    runs = {"this": [], "other": []}
    for _ in range(a.rounds):   # interleaved, so load changes hit both sides alike
        runs["this"].append(_child(here, webs, a.pages, a.reps))
        runs["other"].append(_child(os.path.abspath(a.against), webs, a.pages, a.reps))
    print(f"this = {here}\nother = {a.against}\n(ms per page of CPU, best of {a.rounds} runs x {a.reps} reps)")
    for w in webs:
        this = {k: min(r[w][k] for r in runs["this"]) for k in runs["this"][0][w]}
        other = {k: min(r[w][k] for r in runs["other"]) for k in runs["other"][0][w]}
        print(f"{w}: {this['pages']} pages, kept links/page {this['links_per_page']} "
              f"(other {other['links_per_page']}), raw hrefs/page {this['raw_hrefs_per_page']}")
        print(f"  {'part':12s} {'other':>8s} {'this':>8s} {'this/other':>10s}")
        for k in this:
            if k in ("pages", "links_per_page", "raw_hrefs_per_page"):
                continue
            ratio = this[k] / other[k] if other[k] else float("nan")
            print(f"  {k:12s} {other[k]:8.3f} {this[k]:8.3f} {ratio:10.2f}")


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
