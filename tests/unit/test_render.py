"""JavaScript rendering (#19): the policy (pure) and the browser pool against loopback servers.

The browser tests skip where Chromium is missing (`render.unavailable`; CI installs it and
fails on a skip: tests/ciskips.py)."""
import contextlib
import json

import playwright.async_api  # noqa: F401 - required (requirements.txt): a missing package is an error
import pytest

from transforms.fetch import render
from transforms.fetch.hostfetcher import HostFetcher
from transforms.fetch.records import FetchRequest, FetchResult, HostState
from transforms.fetch.renderpolicy import RenderConfig, looks_script_built, wants_render
from tests.unit.httpfixtures import LocalServer, hang, loopback_config, page

SHELL = (b'<!DOCTYPE html><html><head><title>App</title></head><body><div id="app"></div>'
         b'<noscript>This site needs JavaScript to run.</noscript>'
         b'<script src="/static/app.js"></script><script src="/private/track.js"></script>'
         b'<img src="/logo.png"></body></html>')
APP_JS = b"""
var app = document.getElementById('app');
for (var i = 0; i < 3; i++) {
  var a = document.createElement('a'); a.href = '/page/' + i; a.textContent = 'Page ' + i;
  app.appendChild(a);
}
fetch('/api/nav.json').then(function (r) { return r.json(); }).then(function (nav) {
  nav.forEach(function (p) {
    var a = document.createElement('a'); a.href = p; a.textContent = p; app.appendChild(a);
  });
  var s = document.createElement('script'); s.src = OTHER + '/evil.js'; document.body.appendChild(s);
});
"""
ROBOTS = b"User-agent: *\nDisallow: /private/\n"
STATIC = (b"<html><head><title>Plain</title></head><body>" + b"<p>Some words of text here.</p>" * 20
          + b'<a href="/a">a</a><a href="/b">b</a><a href="/c">c</a><script src="/x.js"></script></body></html>')


def test_a_shell_with_scripts_looks_script_built_and_a_text_page_does_not():
    assert looks_script_built(SHELL, "http://h/")
    assert not looks_script_built(STATIC, "http://h/")
    assert not looks_script_built(b"<html><body></body></html>", "http://h/")   # no script: nothing to run


def _res(body=SHELL, ctype="text/html"):
    return FetchResult(url="http://h/", fp=1, fetch_time=0, elapsed_ms=0, outcome="ok",
                       http_status=200, content_type=ctype, body=body)


def test_wants_render_follows_the_mode_the_host_list_and_what_the_host_showed_before():
    state = HostState("h")
    assert not wants_render(RenderConfig("none"), "h", _res(), state)
    assert wants_render(RenderConfig("auto"), "h", _res(), state)
    assert not wants_render(RenderConfig("auto"), "h", _res(STATIC), state)
    assert not wants_render(RenderConfig("auto"), "h", _res(ctype="application/pdf"), state)
    assert wants_render(RenderConfig("always"), "h", _res(STATIC), state)            # no list: every host
    assert not wants_render(RenderConfig("always", hosts=("g",)), "h", _res(), state)
    assert wants_render(RenderConfig("auto", hosts=("h",)), "h", _res(STATIC), state)
    assert wants_render(RenderConfig("auto", hosts=("h",)), "h:8080", _res(STATIC), state)
    assert not wants_render(RenderConfig("auto", hosts=("h:8080",)), "h:8081", _res(STATIC), state)
    assert wants_render(RenderConfig("auto"), "h", _res(STATIC), HostState("h", render_helped=True))
    assert not wants_render(RenderConfig("auto"), "h", _res(), HostState("h", render_helped=False))


CFG = RenderConfig("auto", seconds=8.0, pages=2, recycle_after=50, memory_mb=1024)
missing = render.unavailable(CFG)
needs_browser = pytest.mark.skipif(missing is not None, reason=f"rendering unavailable: {missing}")


@pytest.fixture(scope="module")
def pool():
    if missing:
        pytest.skip(f"rendering unavailable: {missing}")
    p = render.BrowserPool(CFG)
    yield p
    p.close()


