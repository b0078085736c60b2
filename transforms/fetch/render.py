"""Rendering JavaScript pages in headless Chromium without breaking the fetcher's promises.

`BrowserPool(RenderConfig)` is one worker's browser: Debian's Chromium (never downloaded)
driven by Playwright's async API on an event loop of its own thread, so host threads only
wait for their own page. It is opened in `FetchHosts.setup()` and closed in `teardown()`.

`HostFetcher` hands each fetched page to `BrowserPool.render_result(fetcher, result, state,
round)`; when `renderpolicy.wants_render` says so, the page is rendered and its body becomes
the rendered DOM (the same page parsers read it; the result says `rendered` and how many
links rendering added). Promises kept:

- every request the browser makes is intercepted (`page.route("**/*")`): the page itself is
  answered with the body already fetched (no second request); scripts, XHR and fetch() of
  the page's own host (and of --render_subrequest_hosts) are fetched by the host's
  `HostFetcher` itself (rendersession.py): robots.txt checked, the address guard on every
  connection, the per-host delay counted with the host's other requests (and skipped when
  it would overrun the page deadline), at most `max_subrequests` per page, each URL once
  per host and round (a small cache); every other request (other hosts, POSTs, images,
  styles, fonts, media, frames, navigations, WebSockets) is refused. Chromium's own
  networking goes to a dead proxy, so nothing that escapes interception reaches the network;
- a page deadline (`seconds`) from the moment a browser page is free; a browser that does
  not answer within it plus a grace is abandoned and replaced: only that page loses its
  rendering (the static HTML is kept, with the reason `render_<why>`);
- a fresh browser context per host (no cookies or storage shared between hosts), with one
  page reused for the host's pages; a page is done when, after `load`, no intercepted
  request has been open for QUIET seconds (or at the deadline: the DOM as it stands);
- `pages` pages rendered at once; the browser is restarted after `recycle_after` pages,
  after a crash, and when its process tree holds more than `memory_mb` MiB resident (V8's
  heap per renderer is capped below that too).
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import logging
import os
import signal
import threading
import time
import uuid

from transforms.fetch.connection import origin_port
from transforms.fetch.renderpolicy import RenderConfig, compare, found_more, listed, wants_render
from transforms.fetch.rendersession import (HostRenderSession, Job, OtherHosts, find_root,
                                            refuse, tree_rss)

log = logging.getLogger(__name__)

LAUNCH_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", "--mute-audio",
               # nothing may leave the browser on its own: every request is intercepted
               "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>")
SUBRESOURCE_TYPES = ("script", "xhr", "fetch")
QUIET = 0.25             # seconds without an open request after `load`: the page is done
RSS_EVERY = 1.0          # seconds between two checks of the browser's resident memory
GRACE = 10.0              # seconds past the page deadline before a browser counts as hung


def unavailable(cfg: RenderConfig) -> str | None:
    """Why rendering cannot run here (None: it can)."""
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed (pip install playwright)"
    if not (os.path.isfile(cfg.browser) and os.access(cfg.browser, os.X_OK)):
        return (f"no Chromium executable at {cfg.browser} (apt-get install chromium, "
                "or point --render_browser at one)")
    return None


def _join(reason: str | None, more: str) -> str:
    return f"{reason}; {more}" if reason else more


class BrowserPool:
    """A worker's headless Chromium (see the module docstring). Thread-safe."""

    def __init__(self, cfg: RenderConfig):
        self.cfg = cfg
        self.stats = {"pages": 0, "rendered": 0, "failed": 0, "recycles": 0, "launches": 0}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="render-loop", daemon=True)
        self._thread.start()
        self._io = cf.ThreadPoolExecutor(max(2, 2 * cfg.pages), thread_name_prefix="render-io")
        self._lock = threading.Lock()
        self.others = OtherHosts(cfg.subrequest_hosts, self)   # --render_subrequest_hosts
        self._rss_checked = 0.0
        self.broken = None      # why the browser could not start: pages keep their static HTML
        try:
            self._call(self._start(), 60)
        except Exception as e:   # noqa: BLE001 - the round goes on without rendering
            self.broken = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            log.error("render: the browser did not start (%s); pages keep their static HTML", self.broken)

    # -- the loop thread

    def _call(self, coro, timeout):
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result(timeout)
        except cf.TimeoutError:
            fut.cancel()
            raise

    async def _start(self):
        from playwright.async_api import TimeoutError as PageTimeout
        from playwright.async_api import async_playwright
        self._page_timeout = PageTimeout   # the browser's own deadline (not asyncio's)
        self._pw = await async_playwright().start()
        self._sem = asyncio.Semaphore(max(1, self.cfg.pages))
        self._browser, self._active, self._roots, self._closing = None, {}, {}, set()
        self._served, self._recycle = 0, False
        await self._current()

    async def _current(self):
        b = self._browser
        if b is not None and (self._recycle or not b.is_connected()):
            self.stats["recycles"] += 1
            self._browser = None
            if not self._active.get(b):
                self._close_later(b)
        if self._browser is None:
            marker = f"--beamcrawl-render={uuid.uuid4().hex}"
            args = [*LAUNCH_ARGS, f"--js-flags=--max-old-space-size={max(64, self.cfg.memory_mb // 2)}", marker]
            b = await self._pw.chromium.launch(executable_path=self.cfg.browser, headless=True,
                                               args=args, timeout=30_000)
            self.stats["launches"] += 1
            self._browser, self._served, self._recycle = b, 0, False
            self._active[b], self._roots[b] = 0, find_root(marker)
        return self._browser

    def _close_later(self, b):
        """Close a retired browser without holding up the next page."""
        task = self._loop.create_task(self._close_browser(b))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close_browser(self, b):
        self._active.pop(b, None)
        root = self._roots.pop(b, None)
        try:
            await asyncio.wait_for(b.close(), 10)
        except Exception:   # noqa: BLE001 - it does not answer: end the process we started
            if root is not None:
                with contextlib.suppress(OSError):
                    os.kill(root, signal.SIGKILL)

    async def _render(self, job: Job, session: HostRenderSession):
        async with self._sem:
            job.started = time.monotonic()
            b = await self._current()
            self._active[b] += 1
            try:
                return await asyncio.wait_for(self._page(job, session, b), self.cfg.seconds + 2)
            except asyncio.TimeoutError:
                if not await _responsive(b):   # a browser that stopped answering is replaced
                    self._recycle = True
                    session.context = session.page = None
                    return None, "hung"
                return None, "deadline"
            except self._page_timeout:   # (a memory bomb the deadline stopped before it crashed)
                return None, "deadline"
            except Exception as e:   # noqa: BLE001 - a crashed page costs only this page
                crashed = "crash" in str(e).lower() or not b.is_connected()
                self._recycle = self._recycle or crashed
                log.info("render: %s failed: %s", job.url, str(e).splitlines()[0] if str(e) else e)
                return None, "crashed" if crashed else "error"
            finally:
                self._active[b] -= 1
                self._served += 1
                if self._served >= self.cfg.recycle_after or self._over_memory(b):
                    self._recycle = True
                if b is not self._browser and not self._active.get(b):
                    self._close_later(b)

    def _over_memory(self, b) -> bool:
        now = time.monotonic()      # a /proc scan at most every RSS_EVERY seconds
        if now - self._rss_checked < RSS_EVERY:
            return False
        self._rss_checked = now
        return tree_rss(self._roots.get(b)) > self.cfg.memory_mb * 1024 * 1024

    async def _page(self, job, session, b):
        if session.context is None or session.context_browser is not b:
            if session.context is not None:
                with contextlib.suppress(Exception):
                    await session.context.close()
            session.context = await b.new_context(user_agent=session.fetcher.config.user_agent,
                                                  service_workers="block", accept_downloads=False)
            session.context_browser, session.page = b, None
        session.job = job       # the host's page is reused: its requests go to the current job
        page = session.page
        if page is None or page.is_closed():
            page = session.page = await session.context.new_page()
            await page.route("**/*", lambda route: self._route(session.job, session, route))
        done = False
        try:
            budget = self.cfg.seconds
            end = job.started + budget
            ms = lambda: max(1.0, (end - time.monotonic()) * 1000)
            await page.goto(job.url, wait_until="domcontentloaded", timeout=ms())
            with contextlib.suppress(Exception):     # as far as the deadline allows
                await page.wait_for_load_state("load", timeout=ms())
            # then quiet: every request goes through _route, so it knows when none is open
            while time.monotonic() < end and (
                    job.pending or time.monotonic() - job.last_activity < QUIET):
                await asyncio.sleep(0.02)
            html = await page.content()
            done = True
            return html, None
        finally:
            if not done:        # a page that failed is not reused
                session.page = None
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(page.close(), 5)

    async def _route(self, job, session, route):
        req = route.request
        job.pending += 1
        try:
            if not job.main_served and req.is_navigation_request():
                job.main_served = True
                headers = {"Content-Type": job.content_type_header or "text/html"}
                await route.fulfill(status=200, headers=headers, body=job.body)
                return
            if req.method != "GET" or req.resource_type not in SUBRESOURCE_TYPES:
                refuse(job, "type_" + (req.resource_type if req.method == "GET" else "method"))
                await route.abort("blockedbyclient")
                return
            got = await self._loop.run_in_executor(self._io, session.subrequest, job, req.url)
            if got is None:
                await route.abort("blockedbyclient")
            else:
                await route.fulfill(status=got[0], headers=got[1], body=got[2])
        except Exception:   # noqa: BLE001 - the page is gone (closed, crashed, deadline)
            log.debug("render: route of %s", req.url, exc_info=True)
        finally:
            job.pending -= 1
            job.last_activity = time.monotonic()

    # -- host threads

    def render_result(self, fetcher, res, state, rnd):
        """`res` rendered when the policy wants it (see the module docstring); else as is."""
        host = state.host
        if not wants_render(self.cfg, host, res, state):
            return res
        if self.broken is not None:
            res.rendered, res.reason = False, _join(res.reason, "render_unavailable")
            return res
        session = getattr(fetcher, "render_session", None)
        if session is None:
            session = fetcher.render_session = HostRenderSession(self, fetcher)
        _s, hostname, port = origin_port(res.url)
        job = Job(res.url, res.body, res.content_type_header, (hostname.lower(), port), state, rnd,
                   fetcher.config)
        html, why = self._wait(job, session)
        with session.lock:          # no sub-request of this page runs past this point
            job.cancelled = True
        self._count("pages")
        if html is None:
            self._count("failed")
            res.rendered, res.reason = False, _join(res.reason, f"render_{why}")
            return res
        body = html.encode("utf-8")[:fetcher.config.max_body]
        links, text = compare(res.body, body, res.url)
        self._count("rendered")
        res.body, res.content_type_header = body, "text/html; charset=utf-8"
        res.rendered, res.render_links = True, links
        if self.cfg.mode == "auto" and not listed(self.cfg, host):
            state.render_helped = bool(state.render_helped) or found_more(links, text)
        return res

    def _wait(self, job, session):
        fut = asyncio.run_coroutine_threadsafe(self._render(job, session), self._loop)
        t0 = time.monotonic()
        while True:
            try:
                return fut.result(timeout=0.25)
            except cf.TimeoutError:
                now = time.monotonic()
                if job.started is not None and now > job.started + self.cfg.seconds + GRACE:
                    fut.cancel()      # the browser does not answer: replace it
                    self._loop.call_soon_threadsafe(setattr, self, "_recycle", True)
                    return None, "hung"
                if job.started is None and now - t0 > 4 * self.cfg.seconds + GRACE:
                    fut.cancel()      # every browser page stayed busy: keep the static HTML
                    return None, "busy"
            except Exception as e:   # noqa: BLE001 - e.g. the browser could not start
                return None, "unavailable: " + (str(e).splitlines()[0] if str(e) else type(e).__name__)

    def _count(self, key):
        with self._lock:
            self.stats[key] += 1

    def close_context(self, session: HostRenderSession) -> None:
        ctx, session.context = session.context, None
        if ctx is not None and self._loop.is_running():
            with contextlib.suppress(Exception):
                self._call(asyncio.wait_for(ctx.close(), 5), 10)

    def close(self) -> None:
        async def stop():
            for b in list(getattr(self, "_active", {})):
                await self._close_browser(b)
            for task in list(getattr(self, "_closing", ())):
                with contextlib.suppress(Exception):
                    await task
            if getattr(self, "_pw", None) is not None:
                with contextlib.suppress(Exception):
                    await self._pw.stop()
        if self._loop.is_running():
            with contextlib.suppress(Exception):
                self._call(stop(), 30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._io.shutdown(wait=False, cancel_futures=True)
        self.others.close()


async def _responsive(b, seconds=3.0) -> bool:
    """Does the browser answer a DevTools round trip within `seconds`?"""
    try:
        cdp = await asyncio.wait_for(b.new_browser_cdp_session(), seconds)
        await asyncio.wait_for(cdp.detach(), seconds)
        return True
    except Exception:   # noqa: BLE001 - timeout, closed, crashed: not answering
        return False


def open_pool(cfg: RenderConfig) -> BrowserPool | None:
    """The worker's browser, or None when rendering is off."""
    return BrowserPool(cfg) if cfg.on else None
