"""Real-web benchmark (issue #12): a simulated web exported as static files, served by nginx on
127.0.0.1:PORT, crawled to completion by beamcrawl and by Scrapy (and wget2) in one run.

    .venv/bin/python -m benchmarks.realweb.run --config bench5k          # ~5 400 pages, minutes
    .venv/bin/python -m benchmarks.realweb.run --config bench50k         # ~57 000 pages, 500+ hosts
    .venv/bin/python -m benchmarks.realweb.run --repo /path/to/checkout --conns 8
    .venv/bin/python -m benchmarks.realweb.run --config bench50k --crawlers beamcrawl,beamcrawl@10000,scrapy
    .venv/bin/python -m benchmarks.realweb.run --export /tmp/debdocs --work /tmp/rwdeb   # a prebuilt export

``--export DIR`` crawls a prebuilt export of the same layout (benchmarks/realweb/debdocs.py: four
Debian documentation sites); its manifest gives the port and the allowed domain
(``domain``, default simweb.test) of beamcrawl's --allow_domains, Scrapy's and wget2's.
``--short PAGES`` is for checking a setup, not for figures: beamcrawl stops after the rounds
that hold about PAGES pages, Scrapy at CLOSESPIDER_PAGECOUNT PAGES.

Scrapy runs from its own venv (``--scrapy_python``; make it with
``python3 -m venv /work/benchvenv && /work/benchvenv/bin/pip install -r
benchmarks/requirements-bench.txt``). Each crawler gets a fresh nginx (its own access log).
Per crawler: wall seconds, distinct pages fetched, pages/s, CPU seconds per page (user+sys of
the crawler and every descendant it waited for), the web server's busy cores over the crawl
(nginx's CPU: the rest of the machine's load, beside the crawler's cores), peak RSS (sum over the process tree,
sampled every 0.2 s), peak PSS (the same sum of proportional set sizes: a page that forked
processes share counted once, not once per process), coverage of the ground truth (URLs
reachable from the seeds under robots.txt), robots violations, duplicate fetches, most requests to one host in flight at
once; then the ratios beamcrawl / Scrapy. `beamcrawl@N` is beamcrawl with rounds of N pages
(`--max_pages`/`--max_per_host` N instead of `--round_pages`), its own crawl directory and log,
so that round sizes are compared with Scrapy in one run. No figure is asserted: timings on a
shared machine are noisy, compare the ratios of one run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.realweb.analyse import RobotsRules, analyse, read_access_log
from benchmarks.realweb.nginx import Nginx

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _pss(pid) -> int:
    """Proportional set size (bytes) of `pid`: each shared page divided among the processes
    that map it, so a forked worker's inherited pages are not counted twice (0 if unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _tree_rss(root, cpu_seen=None) -> tuple[int, int, int]:
    """(RSS, PSS, largest process's RSS) over `root` and its descendants (the first two
    summed); with `cpu_seen` (pid -> CPU seconds), each one's user+sys CPU so far is recorded
    there too."""
    import psutil
    try:
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0, 0, 0
    total = pss = largest = 0
    for p in procs:
        try:
            rss = p.memory_info().rss
            total, largest = total + rss, max(largest, rss)
            pss += _pss(p.pid)
            if cpu_seen is not None:
                t = p.cpu_times()
                cpu_seen[(p.pid, p.create_time())] = t.user + t.system
        except psutil.Error:
            pass
    return total, pss, largest


