"""Helpers for the hostile-web end-to-end test: start the hostile simulated web, crawl it
round by round on an advancing round clock, and read the crawl tables back by URL.

Everything here talks to loopback only: the simulated web binds 127.0.0.0/8 and the crawl
resolves every host through the web's hostmap (``--resolve_file``).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipelines import inject
from pipelines import round as round_mod
from pipelines.crawldir import CrawlDir
from tests.simweb.model import FORBIDDEN_ADDR
from tests.simweb.process import SimWebProcess

# The web: the small preset plus the hostile hosts, with misbehaviours sized for a test.
WEB_CONFIG = {
    "base": "small",
    "hostile": True,
    "trickle_seconds": 20,               # 20 s of trickle: far past the 3 s deadline, so a fetch the
                                         # deadline does not cut outlasts any bound the tests allow
    "gzip_bomb_bytes": 64 * 1024 * 1024,  # 64 MiB of zeros, 16x the body cap below
    "ratelimit_min_gap": 1.0,
    "flaky_period": 10,
}

# Crawl settings (test-sized timeouts; see the list of promises).
DEADLINE = 3.0
MAX_RETRIES = 2
RETRY_BACKOFF = 60.0            # round clock seconds; rounds advance ROUND_STEP on that clock
ROUND_STEP = 1000.0             # > RETRY_BACKOFF * 2**MAX_RETRIES: every retry is due next round
MAX_DEPTH = 3
MAX_PER_HOST = 30
MAX_REDIRECTS = 2
MAX_BODY = 4 * 1024 * 1024
MAX_URL_LENGTH = 2048
DELAY = 0.05
MAX_ROUNDS = 9

HOSTILE_HOSTS = ("hostile", "trap", "ratelimit", "flaky", "metadata", "slow")
ROBOTS_HOSTS = ("robots404", "robots500", "robotsredirect", "robotsgarbage", "robotshuge")


def host(name: str) -> str:
    return f"{name}.simweb.test"


def start_web(workdir: Path) -> SimWebProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / "hostile-web.json"
    cfg.write_text(json.dumps(WEB_CONFIG))
    return SimWebProcess(str(cfg), seed=1, hostile=True, workdir=workdir / "web")


def url(web: SimWebProcess, name: str, path: str) -> str:
    return f"http://{web.web.netloc(host(name))}{path}"


def forbidden_url(web: SimWebProcess, path: str) -> str:
    return f"http://{FORBIDDEN_ADDR}:{web.port}{path}"


def seeds(web: SimWebProcess) -> list[str]:
    return [url(web, "hostile", "/")] + [url(web, h, "/") for h in ROBOTS_HOSTS]


def crawl_flags(web: SimWebProcess, crawl_dir: Path) -> list[str]:
    allow = ",".join([host(h) for h in HOSTILE_HOSTS + ROBOTS_HOSTS] + [FORBIDDEN_ADDR])
    return ["--crawl_dir", str(crawl_dir), "--resolve_file", str(web.hostmap_file),
            "--allow_loopback", "true", "--deny_addresses", f"{FORBIDDEN_ADDR}/32",
            "--allow_hosts", allow, "--deny_extensions", "",
            "--deadline", str(DEADLINE), "--read_timeout", "2", "--connect_timeout", "2",
            "--delay_per_host", str(DELAY), "--max_retries", str(MAX_RETRIES),
            "--retry_backoff", str(RETRY_BACKOFF), "--max_depth", str(MAX_DEPTH),
            "--max_per_host", str(MAX_PER_HOST), "--max_pages", "1000",
            "--max_redirects", str(MAX_REDIRECTS), "--max_body", str(MAX_BODY),
            "--max_url_length", str(MAX_URL_LENGTH), "--fetch_threads", "32",
            "--store", "both"]   # the tests read stored bodies from the pages table


@dataclass
class RoundRun:
    no: int
    round_time: float
    start: float          # real time
    end: float
    report: dict
    frontier: list = field(default_factory=list)   # frontier snapshot rows after the round


@dataclass
class HostileCrawl:
    web: SimWebProcess
    crawl_dir: Path
    rounds: list
    log: list             # server request log records during the crawl
    start: float
    end: float

    def dir(self) -> CrawlDir:
        return CrawlDir(str(self.crawl_dir))

    def table(self, name: str) -> list[dict]:
        c = self.dir()
        return c.read_table(name, c.last_committed()).to_pylist()

    def by_url(self, name: str) -> dict[str, dict]:
        out = {}
        for r in self.table(name):
            assert r["url"] not in out, f"{name}: {r['url']} twice"
            out[r["url"]] = r
        return out

    def requests_to(self, name: str) -> list[dict]:
        return sorted((r for r in self.log if r["host"].lower() == host(name)), key=lambda r: r["start"])

    def round_of(self, rec: dict) -> int | None:
        for r in self.rounds:
            if r.start <= rec["start"] <= r.end:
                return r.no
        return None


def run_crawl(web: SimWebProcess, crawl_dir: Path, max_rounds: int = MAX_ROUNDS,
              extra_flags: tuple = ()) -> HostileCrawl:
    """Inject the seeds (with `extra_flags`), then run rounds (each on a round clock
    ROUND_STEP later) until nothing is left due, at most `max_rounds`."""
    # Warm the server's caches for the large bodies outside the crawl's time window, so
    # building them cannot stall the server while the crawl's short timeouts run.
    import requests
    s = requests.Session()
    s.trust_env = False
    for path in ("/bomb.html", "/big.html"):
        addr = web.web.by_name[host("hostile")].addr
        r = s.get(f"http://{addr}:{web.port}{path}", headers={"Host": web.web.netloc(host("hostile"))},
                  stream=True, timeout=60)
        r.raw.read(1024)
        r.close()
    flags = crawl_flags(web, crawl_dir) + list(extra_flags)
    assert inject.main(flags + [a for u in seeds(web) for a in ("--seed", u)]) == 0
    t0 = time.time()
    runs = []
    for k in range(1, max_rounds + 1):
        rt = t0 + k * ROUND_STEP
        start = time.time()
        report = round_mod.run_round(["--crawl_dir", str(crawl_dir), "--round_time", str(rt)])
        end = time.time()
        c = CrawlDir(str(crawl_dir))
        frontier = c.read_table("frontier", c.last_committed()).to_pylist()
        runs.append(RoundRun(k, rt, start, end, report, frontier))
        if not frontier:
            break
    t1 = time.time()
    log = [r for r in web.requests() if t0 <= r["start"] <= t1 + 1]
    return HostileCrawl(web, crawl_dir, runs, log, t0, t1)
