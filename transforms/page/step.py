"""Page as a Beam step: `ProcessPages` runs `fate.page_fate` on every fetched page.

Outputs, per page, one element on each that applies:
  visited     the visited row (final outcomes only)   (main)
  results     what URL-seen needs to move the URL out of the frontier or back into it
  pages       the stored body
  archive     the capture for the WARC (PageConfig.archive)
  links       one element per page with its kept links as arrays
  filtered    (src, url[], reason[]) of links the filter dropped
  deepweb     forms and form-result digests (PageConfig.deep_web; transforms.deepweb)
  stats       seconds spent, per bundle
`FilterBundles` applies the URL filter to bundles found elsewhere (sitemaps of robots.txt).
"""
import time

import apache_beam as beam
import pyarrow as pa

from schemas import tables
from strategies.topic import DOCS_BUCKET
from transforms.page.boilerplate import (
    BLOCK_FPS,
    BLOCKS_FOR_MINHASH,
    BlockCounts,
    page_block_fps,
    sign_text,
)
from transforms.page.fate import filter_bundle, page_fate
from transforms.page.focus import TOPIC_TERMS
from transforms.page.pool import FatePool, SignPool, auto_processes
from transforms.page.visited import (
    TEXT_FOR_MINHASH,
    build_table,
    docfreq_table,
    retry_stats,
    take_texts,
    visited_stats,
    visited_table,
)
from transforms.procs import HELPERS_MIN_PAGES, resolved
from transforms.tableio.globalwindow import in_global_window
from transforms.tableio.sideinput import CombinedView
from transforms.tableio.step import ReadSpilled, RowsToTables


class FilterBundles(beam.DoFn):
    """Candidates bundles -> kept bundles (main) and filtered bundles (tag `filtered`)."""

    def __init__(self, url_filter):
        self.url_filter = url_filter

    def process(self, bundle):
        kept, filtered = filter_bundle(bundle, self.url_filter)
        if kept:
            yield kept
        if filtered:
            yield beam.pvalue.TaggedOutput("filtered", filtered)


def _page_blocks(row):
    if BLOCKS_FOR_MINHASH in row:
        yield row["host"], page_block_fps(row[BLOCKS_FOR_MINHASH], row.get(BLOCK_FPS))


class _HostTemplate(beam.CombineFn):
    """A host's pages' block fingerprints -> its template blocks (`boilerplate.BlockCounts`)."""

    def create_accumulator(self):
        return BlockCounts()

    def add_input(self, acc, fps):
        return acc.add_page(fps)

    def merge_accumulators(self, accs):
        accs = list(accs)
        for other in accs[1:]:
            accs[0].merge(other)
        return accs[0]

    def extract_output(self, acc):
        return acc.template()