def _fetch(pool, srv, paths, name="app.test", **kw):
    cfg = loopback_config({name: srv}, render=CFG, **kw)
    reqs = [FetchRequest(url=f"http://{name}:{srv.port}{p}", fp=i) for i, p in enumerate(paths)]
    with HostFetcher(cfg, renderer=pool) as f:
        results, state = f.fetch_host(f"{name}:{srv.port}", reqs, HostState(f"{name}:{srv.port}"))
    return results, state


@needs_browser
def test_a_script_built_page_is_rendered_politely(pool):
    with LocalServer({"*": page(b"<html><body>other host</body></html>")}) as other:
        other_url = f"http://127.0.0.1:{other.port}"
        routes = {"/robots.txt": page(ROBOTS, "text/plain"), "/": page(SHELL),
                  "/static/app.js": page(APP_JS.replace(b"OTHER", json.dumps(other_url).encode()),
                                         "application/javascript"),
                  "/private/track.js": page(b"document.title='tracked';", "application/javascript"),
                  "/api/nav.json": page(b'["/from-json/1", "/from-json/2"]', "application/json"),
                  "/logo.png": page(b"\x89PNG", "image/png")}
        with LocalServer(routes) as srv:
            (res,), state = _fetch(pool, srv, ["/"], delay_per_host=0.3)
            paths, times = srv.paths(), srv.times()
        assert other.paths() == []                              # other hosts: never asked
    assert res.rendered is True and res.outcome == "ok"
    body = res.body.decode()
    for link in ("/page/0", "/page/2", "/from-json/1", "/from-json/2"):
        assert f'href="{link}"' in body
    assert res.render_links == 5          # 3 built by the script, 2 from the JSON endpoint
    assert paths == ["/robots.txt", "/", "/static/app.js", "/api/nav.json"]   # no private, no image
    assert min(b - a for a, b in zip(times, times[1:])) >= 0.3 * 0.95          # the host's delay
    assert state.fetches == 4 and state.render_helped is True


@needs_browser
def test_a_text_page_is_not_rendered_in_auto_mode(pool):
    with LocalServer({"/robots.txt": page(b"", "text/plain"), "/": page(STATIC)}) as srv:
        (res,), _ = _fetch(pool, srv, ["/"])
        assert srv.paths() == ["/robots.txt", "/"]
    assert res.rendered is None and res.body == STATIC


@needs_browser
def test_a_hanging_script_costs_only_its_page_and_the_deadline(pool):
    """A page whose script never arrives is cut at its page deadline (CFG: 8 s; the script's
    own read timeout and fetch deadline are longer, 12 s, and hold the host that long): it
    keeps its static HTML with the reason render_deadline, and the host's next page is
    rendered as usual. (A page on another host first: the browser's start-up is not the
    page's.)"""
    hanging = b'<html><body><div id="a"></div><script src="/slow.js"></script></body></html>'
    ok = page(b'<html><body><script>document.body.innerHTML="<a href=\\"/x\\">x</a>"</script></body></html>')
    routes = {"/robots.txt": page(b"", "text/plain"), "/": page(hanging), "/slow.js": hang(30),
              "/ok": ok, "/ok2": ok}
    with LocalServer(routes) as srv:
        _fetch(pool, srv, ["/ok"], name="warm.test")
        (slow, after), _ = _fetch(pool, srv, ["/", "/ok2"], read_timeout=12.0, deadline=12.0)
        assert srv.paths()[-4:] == ["/robots.txt", "/", "/slow.js", "/ok2"]
    assert (slow.outcome, slow.rendered, slow.reason, slow.body) == ("ok", False, "render_deadline", hanging)
    assert (after.rendered, after.render_links, after.reason) == (True, 1, None)


@needs_browser
def test_a_renderer_that_runs_out_of_memory_costs_only_its_page():
    """V8's heap is capped at half of --render_memory_mb (128 MB here): the page that fills
    it crashes its renderer long before its deadline (30 s), and is reported as a crash."""
    bomb = (b"<html><body><script>var a=[];for(;;){a.push(new Array(1e6).fill(Math.random()))}"
            b"</script></body></html>")
    ok = b'<html><body><script>document.body.innerHTML="<a href=\\"/y\\">y</a>"</script></body></html>'
    p = render.BrowserPool(RenderConfig("auto", seconds=30.0, pages=1, memory_mb=256))
    try:
        with LocalServer({"/robots.txt": page(b"", "text/plain"), "/bomb": page(bomb), "/ok": page(ok),
                          "/ok2": page(ok)}) as srv:
            (fine, boom, again), _ = _fetch(p, srv, ["/ok", "/bomb", "/ok2"])
    finally:
        p.close()
    assert (boom.outcome, boom.rendered, boom.reason, boom.body) == ("ok", False, "render_crashed", bomb)
    assert fine.rendered is True and again.rendered is True and again.render_links == 1