def measure(cmds, cwd, env, log_path, ok_codes=(0,), on_sample=None) -> dict:
    """Run ``cmds`` one after another; wall, CPU and peak tree RSS. ``on_sample(now, rss,
    pss, largest_rss, cpu)``, if given, sees every sample (cpu: the tree's CPU seconds so far,
    as sampled), e.g. to split the figures by round (benchmarks.bench_sweep).

    CPU is the larger of the RUSAGE_CHILDREN delta (processes waited for) and the sum over
    every process seen in the tree of its CPU at its last sample: a process the crawler
    does not wait for itself (the page workers of a fork server) is only in the second,
    which may miss up to one sampling period of a process's end.
    """
    import psutil
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seen = {}
    peak = peak_pss = peak_one = 0
    t0 = time.time()
    with open(log_path, "wb") as log:
        for cmd in cmds:
            log.write(("$ " + " ".join(map(str, cmd)) + "\n").encode())
            log.flush()
            p = subprocess.Popen(list(map(str, cmd)), cwd=cwd, env=env, stdout=log, stderr=log)
            root = psutil.Process(p.pid)
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                rss, pss, one = _tree_rss(root, cpu_seen)
                peak, peak_pss, peak_one = max(peak, rss), max(peak_pss, pss), max(peak_one, one)
                if on_sample is not None:
                    on_sample(time.time(), rss, pss, one, sum(cpu_seen.values()))
                time.sleep(0.2)
            p.returncode = os.waitstatus_to_exitcode(status)
            # a process faster than one sample: its own peak (ru_maxrss, KiB) is a lower bound
            peak = max(peak, ru.ru_maxrss * 1024)
            peak_one = max(peak_one, ru.ru_maxrss * 1024)
            peak_pss = peak_pss or peak     # never sampled: its RSS, an upper bound
            if p.returncode not in ok_codes:
                raise SystemExit(f"error: {cmd[:4]} exited {p.returncode}; see {log_path}")
    wall = time.time() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    waited = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    sampled = sum(cpu_seen.values())
    cpu = max(waited, sampled)
    return {"wall": wall, "cpu": cpu, "cpu_waited": waited, "cpu_sampled": sampled, "cores": cpu / wall,
            "peak_rss_mb": peak / 2**20, "peak_pss_mb": peak_pss / 2**20,
            "largest_rss_mb": peak_one / 2**20}


