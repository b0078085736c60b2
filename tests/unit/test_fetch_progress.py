"""The fetch progress meter: counted a page at a time by the fetch threads, shown on stderr."""
import io
import time

import pyarrow as pa

from schemas import tables
from tests.unit.httpfixtures import LocalServer, loopback_config, page, status
from transforms.fetch.hostjob import FetcherFactory, fetch_one_host
from transforms.fetch.progress import FetchProgress, ProgressReporter, progress_line
from transforms.fetch.records import FetchResult
from transforms.fetch.step import FetchHosts


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def result(outcome=tables.OK, body=b""):
    return FetchResult(url="http://h/", fp=1, fetch_time=0.0, elapsed_ms=1.0, outcome=outcome,
                       body=body)


def test_counts_pages_bytes_errors_and_hosts_in_flight():
    clock = Clock()
    p = FetchProgress(clock)
    p.planned = 10
    p.host_started()
    p.host_started()
    p.page(result(body=b"x" * 1500))
    p.page(result(tables.HTTP_ERROR, b"nope"))
    p.page(result("transient"))
    p.page(result(tables.ROBOTS_DENIED))
    p.host_finished()
    clock.t += 2.0
    s = p.snapshot()
    assert (s["done"], s["bytes"], s["errors"], s["active_hosts"], s["hosts_done"]) == (4, 1504, 2, 1, 1)
    assert s["pages_per_s"] == 2.0 and s["eta_s"] == 3.0          # 6 left at 2 pages/s


def test_the_line_says_done_of_planned_rate_bytes_hosts_errors_and_time_left():
    line = progress_line({"done": 1200, "planned": 5000, "bytes": 21_300_000, "errors": 3,
                          "active_hosts": 4, "hosts_done": 9, "seconds": 6.0,
                          "pages_per_s": 200.0, "eta_s": 19.0})
    assert line == ("fetch: 1200/5000 pages (24%) · 200.0 pages/s · 21.3 MB · 4 hosts active · "
                    "3 errors · ~19s left")
    unknown = progress_line({"done": 0, "planned": 0, "bytes": 0, "errors": 0, "active_hosts": 0,
                             "hosts_done": 0, "seconds": 0.1, "pages_per_s": 0.0, "eta_s": None})
    assert unknown.startswith("fetch: 0 pages ·") and unknown.endswith("~? left")


def test_reporter_writes_a_line_per_tick_and_stops():
    p = FetchProgress()
    p.planned = 3
    out = io.StringIO()
    r = ProgressReporter(p, 0.02, out).start()
    deadline = time.time() + 5
    while r.lines < 2 and time.time() < deadline:
        time.sleep(0.01)
    r.stop()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2 and all(line.startswith("fetch: 0/3 pages (0%)") for line in lines)
    n = r.lines
    time.sleep(0.1)
    assert r.lines == n                                            # stopped means stopped


def test_reporter_on_a_terminal_draws_a_bar():
    p = FetchProgress()
    p.planned = 4
    p.page(result(body=b"abc"))
    out = io.StringIO()
    r = ProgressReporter(p, 60, out, bar=True)
    r.show()
    r.stop()
    assert "fetch" in out.getvalue() and "1/4" in out.getvalue()


def test_every_url_of_a_host_reaches_the_meter_as_it_is_fetched():
    with LocalServer({"/robots.txt": status(404), "*": page(b"<html>hello</html>")}) as srv:
        cfg = loopback_config({"site.test": srv})
        host = f"site.test:{srv.port}"
        rows = [{"url": f"http://{host}/p{i}", "fp": i} for i in range(5)]
        seen = []
        p = FetchProgress()
        real_page = p.page
        p.page = lambda res: (seen.append(p.snapshot()["active_hosts"]), real_page(res))
        pages, _, _ = fetch_one_host(FetcherFactory(cfg), host, rows, None, p)
    s = p.snapshot()
    assert len(pages) == 5 and s["done"] == 5 and s["bytes"] == 5 * len(b"<html>hello</html>")
    assert seen == [1] * 5                         # counted while the host was in flight
    assert (s["active_hosts"], s["hosts_done"]) == (0, 1)


def test_the_fetch_step_shows_progress_while_it_fetches(capsys):
    with LocalServer({"/robots.txt": status(404), "*": page(b"<html>slow enough</html>")}) as srv:
        cfg = loopback_config({"site.test": srv}, delay_per_host=0.05)
        host = f"site.test:{srv.port}"
        fn = FetchHosts(cfg, threads=2, sitemaps=False, progress_seconds=0.05)
        fn.setup()
        fn.start_bundle()
        rows = pa.Table.from_pylist([{"url": f"http://{host}/p{i}", "fp": i} for i in range(8)])
        try:
            list(fn.process((host, [(host, {"urls": [rows], "state": []})]), planned=8))
            list(fn.finish_bundle())
        finally:
            fn.teardown()
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("fetch: ") and "/8 pages" in line for line in err)
    assert fn._reporter is None                    # stopped with the bundle


def test_the_fetch_step_counts_pages_bytes_and_errors_as_beam_metrics():
    import apache_beam as beam
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    body = b"<html>metrics</html>"
    with LocalServer({"/robots.txt": status(404), "/gone": status(404), "*": page(body)}) as srv:
        cfg = loopback_config({"site.test": srv})
        host = f"site.test:{srv.port}"
        rows = pa.Table.from_pylist([{"url": f"http://{host}/{p}", "fp": i}
                                     for i, p in enumerate(["a", "b", "gone"])])
        p = beam.Pipeline(runner=fn_runner.FnApiRunner())
        _ = (p | beam.Create([(host, [(host, {"urls": [rows], "state": []})])])
             | beam.ParDo(FetchHosts(cfg, threads=2, sitemaps=False), planned=3))
        result = p.run()
        result.wait_until_finish()
    counters, distributions = fetch_metrics(result)
    assert counters["pages"] == 3 and counters["hosts"] == 1 and counters["errors"] == 1
    assert counters["bytes"] >= 2 * len(body)
    assert distributions["fetch_ms"].count == 3


def fetch_metrics(result):
    """({counter: committed value}, {distribution: committed value}) of namespace `fetch`."""
    from apache_beam.metrics.metric import MetricsFilter
    got = result.metrics().query(MetricsFilter().with_namespace("fetch"))
    return ({c.key.metric.name: c.committed for c in got["counters"]},
            {d.key.metric.name: d.committed for d in got["distributions"]})


def test_the_hosts_of_a_factory_share_one_resolver(monkeypatch):
    """The --resolve map is read once per worker's factory, not once per fetched host (each
    fetcher built two dicts of every mapped host), and it still resolves every host."""
    from transforms.fetch.records import FetchConfig
    calls = []
    original = FetchConfig.resolve_map
    monkeypatch.setattr(FetchConfig, "resolve_map", lambda self: (calls.append(1), original(self))[1])
    with LocalServer({"/robots.txt": status(404), "*": page(b"<html>x</html>")}) as srv:
        names = [f"r{i}.test" for i in range(3)]
        factory = FetcherFactory(loopback_config({n: srv for n in names}))
        fetched = [fetch_one_host(factory, f"{n}:{srv.port}", [{"url": f"http://{n}:{srv.port}/", "fp": i}],
                                  None)[0] for i, n in enumerate(names)]
    assert [p[0]["outcome"] for p in fetched] == [tables.OK] * 3
    assert len(calls) == 1
