"""Command line: ``python -m tests.simweb serve|export|info`` (run from the repo root)."""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from .clock import FileClock, RealClock, SimClock
from .model import build_web


def _common(p):
    p.add_argument("--config", default="small",
                   help="small | medium | large | hostile | path to a JSON config (default small)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hostile", action="store_true", help="switch the hostile hosts on")
    p.add_argument("--port", type=int, default=None,
                   help="port of every host (default: the config's; 0 = pick a free one)")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.simweb",
                                 description="The simulated web beamcrawl is tested against.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve the web on loopback addresses until SIGTERM/SIGINT")
    _common(s)
    s.add_argument("--hostmap", type=Path, help="write HOST:PORT:ADDR lines here once every host listens")
    s.add_argument("--log", type=Path, help="append the request log here (JSON lines)")
    s.add_argument("--clock", choices=["real", "sim"], default="real",
                   help="real time, or simulated time (see --clock-file / --sim-start)")
    s.add_argument("--clock-file", type=Path,
                   help="simulated clock: epoch seconds read from this file (re-read when it "
                        "changes); implies --clock sim")
    s.add_argument("--sim-start", type=float, help="simulated time when no clock file (default config sim_start)")
    s.add_argument("--export", type=Path, help="also write the ground truth (with the served port) here")
    s.add_argument("--quiet", action="store_true")
    e = sub.add_parser("export", help="write the ground truth as Parquet, one file per table")
    _common(e)
    e.add_argument("--out", type=Path, required=True)
    b = sub.add_parser("bench", help="measure requests/s with wrk against a served web")
    _common(b)
    b.add_argument("--duration", type=int, default=10)
    b.add_argument("--connections", type=int, default=16)
    b.add_argument("--threads", type=int, default=1)
    b.add_argument("--urls", type=int, default=5000,
                   help="distinct random page URLs cycled (more than 20000 defeats the render cache)")
    st = sub.add_parser("static", help="write the web as static files for nginx (tests/simweb/static.py)")
    _common(st)
    st.add_argument("--out", type=Path, required=True)
    st.add_argument("--time", type=float, help="render every page at this time (default config sim_start)")
    st.add_argument("--keep-crawl-delay", action="store_true", help="keep Crawl-delay lines in robots.txt")
    i = sub.add_parser("info", help="print sizes of the generated web")
    _common(i)
    a = ap.parse_args(argv)

    if a.cmd == "serve":
        from .server import SimWebServer
        web = build_web(a.config, a.seed, port=a.port, hostile=a.hostile or None)
        start = a.sim_start if a.sim_start is not None else web.cfg.sim_start
        if a.clock_file:
            web.clock = FileClock(a.clock_file, start)
        elif a.clock == "sim":
            web.clock = SimClock(start)
        srv = SimWebServer(web, log_path=a.log, keep_requests=0)

        def ready(srv):
            if a.export:
                web.export(a.export)
            if a.hostmap:
                srv.write_hostmap(a.hostmap)
            if not a.quiet:
                print("\n".join(srv.hostmap_lines), flush=True)
                print(f"# simweb {web.cfg.name} seed={web.seed}: {len(web.hosts)} hosts on port "
                      f"{srv.port}; seeds: {' '.join(web.seeds[:5])}{' ...' if len(web.seeds) > 5 else ''}",
                      file=sys.stderr, flush=True)

        def on_signal(signum, frame):
            srv.loop.call_soon_threadsafe(srv.loop.stop)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        srv.serve_forever(on_ready=ready)
        return 0
    if a.cmd == "bench":
        from .bench import run
        run(a.config, a.seed, a.duration, a.threads, a.connections, urls=a.urls)
        return 0
    if a.cmd == "static":
        from .static import export_config
        if not a.port:
            ap.error("static needs --port (the port nginx will listen on)")
        m = export_config(a.config, a.seed, a.port, a.out, now=a.time,
                          keep_crawl_delay=a.keep_crawl_delay)
        print(f"{m['n_pages']} pages on {m['n_hosts']} hosts -> {a.out}")
        return 0
    web = build_web(a.config, a.seed, port=a.port, hostile=a.hostile or None)
    if a.cmd == "export":
        for p in web.export(a.out):
            print(p)
        return 0
    if a.cmd == "info":
        gt = web.ground_truth()
        print(f"config {web.cfg.name} seed {web.seed}: {len(web.hosts)} hosts, {web.N} graph pages")
        for k, t in gt.items():
            print(f"  {k}: {t.num_rows} rows")
        return 0


if __name__ == "__main__":
    sys.exit(main())
