"""Fetch: the Beam side of fetching. One element per host; many hosts at once per worker.

`FetchHosts` receives one element per politeness unit (`PolitenessUnits`: the hosts that
share one server under --politeness_key, each with its URL rows and cached host state) and
hands it to a pool of threads that lives as long as the DoFn instance (opened in `setup`),
or, in rounds of `min_pages` URLs
or more with `--fetch_process`, to the same pool in child processes (fetchproc.py) that
stream the pages back: same outputs, other interpreter locks.
Each unit is fetched by one `HostFetcher` (hostfetcher.py, through hostjob.fetch_unit) with
its politeness delay, a unit of several hosts over one connection budget (unitfetch.py);
concurrency comes only from fetching many units at the same time.
A bundle's hosts are started when the bundle ends, longest host first, and each finished
host is emitted as soon as it is done, so one slow host never holds back the output of the
others.

While a bundle fetches, a progress line goes to stderr every `progress_seconds` (a bar on a
terminal; progress.py), and each page counts into Beam metrics (namespace `fetch`: pages,
bytes, errors, hosts, and the distribution of fetch milliseconds) for an engine's UI.
"""

import concurrent.futures as cf
import queue
import sys
import time

import apache_beam as beam
import pyarrow as pa

from schemas import tables
from transforms.fetch import render
from transforms.fetch.fetchproc import FetchFleet, fetch_processes
from transforms.fetch.gcpause import full_collections_deferred
from transforms.fetch.hostjob import fetch_pool, fetch_unit
from transforms.fetch.hoststate import host_rows, other_hosts
from transforms.fetch.politeness import HOST, UnitKeys
from transforms.fetch.progress import ERROR_OUTCOMES, FetchProgress, ProgressReporter
from transforms.procs import HELPERS_MIN_PAGES, resolved
from transforms.tableio.globalwindow import in_global_window
from transforms.tableio.sideinput import CombinedView, accumulate
from transforms.tableio.join import JoinTables
from transforms.tableio.coder import HostTable
from transforms.tableio.step import RowsToTables
from transforms.tableio.tablefiles import KeyedTablesToFiles, Stored, TableFiles, TableRef


class _HostDone:
    """Queued behind a host's last page: its `fetch_unit` result (or what it raised)."""

    def __init__(self, result):
        self.result = result


