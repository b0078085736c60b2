"""Fetch: the Beam side of fetching. One element per host; many hosts at once per worker.

`FetchHosts` receives one (host, its URL rows, its cached host state) element per host and
hands it to a thread pool that lives as long as the DoFn instance (opened in `setup`).
Each host is fetched sequentially by one `HostFetcher` (transforms.fetcher) with its
politeness delay; concurrency comes only from fetching many hosts at the same time.
Finished hosts are emitted as soon as they are done (on later `process` calls and in
`finish_bundle`), so one slow host never holds back the output of the others and memory
holds only the hosts in flight.
"""
import concurrent.futures as cf
import time
import traceback

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from pipelines import faults
from schemas import tables
from transforms import fetcher as fetcher_mod
from transforms import urls as urls_mod

# Frontier columns a fetched page carries forward into its visited row and its links.
CARRIED = ("fp", "url", "host", "depth", "discovered_round", "first_parent", "retries",
           "redirects", "source", "inlinks")

RESULT_FIELDS = ("fetch_time", "elapsed_ms", "outcome", "reason", "http_status", "content_type",
                 "content_type_header", "body", "truncated", "redirect_to", "etag",
                 "last_modified", "retry_after", "x_robots_tag")


def _page(row, result):
    page = {k: row.get(k) for k in CARRIED}
    for k in RESULT_FIELDS:
        page[k] = getattr(result, k, None)
    return page


def sitemap_bundle(host, rows, old_row, new_row):
    """Sitemaps to queue after a host's fetch: those its robots.txt lists for the first time
    (or /sitemap.xml on first contact when it lists none), as a candidates bundle."""
    if not new_row or new_row.get("robots_fetched_at") == (old_row or {}).get("robots_fetched_at"):
        return None
    old = set((old_row or {}).get("sitemaps") or ())
    urls = [u for u in (new_row.get("sitemaps") or ()) if u not in old]
    scheme = "https" if rows and str(rows[0]["url"]).startswith("https://") else "http"
    if old_row is None and not new_row.get("sitemaps"):
        urls = [f"{scheme}://{host}/sitemap.xml"]
    urls = [u for u in (urls_mod.normalize(u) for u in urls) if u]
    if not urls:
        return None
    return {"src": f"{scheme}://{host}/robots.txt", "src_fp": 0, "depth": 0,
            "source": tables.SOURCE_SITEMAP_FILE, "redirects": 0, "dst": urls, "anchor": [""] * len(urls)}


def fetch_one_host(fetcher_factory, host, rows, state_row):
    """Fetch one host's rows; never raises: an internal error becomes transient results."""
    state = fetcher_mod.HostState.from_row(state_row, host)
    requests = [fetcher_mod.FetchRequest(url=r["url"], fp=r["fp"]) for r in rows]
    by_fp = {r["fp"]: r for r in rows}
    f = fetcher_factory()
    try:
        results, state = f.fetch_host(host, requests, state)
    except Exception as e:  # a bug or a hostile server must not lose the host's URLs
        now = time.time()
        reason = f"internal_error: {type(e).__name__}: {e}"[:500]
        results = [fetcher_mod.FetchResult(
            url=r["url"], fp=r["fp"], fetch_time=now, elapsed_ms=0.0,
            outcome=fetcher_mod.TRANSIENT, reason=reason) for r in rows]
        traceback.print_exc()
    finally:
        try:
            f.close()
        except Exception:
            pass
    faults.crash_point("fetch")
    pages = [_page(by_fp[res.fp], res) for res in results if res.fp in by_fp]
    done = {p["fp"] for p in pages}
    now = time.time()
    for r in rows:  # a fetcher that forgot a URL must not lose it either
        if r["fp"] not in done:
            pages.append(_page(r, fetcher_mod.FetchResult(
                url=r["url"], fp=r["fp"], fetch_time=now, elapsed_ms=0.0,
                outcome=fetcher_mod.TRANSIENT, reason="internal_error: no result")))
    new_row = state.to_row()
    return pages, new_row, sitemap_bundle(host, rows, state_row, new_row)


class _FetcherFactory:
    """Picklable factory so each thread builds its own HostFetcher (and session)."""

    def __init__(self, config):
        self.config = config

    def __call__(self):
        return fetcher_mod.HostFetcher(self.config)


class FetchHosts(beam.DoFn):
    """(host, {"urls": [table], "state": [row]}) -> page dicts; host rows on tag `hosts`,
    sitemaps to queue on tag `sitemaps`."""

    def __init__(self, config, threads=32, sitemaps=True):
        self.config = config
        self.threads = max(1, int(threads))
        self.sitemaps = sitemaps

    def setup(self):
        self._pool = cf.ThreadPoolExecutor(self.threads, thread_name_prefix="fetch")
        self._factory = _FetcherFactory(self.config)

    def start_bundle(self):
        self._pending = set()
        self._started = None

    def _emit(self, fut, windowed):
        pages, host_row, sitemaps = fut.result()
        wrap = (lambda v: WindowedValue(v, MIN_TIMESTAMP, [GlobalWindow()])) if windowed else (lambda v: v)
        for p in pages:
            yield wrap(p)
        yield beam.pvalue.TaggedOutput("hosts", wrap(host_row))
        if sitemaps and self.sitemaps:
            yield beam.pvalue.TaggedOutput("sitemaps", wrap(sitemaps))

    def process(self, element):
        host, joined = element
        rows = []
        for t in joined.get("urls", []):
            rows.extend(t.to_pylist())
        if not rows:
            return
        if self._started is None:
            self._started = time.perf_counter()
        states = list(joined.get("state", []))
        state_row = states[0] if states else None
        self._pending.add(self._pool.submit(fetch_one_host, self._factory, host, rows, state_row))
        # backpressure: keep at most 2x threads hosts in flight; emit whatever is done
        block = len(self._pending) >= 2 * self.threads
        done, self._pending = cf.wait(self._pending, timeout=None if block else 0,
                                      return_when=cf.FIRST_COMPLETED)
        for fut in done:
            yield from self._emit(fut, windowed=False)

    def finish_bundle(self):
        for fut in cf.as_completed(list(self._pending)):
            yield from self._emit(fut, windowed=True)
        self._pending = set()
        if self._started is not None:  # wall time this bundle spent fetching (for the time split)
            yield beam.pvalue.TaggedOutput("stats", WindowedValue(
                {"seconds_fetch": time.perf_counter() - self._started}, MIN_TIMESTAMP, [GlobalWindow()]))

    def teardown(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