def beamcrawl_cmds(a, export: Path, work: Path, round_pages=None):
    py = a.python
    round_pages = round_pages or a.round_pages
    crawl_dir = work / ("beamcrawl-crawl" if round_pages == a.round_pages else f"beamcrawl-crawl-{round_pages}")
    shutil.rmtree(crawl_dir, ignore_errors=True)
    seeds = (export / "seeds.txt").read_text().split()
    flags = ["--crawl_dir", crawl_dir, "--resolve_file", export / "hostmap.txt",
             "--allow_loopback", "true", "--allow_domains", a.domain, "--deny_extensions", "",
             "--sitemaps", "false", "--delay_per_host", "0", "--expand_duplicates", "true",
             "--max_pages", round_pages, "--max_per_host", round_pages, "--store", a.store,
             "--fetch_threads", a.fetch_threads, "--progress_seconds", "0",
             "--politeness_key", a.politeness_key]
    if a.conns != 1:
        flags += ["--conns_per_host", a.conns]
    flags += a.beamcrawl_args
    inject = [py, "-m", "pipelines.inject", *flags] + [x for s in seeds for x in ("--seed", s)]
    stop = ["--rounds", -(-a.short // round_pages)] if a.short else ["--until_empty", "true"]
    crawl = [py, "-m", "pipelines.crawl", "--crawl_dir", crawl_dir, *stop]
    return [inject, crawl]


def scrapy_cmds(a, export: Path, work: Path):
    return [[a.scrapy_python, HERE / "scrapy_spider.py", export, a.port, a.conns,
             work / "scrapy-stats.json", a.scrapy_delay] + ([a.short] if a.short else [])]


def wget2_cmds(a, export: Path, work: Path):
    """wget2 (C, multi-threaded) as the stretch reference. It has no resolver override, so it
    talks to nginx as an HTTP proxy (absolute-form requests; nginx picks the virtual host
    from the request line). Its --max-threads is global, not per host."""
    out = work / "wget2-out"
    shutil.rmtree(out, ignore_errors=True)
    seeds = (export / "seeds.txt").read_text().split()
    return [["wget2", "--recursive", "--level", "0", "--robots", "--wait", "0", "--span-hosts",
             "--domains", a.domain, "--max-threads", str(a.wget2_threads),
             "--http-proxy", f"127.0.0.1:{a.port}", "--delete-after",
             "--directory-prefix", out, "--no-verbose",
             # a prebuilt export links outside: wget2 1.99.1 still asks external hosts (despite
             # --domains) and retries an unresolvable https one 20 times with backoff (190 s each)
             *(["--tries", "1"] if getattr(a, "export", None) else []), *seeds]]


CRAWLERS = {"beamcrawl": beamcrawl_cmds, "scrapy": scrapy_cmds, "wget2": wget2_cmds}


def crawler_kind(name: str) -> tuple[str, int | None]:
    """(crawler, round pages or None) of one `--crawlers` entry: a name of CRAWLERS, or
    `beamcrawl@N` (rounds of N pages)."""
    base, at, pages = name.partition("@")
    if base not in CRAWLERS or (at and (base != "beamcrawl" or not pages.isdigit() or int(pages) < 1)):
        raise SystemExit(f"error: --crawlers: unknown crawler {name!r}; use "
                         f"{', '.join(CRAWLERS)} or beamcrawl@PAGES (rounds of PAGES pages)")
    return base, int(pages) if at else None


def crawler_cmds(name: str, a, export: Path, work: Path):
    """The commands of one `--crawlers` entry (see `crawler_kind`)."""
    base, pages = crawler_kind(name)
    return beamcrawl_cmds(a, export, work, pages) if pages else CRAWLERS[base](a, export, work)


def verify_export(a, export: Path) -> int:
    """Every URL of the ground truth through nginx against SimWeb.respond: status, body,
    Content-Type and Location must be identical. Returns the number of mismatches."""
    import http.client
    from urllib.parse import urlsplit

    from tests.simweb import build_web
    from tests.simweb.static import BENCH_CONFIGS
    m = json.loads((export / "manifest.json").read_text())
    web = build_web(BENCH_CONFIGS.get(a.config, a.config), a.seed, port=a.port)
    bad = 0
    with Nginx(export, a.port, a.work / "nginx-verify", workers=a.nginx_workers):
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=30)
        for u in web.ground_truth()["pages"].column("url").to_pylist():
            s = urlsplit(u)
            t = s.path + ("?" + s.query if s.query else "")
            want = web.respond(s.hostname, t, headers={}, now=m["time"])
            c.request("GET", t, headers={"Host": s.netloc})
            r = c.getresponse()
            body, wh = r.read(), dict(want.headers)
            same = r.status == want.status and (
                want.status != 200 or (body == want.body and r.getheader("Content-Type") == wh["Content-Type"])) \
                and (want.status not in (301, 302) or r.getheader("Location") == wh["Location"])
            if not same:
                bad += 1
                if bad <= 5:
                    print(f"mismatch {u}: nginx {r.status} {r.getheader('Content-Type')}, simweb "
                          f"{want.status} {wh.get('Content-Type')}")
    print(f"verified {m['n_pages']} URLs through nginx: {bad} mismatches")
    return bad


def fmt_table(rows: dict) -> str:
    cols = ["crawler", "wall s", "pages", "pages/s", "CPU ms/page", "cores", "server cores", "peak RSS MB", "peak PSS MB",
            "largest process MB", "coverage",
            "robots violations", "duplicate fetches", "max conns/host"]
    out = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for name, r in rows.items():
        out.append(f"| {name} | {r['wall']:.1f} | {r['pages']} | {r['pages_per_s']:.1f} | "
                   f"{r['cpu_ms_per_page']:.2f} | {r['cpu'] / r['wall']:.2f} | "
                   f"{r['server_cpu'] / r['wall'] if 'server_cpu' in r else float('nan'):.2f} | {r['peak_rss_mb']:.0f} | "
                   f"{r.get('peak_pss_mb', 0):.0f} | {r.get('largest_rss_mb', 0):.0f} | {100 * r['coverage']:.2f} % | "
                   f"{r['robots_violations']} | {r['duplicate_fetches']} | {r['max_conns_per_host']} |")
    for name, b in rows.items():
        if crawler_kind(name)[0] != "beamcrawl" or "scrapy" not in rows:
            continue
        s = rows["scrapy"]
        out.append("")
        out.append(f"{name} / Scrapy: pages/s {b['pages_per_s'] / s['pages_per_s']:.2f}x, "
                   f"CPU per page {b['cpu_ms_per_page'] / s['cpu_ms_per_page']:.2f}x, "
                   f"peak RSS {b['peak_rss_mb'] / s['peak_rss_mb']:.2f}x, "
                   f"peak PSS {b.get('peak_pss_mb', 0) / max(1e-9, s.get('peak_pss_mb', 0)):.2f}x, "
                   f"largest process {b.get('largest_rss_mb', 0) / max(1e-9, s.get('largest_rss_mb', 0)):.2f}x, "
                   f"tree PSS / Scrapy's largest process {b.get('peak_pss_mb', 0) / max(1e-9, s.get('largest_rss_mb', 0)):.2f}x")
    return "\n".join(out)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="bench5k",
                    help="bench5k | bench50k (tests/simweb/static.py BENCH_CONFIGS) or a simweb config")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=None,
                    help="nginx port (also in the exported URLs; default 18080, with --export the manifest's)")
    ap.add_argument("--export", type=Path, default=None,
                    help="crawl this prebuilt export (e.g. benchmarks/realweb/debdocs.py's) instead of --config's")
    ap.add_argument("--short", type=int, default=0, metavar="PAGES",
                    help="setup check only: beamcrawl runs ceil(PAGES / --round_pages) rounds, Scrapy stops at PAGES")
    ap.add_argument("--work", type=Path, default=Path("/tmp/beamcrawl-realweb"))
    ap.add_argument("--repo", type=Path, default=REPO, help="beamcrawl checkout to benchmark")
    ap.add_argument("--python", default=str(REPO / ".venv/bin/python") if (REPO / ".venv").exists()
                    else "/work/main/.venv/bin/python", help="python of beamcrawl's venv")
    ap.add_argument("--scrapy_python", default="/work/benchvenv/bin/python")
    ap.add_argument("--scrapy_delay", default="0.001",
                    help="Scrapy DOWNLOAD_DELAY (default 0.001): 2.19 keeps CONCURRENT_REQUESTS_PER_DOMAIN only when > 0 "
                         "(see scrapy_spider.py); 0 lets it burst")
    ap.add_argument("--crawlers", default="beamcrawl,scrapy", help="comma list of beamcrawl,scrapy,wget2; beamcrawl@N: beamcrawl with rounds of N pages")
    ap.add_argument("--conns", type=int, default=1, help="connections per host (both crawlers)")
    ap.add_argument("--fetch_threads", type=int, default=32,
                    help="beamcrawl --fetch_threads; Scrapy CONCURRENT_REQUESTS = this x --conns")
    ap.add_argument("--wget2_threads", type=int, default=8, help="wget2 --max-threads (global)")
    ap.add_argument("--round_pages", type=int, default=5000, help="beamcrawl --max_pages/--max_per_host")
    ap.add_argument("--politeness_key", default="host",
                    help="beamcrawl --politeness_key (default host: every exported host is served from "
                         "127.0.0.1 and stands for a site of its own, as Scrapy's per-domain limit treats it; "
                         "ip would make the whole web one politeness unit)")
    ap.add_argument("--store", default="none", help="beamcrawl --store (none, warc, ...)")
    ap.add_argument("--nginx_workers", type=int, default=1)
    ap.add_argument("--verify", action="store_true",
                    help="no crawling: check every exported URL through nginx against the simweb")
    ap.add_argument("--reanalyse", action="store_true",
                    help="no crawling: redo the log analysis of the last run in --work (same config)")
    ap.add_argument("--beamcrawl_args", nargs=argparse.REMAINDER, default=[],
                    help="further flags for pipelines.inject (last)")
    return ap


