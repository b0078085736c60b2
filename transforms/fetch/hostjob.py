"""One host's fetch as the round runs it: never raises, never loses a URL (pure)."""

import collections.abc
import concurrent.futures as cf
import time
import traceback

from schemas import tables
from transforms import faults
from transforms.fetch import hostfetcher as fetcher_mod
from transforms.fetch import unitfetch
from transforms.fetch.hostrows import HostRows
from transforms.urls import canonical as urls_mod

# Frontier columns a fetched page carries forward into its visited row and its links.
CARRIED = tables.FETCH_CARRIED
# ... and the columns a fetch reads from its row (a revisit's validators)
FETCH_COLUMNS = CARRIED + ("etag", "last_modified")

RESULT_FIELDS = ("fetch_time", "elapsed_ms", "outcome", "reason", "http_status", "content_type",
                 "content_type_header", "body", "truncated", "redirect_to", "etag",
                 "last_modified", "retry_after", "x_robots_tag", "http", "rendered", "render_links")


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


def _release(result):
    """Drop a handed-off result's heavy fields (its page owns them now)."""
    result.body, result.http = b"", None


def as_rows(rows):
    """A host's fetch-list rows as `HostRows` of the columns a fetch uses (FETCH_COLUMNS);
    rows already in Python (dicts, or HostRows) as they are. A job carries them as the
    Arrow table they came in (~0.3 KB a row) until its host is fetched: as dicts of every
    frontier column (~1.5 KB a row, anchors and history lists included) a round's whole
    fetch list was held in the round's process and again in the fetch process. Rows still
    in their table file (`tableio.tablefiles.Stored`) are read from it now."""
    if hasattr(rows, "load"):
        rows = rows.load()
    if not hasattr(rows, "to_pylist"):
        return rows
    return HostRows.from_table(rows, FETCH_COLUMNS)


def _request(row) -> "fetcher_mod.FetchRequest":
    # a revisit (incremental mode) carries the validators of its last visit: 304 if unchanged
    # a deep-web POST submission carries its method and body (transforms/fetch/post.py)
    return fetcher_mod.FetchRequest(url=row["url"], fp=row["fp"], etag=row.get("etag"),
                                    last_modified=row.get("last_modified"), method=row.get("method"),
                                    body=row.get("request_body"))


class RowRequests(collections.abc.Sequence):
    """A host's rows as its fetch requests, each made when the fetcher reaches it (a slice is
    a view). Made all at once they stayed to the end of the host's fetch, ~0.17 KB each: a
    15 000-URL host's ~2.6 MB in a fetch process."""

    def __init__(self, rows, start=0, stop=None):
        self.rows, self.start = rows, start
        self.stop = len(rows) if stop is None else stop

    def __len__(self):
        return max(0, self.stop - self.start)

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            lo, hi, step = i.indices(n)
            if step != 1:
                return [self[j] for j in range(lo, hi, step)]
            return RowRequests(self.rows, self.start + lo, self.start + max(lo, hi))
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return _request(self.rows[self.start + i])


def _fps(rows) -> list:
    return rows.column("fp") if isinstance(rows, HostRows) else [r["fp"] for r in rows]


def fetch_one_host(fetcher_factory, host, rows, state_row, progress=None, on_page=None):
    """Fetch one host's rows; never raises: an internal error becomes transient results.
    `progress`: a progress.FetchProgress told of the host and of each result.

    `on_page(page)`: streaming. Each page is handed over as soon as its fetch ends (from
    the fetching thread) and the host keeps no body, so memory holds the pages in flight,
    not the host's whole round; the returned pages are then only those not handed over
    (none, unless the fetcher failed). Without it, every page is returned at the end."""
    send = (lambda _host, page: on_page(page)) if on_page is not None else None
    return fetch_unit(fetcher_factory, [(host, rows, state_row)], progress, send)[0]