class FetchHosts(beam.DoFn):
    """(host, {"urls": [table], "state": [row]}) -> page dicts; host rows on tag `hosts`,
    sitemaps to queue on tag `sitemaps`.

    Pages stream: each page goes out as soon as its fetch ends (through a queue of at most
    `max_ready` pages the fetch threads fill and this DoFn drains; a full queue makes the
    fetch threads wait), so memory holds the pages in flight, not whole hosts' rounds."""

    def __init__(self, config, threads=32, sitemaps=True, progress_seconds=0.0, max_ready=256,
                 processes=0, min_pages=HELPERS_MIN_PAGES):
        self.config = config
        self.threads = max(1, int(threads))
        self.sitemaps = sitemaps
        self.progress_seconds = float(progress_seconds or 0)
        self.max_ready = max(1, int(max_ready))
        self.processes = int(processes)   # --fetch_process: the threads in child processes
        self.min_pages = int(min_pages)        # ... for rounds of at least this many URLs

    def setup(self):
        self._renderer = render.open_pool(self.config.render)   # --render: this worker's browser
        self._pool, self._factory = fetch_pool(self.config, self.threads, self._renderer)
        self._process = None
        self._processes = resolved(self.processes, lambda: fetch_processes("auto"))   # this worker's cores
        m = beam.metrics.Metrics
        self._pages, self._bytes = m.counter("fetch", "pages"), m.counter("fetch", "bytes")
        self._errors, self._hosts = m.counter("fetch", "errors"), m.counter("fetch", "hosts")
        self._ms = m.distribution("fetch", "fetch_ms")

    def start_bundle(self):
        self._jobs = []
        if getattr(self, "_tables", None) is not None:   # a failed bundle's
            self._tables.close()
        self._tables = TableFiles()   # the fetch list's table files, if it comes as TableRefs
        self._ready = queue.Queue(self.max_ready)
        self._abandoned = False
        self._started = None
        self._progress = self._reporter = None

    def _count(self, pages):
        self._pages.inc(len(pages))
        self._bytes.inc(sum(len(p["body"]) for p in pages if p.get("body")))
        self._errors.inc(sum(p.get("outcome") in ERROR_OUTCOMES for p in pages))
        for p in pages:
            if p.get("elapsed_ms") is not None:
                self._ms.update(int(p["elapsed_ms"]))

    def _put(self, item):
        """From a fetch thread: hand a page (or a finished host's `_HostDone`) over; wait
        while the queue is full."""
        while not self._abandoned:
            try:
                self._ready.put(item, timeout=0.5)
                return
            except queue.Full:
                continue   # a bundle that failed downstream (the round fails) stops draining

    def _fetch_unit(self, members):
        """In a fetch thread: one unit's fetch, then each host's result behind its last page."""
        try:
            results = fetch_unit(self._factory, members, self._progress, lambda _h, page: self._put(page))
        except BaseException as e:   # re-raised by the bundle (fetch_unit itself never raises)
            results = [e] * len(members)
        for result in results:
            self._put(_HostDone(result))

    def _emit(self, done):
        """A finished host's leftovers (pages the fetcher kept, if any), row and sitemaps."""
        if isinstance(done.result, BaseException):
            raise done.result
        pages, host_row, sitemaps = done.result
        self._hosts.inc()
        self._count(pages)
        for p in pages:
            yield in_global_window(p)
        yield beam.pvalue.TaggedOutput("hosts", in_global_window(host_row))
        if sitemaps and self.sitemaps:
            yield beam.pvalue.TaggedOutput("sitemaps", in_global_window(sitemaps))

    def _start_progress(self, planned):
        self._progress = FetchProgress()
        self._progress.planned = int(planned or 0)
        if self.progress_seconds > 0:
            tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
            self._reporter = ProgressReporter(self._progress, self.progress_seconds,
                                              sys.stderr, bar=tty).start()

    def _member(self, host, joined):
        """(host, rows, state row) of one host of a unit; None when it has no URL."""
        urls = [t for t in joined.get("urls", []) if len(t)]
        if not urls:
            return None
        # the rows stay a table (or in their table file: `Stored`) until the host is fetched
        # (hostjob.as_rows)
        if len(urls) > 1:
            rows = pa.concat_tables([self._tables.read(t) if isinstance(t, TableRef) else t for t in urls],
                                    promote_options="default")
        else:
            rows = Stored(urls[0], self._tables) if isinstance(urls[0], TableRef) else urls[0]
        states = list(joined.get("state", []))
        return host, rows, states[0] if states else None

    def process(self, element, planned=0):
        unit, hosts = element
        members = [m for m in (self._member(host, joined) for host, joined in hosts) if m is not None]
        if not members:
            return ()
        if self._started is None:
            self._started = time.perf_counter()
            self._start_progress(planned)
            if (self._process is None and self._processes > 0 and self._renderer is None
                    and (planned or 0) >= self.min_pages):   # (they start meanwhile)
                self._process = FetchFleet(self.config, self.threads, self._processes).start()
        self._jobs.append((unit, members))
        return ()

    def _expected_seconds(self, job):
        """A unit's fetch time as far as its politeness sets it (the longest first)."""
        members, slots = job[1], max(1, self.config.conns_per_host)
        seconds = 0.0
        for _host, rows, state_row in members:
            crawl_delay = (state_row or {}).get("crawl_delay") or 0.0
            gap = max(self.config.delay_per_host, crawl_delay)
            # one host: its slots (a Crawl-delay forces 1); a unit's hosts: one slot each
            seconds += len(rows) * (gap + 0.001) / (1 if crawl_delay or len(members) > 1 else slots)
        return seconds / min(slots, len(members))

    def finish_bundle(self):
        # no full garbage collection while the hosts' request chains run (gcpause)
        with full_collections_deferred():
            yield from self._fetch_bundle()

    def _fetch_bundle(self):
        # Longest host first: a round lasts as long as its longest host, which fetches one
        # request at a time; started last, it would run alone at the end of the round.
        self._jobs.sort(key=self._expected_seconds, reverse=True)
        if self._jobs and self._process is not None and self._process.ready():
            yield from self._fetch_in_child()
        else:
            yield from self._fetch_here()
        if self._reporter is not None:
            self._reporter.stop()
            self._reporter = None
        self._tables.close()
        if self._started is not None:  # wall time this bundle spent fetching (for the time split)
            yield beam.pvalue.TaggedOutput("stats", in_global_window(
                {"seconds_fetch": time.perf_counter() - self._started}))

    def _fetch_in_child(self):
        """The bundle's hosts fetched by the fetch processes (fetchproc.py), same outputs."""
        jobs, self._jobs = self._jobs, []
        progress = self._progress
        for message in self._process.fetch(jobs, self.max_ready):
            if message[0] == "page":
                page = message[2]
                progress.page(page)
                self._count([page])
                yield in_global_window(page)
            elif message[0] == "host":
                progress.host_started()
            else:
                progress.host_finished()
                yield from self._emit(_HostDone(message[2]))

    def _fetch_here(self):
        """The bundle's hosts fetched by this process's fetch threads."""
        for _unit, members in self._jobs:
            self._pool.submit(self._fetch_unit, members)
        hosts_left, self._jobs = sum(len(members) for _unit, members in self._jobs), []
        # One queue carries both, in the order they happen: each page as its fetch ends, and
        # each host's result once its last page is in (so nothing here polls).
        while hosts_left:
            item = self._ready.get()
            if isinstance(item, _HostDone):
                hosts_left -= 1
                yield from self._emit(item)
            else:
                self._count([item])
                yield in_global_window(item)

    def teardown(self):
        self._abandoned = True
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if getattr(self, "_process", None) is not None:
            self._process.close()
            self._process = None
        renderer = getattr(self, "_renderer", None)
        if renderer is not None:
            renderer.close()
        if getattr(self, "_tables", None) is not None:
            self._tables.close()