@needs_browser
def test_a_page_past_its_deadline_is_a_deadline_not_an_error():
    """A script that never yields: the browser's own timeout (Playwright's TimeoutError, not
    asyncio's) is the page's deadline. It was reported as render_error, and so was the
    memory bomb above when the machine was loaded enough that its deadline came first."""
    spin = b"<html><body><script>for(;;){}</script></body></html>"
    ok = b'<html><body><script>document.body.innerHTML="<a href=\\"/y\\">y</a>"</script></body></html>'
    p = render.BrowserPool(RenderConfig("auto", seconds=2.0, pages=1))
    try:
        with LocalServer({"/robots.txt": page(b"", "text/plain"), "/spin": page(spin),
                          "/ok": page(ok)}) as srv:
            (spun, fine), _ = _fetch(p, srv, ["/spin", "/ok"])
    finally:
        p.close()
    # (a browser too loaded to answer within the grace is "hung": a deadline too, never an error)
    assert spun.rendered is False and spun.reason in ("render_deadline", "render_hung"), spun.reason
    assert spun.outcome == "ok" and spun.body == spin          # the static HTML is kept
    assert fine.outcome == "ok" and b"/y" in fine.body         # the next page is fetched


@needs_browser
def test_scripts_from_an_allowed_other_host_keep_its_robots_and_other_hosts_are_refused():
    cdn_js = b'document.getElementById("app").innerHTML = "<a href=\\"/from-cdn\\">cdn</a>";'
    cdn_routes = {"/robots.txt": page(b"User-agent: *\nDisallow: /blocked.js\n", "text/plain"),
                  "/lib.js": page(cdn_js, "application/javascript"),
                  "/blocked.js": page(b"window.x = 1;", "application/javascript")}
    with LocalServer(cdn_routes) as cdn, LocalServer({"*": page(b"nothing", "text/plain")}) as other:
        shell = (f'<html><body><div id="app"></div><script src="http://cdn.test:{cdn.port}/lib.js"></script>'
                 f'<script src="http://cdn.test:{cdn.port}/blocked.js"></script>'
                 f'<script src="http://other.test:{other.port}/x.js"></script></body></html>').encode()
        with LocalServer({"/robots.txt": page(b"", "text/plain"), "/": page(shell)}) as srv:
            cfg = RenderConfig("always", seconds=8.0, subrequest_hosts=("cdn.test",))
            p = render.BrowserPool(cfg)
            try:
                fcfg = loopback_config({"app.test": srv, "cdn.test": cdn, "other.test": other}, render=cfg)
                with HostFetcher(fcfg, renderer=p) as f:
                    (res,), _ = f.fetch_host(f"app.test:{srv.port}",
                                             [FetchRequest(f"http://app.test:{srv.port}/", 1)], None)
            finally:
                p.close()
            assert srv.paths() == ["/robots.txt", "/"]
        assert cdn.paths() == ["/robots.txt", "/lib.js"] and other.paths() == []
    assert res.rendered is True and res.render_links == 1 and b'href="/from-cdn"' in res.body


def test_render_on_without_a_browser_is_refused_with_one_error_line(tmp_path, capsys):
    from pipelines import inject
    from tests.unit.test_cli import refused
    d = tmp_path / "crawl"
    line = refused(inject.main, ["--crawl_dir", str(d), "--seed", "http://a.test/", "--render", "auto",
                                 "--render_browser", str(tmp_path / "no-chromium")], capsys, tmp_path,
                   "--render auto: no Chromium executable at")
    assert "--render none" in line


STORAGE = (b'<html><body><div id="app"></div><script>'
           b'var seen = localStorage.getItem("k") || "none"; localStorage.setItem("k", "set");'
           b'var ck = document.cookie || "nocookie"; document.cookie = "c=1"; var a = document.createElement("a");'
           b'a.href = "/seen-" + seen + "-" + ck; a.textContent = "x";'
           b'document.getElementById("app").appendChild(a);</script></body></html>')


