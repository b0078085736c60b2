"""The fetch half of a round as one composite: fetch list -> fetched and processed pages.

Input: a dict with `fetch_list` ((host, Arrow table of its URLs), one element per host)
and `hosts` (the hosts table as Arrow batches). Output: a dict of PCollections:
  visited     VISITED tables (final outcomes)        results   URL-seen RESULTS tables
  pages       PAGES tables                           links     candidates bundles (kept)
  filtered    filtered-link bundles                  hosts     the new HOSTS tables (all hosts)
  stats       counter dicts
"""
import apache_beam as beam
import numpy as np
import pyarrow as pa

from schemas import tables
from transforms import fetch, seen, write
from transforms.process import FilterBundles, ProcessPages, visited_table


def _host_rows(batch, selected):
    hosts = set(selected)
    for row in batch.to_pylist():
        if row["host"] in hosts:
            yield row["host"], row


def _other_hosts(batch, selected):
    hosts = set(selected)
    mask = np.array([h not in hosts for h in batch.column("host").to_pylist()], dtype=bool)
    return batch.filter(pa.array(mask))


def visited_stats(table):
    out = {"visited": table.num_rows}
    for outcome, count in zip(*np.unique(np.array(table.column("outcome").to_pylist(), dtype=str),
                                         return_counts=True)):
        out[f"outcome_{outcome}"] = int(count)
    for s in table.column("http_status").to_pylist():
        key = f"status_{s // 100}xx" if s else "status_none"
        out[key] = out.get(key, 0) + 1
    out["bytes"] = int(sum(b or 0 for b in table.column("bytes").to_pylist()))
    return out


def retry_stats(table):
    return {"retried": int((~table.column("final").to_numpy(zero_copy_only=False)).sum())}


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
        yield beam.pvalue.TaggedOutput("filtered", {
            "src": None, "url": [urls[i] for i in dropped], "reason": [reasons[i] for i in dropped]})


class FetchAndProcess(beam.PTransform):
    def __init__(self, fetch_config, threads, use_sitemaps, round_no, now, settings, url_filter):
        super().__init__()
        self.fetch_hosts = fetch.FetchHosts(fetch_config, threads, use_sitemaps)
        self.process_pages = ProcessPages(round_no, now, settings, url_filter)
        self.url_filter = url_filter

    def expand(self, inputs):
        fetch_list, hosts = inputs["fetch_list"], inputs["hosts"]
        fetch_list, out_of_scope, scope_filtered = (
            fetch_list | "CheckScope" >> beam.ParDo(CheckScope(self.url_filter))
            .with_outputs("results", "filtered", main="kept"))
        selected = beam.pvalue.AsList(fetch_list | "SelectedHosts" >> beam.Keys())
        host_state = hosts | "SelectedHostState" >> beam.FlatMap(_host_rows, selected)
        other_hosts = hosts | "UnselectedHosts" >> beam.Map(_other_hosts, selected)
        pages, fetched_hosts, sitemap_files, fetch_stats = (
            {"urls": fetch_list, "state": host_state}
            | "JoinHostState" >> beam.CoGroupByKey()
            | "Fetch" >> beam.ParDo(self.fetch_hosts).with_outputs("hosts", "sitemaps", "stats", main="pages"))
        processed = (pages | "Process" >> beam.ParDo(self.process_pages)
                     .with_outputs("results", "pages", "links", "filtered", "stats", main="visited"))
        sitemaps = sitemap_files | "FilterSitemaps" >> beam.ParDo(
            FilterBundles(self.url_filter)).with_outputs("filtered", main="kept")
        visited = (processed.visited
                   | "BatchVisited" >> beam.BatchElements(min_batch_size=1, max_batch_size=2000)
                   | "VisitedTables" >> beam.Map(visited_table))
        results = ((processed.results, out_of_scope) | "AllResults" >> beam.Flatten()
                   | "ResultTables" >> write.RowsToTables(seen.RESULTS))
        return {
            "visited": visited,
            "results": results,
            "pages": processed.pages | "PageTables" >> write.RowsToTables(tables.PAGES, 500),
            "links": (processed.links, sitemaps.kept) | "AllLinks" >> beam.Flatten(),
            "filtered": ((processed.filtered, sitemaps.filtered, scope_filtered)
                         | "AllFilteredLinks" >> beam.Flatten()),
            "hosts": ((fetched_hosts | "FetchedHostTables" >> write.RowsToTables(tables.HOSTS),
                       other_hosts) | "AllHosts" >> beam.Flatten()),
            "stats": ((visited | "VisitedStats" >> beam.Map(visited_stats),
                       results | "RetryStats" >> beam.Map(retry_stats), fetch_stats, processed.stats)
                      | "FetchStats" >> beam.Flatten()),
        }