class _CountDocs(beam.CombineFn):
    """Pages' term-id sets -> {term: pages containing it, DOCS_BUCKET: pages} (docfreq)."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, terms):
        acc[DOCS_BUCKET] = acc.get(DOCS_BUCKET, 0) + 1
        for t in terms.tolist():
            acc[t] = acc.get(t, 0) + 1
        return acc

    def merge_accumulators(self, accs):
        out = {}
        for acc in accs:
            for k, v in acc.items():
                out[k] = out.get(k, 0) + v
        return out

    def extract_output(self, acc):
        return acc


def _fate_outputs(fate, wrap=lambda v: v):
    yield beam.pvalue.TaggedOutput("results", wrap(fate.result))
    if fate.stored is not None:
        yield beam.pvalue.TaggedOutput("pages", wrap(fate.stored))
    if fate.archived is not None:
        yield beam.pvalue.TaggedOutput("archive", wrap(fate.archived))
    if fate.visited is not None:
        yield wrap(fate.visited)
    for kept in fate.links:
        yield beam.pvalue.TaggedOutput("links", wrap(kept))
    for filtered in fate.filtered:
        yield beam.pvalue.TaggedOutput("filtered", wrap(filtered))
    if fate.deepweb is not None:
        yield beam.pvalue.TaggedOutput("deepweb", wrap(fate.deepweb))


class PageFates(beam.DoFn):
    """Fetched pages -> their fate on the outputs above (config: a `fate.PageConfig`).

    With `processes` > 0, a bundle's pages are handed to a `pool.FatePool` of that many
    worker processes (`--page_processes`), so the parse runs on other cores than the fetch
    threads; the outputs are the same either way. The pool starts with the first page when
    the round plans `min_pages` pages or more (side input `planned`, the fetch list's URLs),
    else once the bundle has passed `min_pages` pages: a small round pays no process start.
    (Counting only the pages seen, a big round parsed its first 256 pages here while the
    fetch processes' pages queued behind them: the first page reached the pool 0.64 s after
    the first came out of the fetch, in a 16 000-page bench50k round.) With `pickled_links`
    (the links go to spill files) a worker's link bundles come `Pickled`, as a spill file
    holds them: this process then neither unpickles nor pickles them again.
    """

    def __init__(self, config, processes=0, min_pages=HELPERS_MIN_PAGES, inflight_pages=64, pickled_links=False):
        self.config, self.processes, self.min_pages = config, int(processes), min_pages
        self.inflight_pages = int(inflight_pages)   # pages handed to the workers, not yet back
        self.pickled_links = pickled_links   # links go to spill files: the workers pickle them

    def setup(self):
        self._pool = None
        self._processes = resolved(self.processes, auto_processes)   # this worker's cores

    def start_bundle(self):
        self._seconds, self._seen = 0.0, 0

    def finish_bundle(self):
        if self._pool is not None:
            for fates, seconds in self._pool.drain():
                self._seconds += seconds
                for fate in fates:
                    yield from _fate_outputs(fate, in_global_window)
        if self._seconds:
            yield beam.pvalue.TaggedOutput("stats", in_global_window({"seconds_parse": self._seconds}))

    def process(self, page, planned=0):
        self._seen += 1
        if self._pool is None and self._processes > 0 and max(planned or 0, self._seen - 1) >= self.min_pages:
            self._pool = FatePool(self.config, self._processes, inflight_pages=self.inflight_pages,
                                  pickled_links=self.pickled_links)
        if self._pool is not None:
            for fates, seconds in self._pool.submit(page):
                self._seconds += seconds
                for fate in fates:
                    yield from _fate_outputs(fate)
            return
        started = time.perf_counter()
        fate = page_fate(page, self.config)
        self._seconds += time.perf_counter() - started
        yield from _fate_outputs(fate)

    def teardown(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.close()
            self._pool = None


VISITED_BATCH = 2 * SignPool.MIN_TEXTS   # rows at least (the last of a bundle may be fewer)


class VisitedTables(beam.DoFn):
    """Batches of visited rows -> VISITED tables (`visited_table`); with `processes` > 0 the
    MinHash signing of a bundle's big batches is shared with a helper process (`SignPool`,
    started by the first big batch), which ends with the bundle: the stages after it keep no
    extra process. A batch's table goes out when the next batch comes (or at the bundle's
    end): the helper signs its share of one batch while this process reads and prepares the
    next: the stage of a 5 000-page bench50k round took 0.481 / 0.382 / 0.462 s against
    0.581 / 0.631 / 0.490 s with each batch's half signed while this process waited."""

    def __init__(self, processes=0):
        self.processes = int(processes)

    def setup(self):
        self._processes = resolved(self.processes, auto_processes)   # this worker's cores

    def start_bundle(self):
        self._signer, self._pending = None, None

    def process(self, rows):
        if self._signer is None and self._processes > 0 and len(rows) >= SignPool.MIN_TEXTS:
            self._signer = SignPool().start()   # (a small round starts none)
        if self._signer is None:
            yield visited_table(rows)
            return
        idx, texts = take_texts(rows)
        pending, self._pending = self._pending, (rows, idx, self._signer.begin(texts))
        if pending is not None:
            yield self._table(*pending)

    def _table(self, rows, idx, signing):
        return build_table(rows, idx, self._signer.end(signing))

    def finish_bundle(self):
        pending, self._pending = self._pending, None
        if pending is not None:
            yield in_global_window(self._table(*pending))
        self._close()

    def teardown(self):
        self._close()

    def _close(self):
        signer, self._signer = getattr(self, "_signer", None), None
        if signer is not None:
            signer.close()


