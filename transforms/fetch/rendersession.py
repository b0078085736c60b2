"""What a rendered page may request, and how (pure Python: no browser, no Beam).

`HostRenderSession` is one host's rendering (one HostFetcher, render.py drives it): its
browser context and page, and `subrequest(job, url)`, which answers each script, XHR or
fetch() request the page makes, with the fetcher's own rules: the page's host only (or a
host of --render_subrequest_hosts, with its own robots.txt and delay, shared by the worker),
robots.txt, the address guard (every connection goes through `HostFetcher._request`), the
per-host delay counted with the host's other requests (skipped with the request when it
would overrun the page deadline), at most `max_subrequests` per page, and each URL once per
host and round. `tree_rss` measures the browser's memory (Linux /proc).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from transforms.fetch.connection import Failure, origin_port
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.hostround import HostRound
from transforms.fetch.records import HostState

DROP_HEADERS = ("content-encoding", "content-length", "transfer-encoding", "set-cookie", "connection")
SUB_BODY_CAP = 5 * 1024 * 1024


@dataclass
class Job:
    url: str
    body: bytes
    content_type_header: str | None
    origin: tuple
    state: object
    rnd: object
    config: object = None            # the page's FetchConfig
    started: float | None = None     # monotonic time a browser page was free
    main_served: bool = False
    cancelled: bool = False
    subrequests: int = 0
    pending: int = 0                 # intercepted requests not answered yet
    last_activity: float = 0.0       # monotonic time a request was last answered
    refused: dict = field(default_factory=dict)   # reason -> count


class HostRenderSession:
    """One host's rendering (one HostFetcher): its browser context and sub-request cache."""

    def __init__(self, pool: "BrowserPool", fetcher):
        self.pool, self.fetcher = pool, fetcher
        self.context = self.context_browser = self.page = self.job = None
        self.lock = threading.Lock()      # the fetcher's session: one sub-request at a time
        self.cache: dict[str, tuple] = {}

    def subrequest(self, job: Job, url: str):
        """(status, headers, body) for a sub-request, fetched politely; None: refuse it.
        Runs on the pool's I/O threads while the host's own thread waits for the render."""
        with self.lock:
            if job.cancelled:
                return None
            f, cfg = self.fetcher, self.fetcher.config
            try:
                _scheme, host, port = origin_port(url)
            except ValueError:
                return refuse(job, "bad_url")
            if url in self.cache:
                return self.cache[url]
            if (host.lower(), port) != job.origin:
                if not self.pool.others.allows(host, port):
                    return refuse(job, "other_host")
                if job.subrequests >= self.pool.cfg.max_subrequests:
                    return refuse(job, "too_many")
                job.subrequests += 1
                got = self.pool.others.request(url, host, port, job)
                if got is not None and 200 <= got[0] < 300:
                    self.cache[url] = got
                return got
            rnd = job.rnd
            if job.subrequests >= self.pool.cfg.max_subrequests:
                return refuse(job, "too_many")
            if rnd.robots_block is not None or rnd.paused_for is not None:
                return refuse(job, "host_paused")
            if cfg.obey_robots and rnd.policy is not None and not rnd.policy.allowed(url, cfg.user_agent):
                return refuse(job, "robots_txt")
            job.subrequests += 1
            got = polite_get(f, url, job.state, rnd, job)
            if got is not None and 200 <= got[0] < 300:
                self.cache[url] = got
            return got

    def close(self) -> None:
        self.pool.close_context(self)


def polite_get(f, url, state, rnd, job):
    """GET `url` with HostFetcher `f` on the politeness clock `rnd` (after robots checks):
    the host's delay first, unless waiting would overrun the page deadline."""
    turn = max(rnd.last_end + f._delay(rnd), rnd.not_before)
    if turn - f.clock() > job.started + f.renderer.cfg.seconds - time.monotonic():
        return refuse(job, "delay_past_deadline")
    f._wait_turn(rnd)
    out = f._request(url, None, min(f.config.max_body, SUB_BODY_CAP), keep_body=True)
    f._record(state, rnd, out, None)
    if isinstance(out, Failure):
        return refuse(job, out.reason)
    if out.truncated:
        return refuse(job, "body_cap")
    # one entry per name, repeated headers joined (urllib3's items() repeats the name)
    headers = {k: out.headers[k] for k in out.headers if k.lower() not in DROP_HEADERS}
    return out.status, headers, out.body


class _OtherHost:
    """One host of --render_subrequest_hosts: its robots.txt and politeness clock."""

    def __init__(self, fetcher, host):
        self.fetcher, self.state, self.rnd = fetcher, HostState(host), HostRound(None)
        self.rnd.robots_done = not fetcher.config.obey_robots
        self.lock = threading.Lock()


class OtherHosts:
    """The hosts other than the page's that sub-requests may go to (--render_subrequest_hosts),
    shared by a worker's pages: each with its robots.txt and its delay, one request at a time."""

    def __init__(self, allowed: tuple, renderer):
        self.allowed, self.renderer = tuple(allowed), renderer
        self.lock = threading.Lock()
        self.hosts: dict[str, _OtherHost] = {}

    def allows(self, host: str, port: int) -> bool:
        return host.lower() in self.allowed or f"{host.lower()}:{port}" in self.allowed

    def request(self, url: str, host: str, port: int, job: Job):
        key = f"{host.lower()}:{port}"
        with self.lock:
            o = self.hosts.get(key)
            if o is None:
                o = self.hosts[key] = _OtherHost(HostFetcher(job.config, renderer=self.renderer), key)
        with o.lock:
            if not o.rnd.robots_done:
                o.rnd.robots_done = True
                o.fetcher._robots(url, o.state, o.rnd)
            cfg = o.fetcher.config
            if o.rnd.robots_block is not None:
                return refuse(job, "other_host_" + o.rnd.robots_block)
            if cfg.obey_robots and o.rnd.policy is not None and not o.rnd.policy.allowed(url, cfg.user_agent):
                return refuse(job, "robots_txt")
            return polite_get(o.fetcher, url, o.state, o.rnd, job)

    def close(self) -> None:
        for o in list(self.hosts.values()):
            o.fetcher.close()


def refuse(job: Job, why: str):
    job.refused[why] = job.refused.get(why, 0) + 1
    return None


# -- memory of the browser's process tree (Linux /proc; 0 elsewhere)

def find_root(marker: str) -> int | None:
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    return pid
        except OSError:
            continue
    return None


def _pids():
    try:
        return [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []


def tree_rss(root: int | None) -> int:
    """Resident bytes of `root` and all its descendants."""
    if root is None:
        return 0
    parent, rss = {}, {}
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            parent[pid], rss[pid] = int(fields[1]), int(fields[21]) * page
        except (OSError, IndexError, ValueError):
            continue
    total, todo, seen = 0, [root], set()
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total