def ensure_export(a) -> Path:
    """The export to crawl: `--export DIR` as it is, or the simulated web's static export of
    `a.config` (seed, port) under `a.work`, made once. Sets `a.port` and `a.domain` (the
    allowed domain, from the manifest) to the export's."""
    if a.export is not None:
        export = a.export.resolve()
        if not (export / "manifest.json").exists():
            raise SystemExit(f"error: --export {a.export}: no manifest.json there")
        m = json.loads((export / "manifest.json").read_text())
        if a.port not in (None, m["port"]):
            raise SystemExit(f"error: --port {a.port}: the export's URLs carry port {m['port']}")
        if a.verify or (a.short and "wget2" in a.crawlers):
            raise SystemExit("error: --verify is for simweb exports and --short has no wget2 form")
        a.port, a.config = m["port"], m["config"]
    else:
        a.port = 18080 if a.port is None else a.port
        export = a.work / f"export-{a.config}-{a.seed}-{a.port}"
    if not (export / "manifest.json").exists():
        t0 = time.time()
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-m", "tests.simweb", "static", "--config", a.config,
                        "--seed", str(a.seed), "--port", str(a.port), "--out", str(export)],
                       cwd=REPO, env=env, check=True)
        print(f"exported in {time.time() - t0:.1f}s -> {export}", flush=True)
    a.domain = json.loads((export / "manifest.json").read_text()).get("domain", "simweb.test")
    return export