class KeyByUnit(beam.DoFn):
    """(host, joined) -> (unit, (host, joined)) (politeness.UnitKeys); the hosts whose address
    must be looked up first are looked up together when the bundle ends, `threads` at once,
    each within --deadline, and carry the answer in their state row."""

    def __init__(self, config, threads):
        self.config, self.threads = config, max(1, int(threads))

    def setup(self):
        self._units = UnitKeys(self.config).setup()

    def start_bundle(self):
        self._todo = []

    def process(self, element):
        host, joined = element
        row = (list(joined.get("state", [])) or [None])[0]
        if self._units.needs_lookup(host, row):
            self._todo.append((host, joined, row))
        else:
            yield self._units.key(host, row), element

    def finish_bundle(self):
        todo, self._todo = self._todo, []
        if todo:
            with cf.ThreadPoolExecutor(min(self.threads, len(todo)), thread_name_prefix="dns") as pool:
                rows = list(pool.map(lambda t: self._units.looked_up(t[0], t[2]), todo))
            for (host, joined, _), row in zip(todo, rows):
                yield in_global_window((self._units.key(host, row), (host, dict(joined, state=[row]))))


class PolitenessUnits(beam.PTransform):
    """(host, joined) -> (unit, [(host, joined), ...] by host name): one element per
    politeness unit (a host alone under --politeness_key host: no shuffle)."""

    def __init__(self, config, threads):
        super().__init__()
        self.config, self.threads = config, threads

    def expand(self, hosts):
        if self.config.politeness_key == HOST:
            return hosts | "OneHostUnits" >> beam.Map(lambda kv: (kv[0], [kv]))
        return (hosts | "KeyByUnit" >> beam.ParDo(KeyByUnit(self.config, self.threads))
                | "GroupByUnit" >> beam.GroupByKey()
                | "UnitHosts" >> beam.MapTuple(lambda unit, hosts: (unit, sorted(hosts, key=lambda h: h[0]))))


class CheckScope(beam.DoFn):
    """Fetch-list rows that the round's URL filter rejects (the scope flags changed since the
    URL was queued) are not fetched: they leave the frontier and are recorded as filtered."""

    def __init__(self, url_filter):
        self.url_filter = url_filter

    def process(self, element):
        host, table = element
        urls = table.column("url").to_pylist()
        reasons = self.url_filter.reasons(urls, table.column("depth").fill_null(0).to_pylist())
        # sitemap documents are judged by scope only, as when they were queued
        reasons = [None if r == "extension" and src == tables.SOURCE_SITEMAP_FILE else r
                   for r, src in zip(reasons, table.column("source").to_pylist())]
        if all(r is None for r in reasons):
            yield element
            return
        keep = pa.array([r is None for r in reasons])
        if any(r is None for r in reasons):
            yield host, table.filter(keep)
        fps = table.column("fp").to_pylist()
        dropped = [i for i, r in enumerate(reasons) if r is not None]
        for i in dropped:
            yield beam.pvalue.TaggedOutput("results", {"fp": fps[i], "final": True, "dropped": True})
        depths = table.column("depth").fill_null(0).to_pylist()
        sources = table.column("source").to_pylist()
        yield beam.pvalue.TaggedOutput("filtered", {
            "src": None, "url": [urls[i] for i in dropped], "reason": [reasons[i] for i in dropped],
            "depth": [depths[i] for i in dropped], "source": [sources[i] for i in dropped]})