class _Member:
    """One host of a unit as the job holds it: its rows, its state, the pages handed over."""

    def __init__(self, host, rows, state_row, progress, on_page):
        self.host, self.rows, self.state_row = host, as_rows(rows), state_row
        self.state = fetcher_mod.HostState.from_row(state_row, host)
        self.at = {fp: i for i, fp in enumerate(_fps(self.rows))}   # a row's dict only for its page
        self.handed = set()
        self.progress, self.on_page = progress, on_page

    def observe(self, res):   # True: the page is handed over, the fetcher need not keep `res`
        if self.progress is not None:
            self.progress.page(res)
        if self.on_page is not None and res.fp in self.at and res.fp not in self.handed:
            self.handed.add(res.fp)
            self.on_page(self.host, _page(self.rows[self.at[res.fp]], res))
            _release(res)
            return True
        return False

    def failed(self, e):
        """Every result not handed over, transient: the fetch raised `e`."""
        now = time.time()
        reason = f"internal_error: {type(e).__name__}: {e}"[:500]
        return [fetcher_mod.FetchResult(url=r["url"], fp=r["fp"], fetch_time=now, elapsed_ms=0.0,
                                        outcome=fetcher_mod.TRANSIENT, reason=reason)
                for r in self.rows if r["fp"] not in self.handed]

    def outcome(self, results, state):
        """(pages, host row, sitemaps) of the host's results."""
        rows, at, handed = self.rows, self.at, self.handed
        pages = [_page(rows[at[res.fp]], res) for res in results if res.fp in at and res.fp not in handed]
        done = {p["fp"] for p in pages} | handed
        # a fetcher that forgot a URL must not lose it either
        pages += transient_pages([r for r in rows if r["fp"] not in done], "internal_error: no result")
        new_row = state.to_row()
        return pages, new_row, sitemap_bundle(self.host, rows, self.state_row, new_row)


def fetch_unit(fetcher_factory, members, progress=None, on_page=None):
    """Fetch the hosts of one politeness unit, `members` [(host, rows, state_row)], as
    `fetch_one_host` fetches one (a unit of one host is exactly that); a unit of several
    shares one delay and one connection budget (`unitfetch.fetch_unit`). `on_page(host,
    page)`: streaming. Returns [(pages, host row, sitemaps)] in the members' order; never
    raises."""
    ms = [_Member(h, rows, st, progress, on_page) for h, rows, st in members]
    watch = progress is not None or on_page is not None
    if progress is not None:
        for _ in ms:
            progress.host_started()
    f = fetcher_factory()
    try:
        if len(ms) == 1:
            m = ms[0]
            fetched = [f.fetch_host(m.host, RowRequests(m.rows), m.state, m.observe if watch else None)]
        else:
            fetched = unitfetch.fetch_unit(f, [(m.host, RowRequests(m.rows), m.state) for m in ms],
                                           [m.observe if watch else None for m in ms])
    except Exception as e:  # a bug or a hostile server must not lose the hosts' URLs
        fetched = [(m.failed(e), m.state) for m in ms]
        traceback.print_exc()
    finally:
        if progress is not None:
            for _ in ms:
                progress.host_finished()
        try:
            f.close()
        except Exception:
            pass
    faults.crash_point("fetch")
    return [m.outcome(results, state) for m, (results, state) in zip(ms, fetched)]


def transient_pages(rows, reason):
    """Pages of rows that got no fetch result: transient (retried next round), `reason` why."""
    now = time.time()
    return [_page(r, fetcher_mod.FetchResult(url=r["url"], fp=r["fp"], fetch_time=now, elapsed_ms=0.0,
                                             outcome=fetcher_mod.TRANSIENT, reason=reason[:500]))
            for r in rows]


def host_row_unchanged(host, state_row):
    """The host row of a host whose fetch did not happen (as `fetch_one_host` writes it)."""
    return fetcher_mod.HostState.from_row(state_row, host).to_row()


def fetch_pool(config, threads, renderer=None):
    """(pool, FetcherFactory) for a worker's concurrent host fetches: `threads` threads, a
    host on each (with --render the browser calls the fetcher from its own threads too)."""
    return (cf.ThreadPoolExecutor(threads, thread_name_prefix="fetch"),
            FetcherFactory(config, renderer))


class FetcherFactory:
    """Picklable factory so each thread builds its own HostFetcher (and connections); the
    fetchers share one resolver (thread-safe): each fetcher built its own from
    --resolve/--resolve_file, two dicts of every mapped host per fetched host."""

    def __init__(self, config, renderer=None):
        self.config = config
        self.renderer = renderer          # the worker's render.BrowserPool, or None
        self.resolver = config.resolver()

    def __getstate__(self):
        return {"config": self.config, "renderer": self.renderer}

    def __setstate__(self, state):
        self.__init__(state["config"], state["renderer"])

    def __call__(self):
        return fetcher_mod.HostFetcher(self.config, renderer=self.renderer, resolver=self.resolver)