def main(argv=None):
    a = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # stop nginx on the way out

    a.work.mkdir(parents=True, exist_ok=True)
    export = ensure_export(a)
    manifest = json.loads((export / "manifest.json").read_text())
    reachable = set((export / "reachable.txt").read_text().split())
    robots = RobotsRules.from_export(export)
    commit = subprocess.run(["git", "-C", str(a.repo), "log", "-1", "--format=%h %s"],
                            capture_output=True, text=True).stdout.strip()
    print(f"# web {a.config}{'' if a.export else f' seed {a.seed}'}: {manifest['n_pages']} pages on {manifest['n_hosts']} "
          f"hosts, {len(reachable)} reachable; beamcrawl at {a.repo} ({commit[:70]})", flush=True)
    if a.verify:
        return 1 if verify_export(a, export) else 0
    results = a.work / f"results-{a.config}.json"
    if a.reanalyse:
        rows = json.loads(results.read_text())
        for name, res in rows.items():
            res.update(analyse(read_access_log(a.work / f"nginx-{name}" / "access.log"), reachable,
                               robots, a.port))
            res["pages_per_s"] = res["pages"] / res["wall"]
            res["cpu_ms_per_page"] = 1000 * res["cpu"] / max(1, res["pages"])
        results.write_text(json.dumps(rows, indent=1))
        print(fmt_table(rows))
        return 0
    rows = {}
    # every entry checked before the first crawl starts
    entries = [(name, crawler_kind(name)[0]) for name in a.crawlers.split(",")]
    for name, base in entries:
        cmds = crawler_cmds(name, a, export, a.work)
        env = {**os.environ, "PYTHONPATH": str(a.repo)}
        with Nginx(export, a.port, a.work / f"nginx-{name}", workers=a.nginx_workers) as ng:
            print(f"{time.strftime('%H:%M:%S')} {name}: crawling (load {os.getloadavg()[0]:.1f})", flush=True)
            server_cpu = ng.cpu_seconds()
            m = measure(cmds, a.repo if base == "beamcrawl" else a.work, env, a.work / f"{name}.log",
                        ok_codes=(0, 8) if base == "wget2" else (0,))   # wget2: 8 = saw a 404/500
            m["server_cpu"] = ng.cpu_seconds() - server_cpu
        res = analyse(read_access_log(ng.access_log), reachable, robots, a.port)
        if res["pages"] == 0:
            raise SystemExit(f"error: {name} fetched no page; see {a.work / (name + '.log')}")
        res.update(m)
        res["pages_per_s"] = res["pages"] / m["wall"]
        res["cpu_ms_per_page"] = 1000 * m["cpu"] / max(1, res["pages"])
        res["load_after"] = os.getloadavg()
        rows[name] = res
        print(f"{time.strftime('%H:%M:%S')} {name}: {json.dumps({k: v for k, v in res.items() if k != 'violation_examples'})}",
              flush=True)
    results.write_text(json.dumps(rows, indent=1))
    print(fmt_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