class Fetch(beam.PTransform):
    """The fetch step of a round: fetch list + hosts table -> fetched pages and host state.

    Input: a dict with `fetch_list` ((host, Arrow table of its URLs), one element per host)
    and `hosts` (the HOSTS table as Arrow batches); with `list_files` (directory, bytes a file)
    the tables wait for their host's fetch in table files (`tableio.tablefiles`), not in the
    runner's memory. Output: a dict of PCollections:
      pages     one dict per fetched URL (its frontier columns and the fetch result)
      hosts     the new HOSTS tables: the fetched hosts' rows, and with `other_hosts` the other
                hosts' rows as they were (the whole table; without: a delta of it)
      sitemaps  candidates bundles of sitemaps robots.txt lists for the first time
      results   URL-seen results of fetch-list URLs the current scope rejects (not fetched)
      filtered  their filtered bundles
      stats     counter dicts (fetch seconds)
      planned   the fetch list's URL count, as `sideinput.accumulate(..., sum)` gives it (read it
                with `CombinedView(planned, sum)`)
    """

    def __init__(self, fetch_config, threads, use_sitemaps, url_filter, progress_seconds=0.0,
                 max_ready=256, processes=0, list_files=None, other_hosts=True):
        super().__init__()
        self.fetch_hosts = FetchHosts(fetch_config, threads, use_sitemaps, progress_seconds, max_ready,
                                      processes)
        self.url_filter = url_filter
        self.list_files = list_files   # (directory, bytes a file): the fetch list in table files
        self.other_hosts = other_hosts

    def expand(self, inputs):
        fetch_list, hosts = inputs["fetch_list"], inputs["hosts"]
        # URLs the scope rejects now (flags changed since they were queued) are not fetched
        fetch_list, out_of_scope, scope_filtered = (
            fetch_list | "CheckScope" >> beam.ParDo(CheckScope(self.url_filter))
            .with_output_types(HostTable).with_outputs("results", "filtered", main="kept"))
        # each fetched host meets its cached state (robots rules, delay, errors)
        selected = beam.pvalue.AsList(fetch_list | "SelectedHosts" >> beam.Keys())
        host_state = hosts | "SelectedHostState" >> beam.FlatMap(host_rows, selected)
        # the progress line's "planned": the whole fetch list's URLs
        planned_urls = accumulate(fetch_list | "PlannedUrls" >> beam.Map(lambda kv: kv[1].num_rows),
                                  "CountPlanned", sum)
        planned = CombinedView(planned_urls, sum)
        if self.list_files is not None:   # only refs to the hosts' tables wait for the fetch
            urls, table_tags = fetch_list | "FetchListToFiles" >> KeyedTablesToFiles(*self.list_files), []
        else:
            urls, table_tags = fetch_list, ["urls"]
        pages, fetched_hosts, sitemap_files, fetch_stats = (
            {"urls": urls, "state": host_state}
            | "JoinHostState" >> JoinTables(table_tags=table_tags)
            # the hosts of one server (--politeness_key) as one element: one process() owns it
            | "PolitenessUnits" >> PolitenessUnits(self.fetch_hosts.config, self.fetch_hosts.threads)
            | "Fetch" >> beam.ParDo(self.fetch_hosts, planned=planned)
            .with_outputs("hosts", "sitemaps", "stats", main="pages"))
        new_hosts = fetched_hosts | "FetchedHostTables" >> RowsToTables(tables.HOSTS)
        if self.other_hosts:   # the whole table: the hosts not fetched, as they were
            unselected = (hosts | "UnselectedHosts" >> beam.Map(other_hosts, selected)
                          .with_output_types(pa.Table))
            new_hosts = (new_hosts, unselected) | "AllHosts" >> beam.Flatten()
        return {
            "pages": pages,
            "hosts": new_hosts,
            "sitemaps": sitemap_files,
            "results": out_of_scope,
            "filtered": scope_filtered,
            "stats": fetch_stats,
            "planned": planned_urls,
        }