class ProcessPages(beam.PTransform):
    """The page step of a round: fetched pages (and other candidates bundles to filter, such
    as the sitemaps robots.txt lists) -> visited, results, pages, links, filtered, stats.

    Input: a dict with `pages` (fetch dicts), `bundles` (candidates bundles to filter),
    `results` (result dicts decided before fetching, e.g. out of scope) and optionally
    `planned` (the fetch list's URL count, as `Fetch` gives it). Output: VISITED,
    RESULTS and PAGES tables, kept links bundles, filtered bundles, counter dicts; with
    `to_files`, `visited_files`: paths of spill files holding the VISITED tables (else None).
    """

    def __init__(self, config, processes=0, to_files=None, inflight_pages=64):
        super().__init__()
        self.config, self.processes, self.inflight_pages = config, processes, inflight_pages
        # to_files(name): a PTransform elements -> spill file paths under `name` (--memory_mb).
        # `links` are then those paths, spilled before the flatten (which the in-process runner
        # holds); visited rows wait for their host's template in spill files, not in memory.
        self.to_files = to_files

    def expand(self, inputs):
        # the fetch list's URL count, if given: a big round's page workers start at once
        planned = {} if "planned" not in inputs else {"planned": CombinedView(inputs["planned"], sum)}
        processed = (inputs["pages"] | "Process" >> beam.ParDo(
                         PageFates(self.config, self.processes, inflight_pages=self.inflight_pages,
                                   pickled_links=self.to_files is not None),
                         **planned)
                     .with_outputs("results", "pages", "links", "filtered", "stats", "archive",
                                 "deepweb", main="visited"))
        bundles = inputs["bundles"] | "FilterBundles" >> beam.ParDo(
            FilterBundles(self.config.url_filter)).with_outputs("filtered", main="kept")
        # per host: the blocks that repeat on its pages this round (its template) ...
        template = (processed.visited
                    | "PageBlocks" >> beam.FlatMap(_page_blocks)
                    | "HostTemplate" >> beam.CombinePerKey(_HostTemplate())
                    | "HostsWithTemplate" >> beam.Filter(lambda kv: bool(kv[1])))
        # ... are dropped from the text MinHash signs; one VISITED table per batch (signed together)
        rows = processed.visited
        if self.to_files is not None:   # a row (its text blocks) is ~20 KB: on disk meanwhile
            rows = (rows | "VisitedToFiles" >> self.to_files("visited")
                    | "ReadSpilledVisited" >> ReadSpilled())
        visited = (rows
                   | "DropHostTemplate" >> beam.Map(
                       lambda r, t: sign_text(r, t.get(r["host"]), TEXT_FOR_MINHASH),
                       beam.pvalue.AsDict(template))
                   # batches big enough for the MinHash helper: Beam's adaptive batching
                   # kept them at ~180 rows here, under SignPool.MIN_TEXTS, so it signed alone
                   | "BatchVisited" >> beam.BatchElements(min_batch_size=VISITED_BATCH, max_batch_size=2000)
                   | "VisitedTables" >> beam.ParDo(VisitedTables(self.processes)).with_output_types(pa.Table))
        docfreq = None
        if self.config.focus is not None:   # vertical crawling: the round's DF delta
            docfreq = (processed.visited
                       | "TopicTerms" >> beam.FlatMap(
                           lambda r: [r[TOPIC_TERMS]] if TOPIC_TERMS in r else [])
                       | "CountDocs" >> beam.CombineGlobally(_CountDocs()).without_defaults()
                       | "DocFreqTable" >> beam.Map(docfreq_table))
        results = ((processed.results, inputs["results"]) | "AllResults" >> beam.Flatten()
                   | "ResultTables" >> RowsToTables(tables.RESULTS))
        return {
            "visited": visited,
            # the same tables in spill files, for consumers in later stages (content-seen reads
            # them twice): none of the round's VISITED tables then waits in the runner's memory
            "visited_files": (None if self.to_files is None
                              else visited | "VisitedTablesToFiles" >> self.to_files("visited_tables")),
            "results": results,
            "pages": processed.pages | "PageTables" >> RowsToTables(tables.PAGES, 500),
            "archive": processed.archive,
            "deepweb": processed.deepweb,
            "links": self._links(processed.links, bundles.kept),
            "filtered": (processed.filtered, bundles.filtered) | "AllFilteredLinks" >> beam.Flatten(),
            "stats": ((visited | "VisitedStats" >> beam.Map(visited_stats),
                       results | "RetryStats" >> beam.Map(retry_stats), processed.stats)
                      | "PageStats" >> beam.Flatten()),
            "docfreq": docfreq,
        }

    def _links(self, *parts):
        if self.to_files is not None:
            parts = tuple(part | f"LinksToFiles{i}" >> self.to_files("links") for i, part in enumerate(parts))
        return parts | "AllLinks" >> beam.Flatten()