@needs_browser
def test_each_host_job_gets_a_fresh_context_and_pages_of_one_host_share_it(pool):
    with LocalServer({"/robots.txt": page(b"", "text/plain"), "/": page(STORAGE), "/2": page(STORAGE)}) as srv:
        (first, second), _ = _fetch(pool, srv, ["/", "/2"])
        (again,), _ = _fetch(pool, srv, ["/"])          # the next host job: a new context
    assert b'href="/seen-none-nocookie"' in first.body
    assert b'href="/seen-set-c=1"' in second.body       # same host, same job: storage kept
    assert b'href="/seen-none-nocookie"' in again.body


def test_a_browser_that_cannot_start_leaves_the_static_html_with_the_reason(tmp_path):
    cfg = RenderConfig("always", browser="/bin/false", seconds=5.0)
    p = render.BrowserPool(cfg)
    try:
        assert p.broken
        with LocalServer({"/robots.txt": page(b"", "text/plain"), "/": page(SHELL)}) as srv:
            fcfg = loopback_config({"app.test": srv}, render=cfg)
            with HostFetcher(fcfg, renderer=p) as f:
                (res,), _ = f.fetch_host(f"app.test:{srv.port}", [FetchRequest(f"http://app.test:{srv.port}/", 1)], None)
    finally:
        p.close()
    assert (res.outcome, res.rendered, res.reason, res.body) == ("ok", False, "render_unavailable", SHELL)


@needs_browser
@pytest.mark.parametrize("limits", [dict(recycle_after=2), dict(memory_mb=1)])
def test_the_browser_is_restarted_after_its_page_count_or_above_its_memory_cap(limits):
    ok = b'<html><body><script>document.body.innerHTML="<a href=\\"/z\\">z</a>"</script></body></html>'
    cfg = RenderConfig("always", seconds=8.0, **limits)
    p = render.BrowserPool(cfg)
    try:
        assert render.tree_rss(p._roots[p._browser]) > 0        # the browser's processes are found
        with LocalServer({"/robots.txt": page(b"", "text/plain"), "*": page(ok)}) as srv:
            fcfg = loopback_config({"app.test": srv}, render=cfg)
            with HostFetcher(fcfg, renderer=p) as f:
                results, _ = f.fetch_host(f"app.test:{srv.port}", [
                    FetchRequest(f"http://app.test:{srv.port}/{k}", k) for k in range(3)], None)
    finally:
        p.close()
    assert [r.render_links for r in results] == [1, 1, 1]
    if "recycle_after" in limits:
        assert p.stats["launches"] == 2           # pages 1-2, then page 3 on a new browser
    else:                                         # over the cap after page 1 (then checked
        assert p.stats["launches"] >= 2           # at most once a second)


@needs_browser
def test_a_browser_that_stops_answering_costs_only_the_page_it_was_on():
    import os
    import signal
    ok = b'<html><body><script>document.body.innerHTML="<a href=\\"/w\\">w</a>"</script></body></html>'
    cfg = RenderConfig("always", seconds=3.0)
    p = render.BrowserPool(cfg)
    frozen = p._roots[p._browser]
    try:
        with LocalServer({"/robots.txt": page(b"", "text/plain"), "*": page(ok)}) as srv:
            fcfg = loopback_config({"app.test": srv}, render=cfg)
            with HostFetcher(fcfg, renderer=p) as f:
                os.kill(frozen, signal.SIGSTOP)            # the browser process hangs
                (hung,), _ = f.fetch_host(f"app.test:{srv.port}",
                                          [FetchRequest(f"http://app.test:{srv.port}/1", 1)], None)
                (fine,), _ = f.fetch_host(f"app.test:{srv.port}",
                                          [FetchRequest(f"http://app.test:{srv.port}/2", 2)], None)
    finally:
        with contextlib.suppress(OSError):
            os.kill(frozen, signal.SIGKILL)
        p.close()
    assert hung.outcome == "ok" and hung.rendered is False and hung.reason == "render_hung"
    assert fine.rendered is True and fine.render_links == 1 and p.stats["launches"] == 2
