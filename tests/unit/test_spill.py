"""Spill files (transforms.tableio.spill, tableio.step.Spill) and streamed fetch pages."""
import threading

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipelines.linkbatches import MIN_PART_ROWS, LinkBatches, link_batch_size
from pipelines.roundpipeline import LINKS_PER_PAGE, budget_sizes, url_seen_buckets
from transforms.fetch import hostfetcher as fetcher_mod
from transforms.fetch.hostjob import fetch_one_host
from transforms.tableio import spill
from transforms.tableio.step import Spill


def _write(path, elements):
    w = spill.SpillWriter(path)
    for e in elements:
        w.add(e)
    return w.close()


def test_spill_file_round_trip_and_discard(tmp_path):
    round_dir = tmp_path / "rounds" / "000001"
    path = str(round_dir / spill.DIRNAME / "links" / "a.spill")
    elements = [{"src": "http://a/", "dst": ["http://a/%d" % i for i in range(50)]}, b"x" * 1000, None, 7]
    assert _write(path, elements) > 0
    assert list(spill.read_spill(path)) == elements
    assert spill.discard(str(round_dir)) is True
    assert not (round_dir / spill.DIRNAME).exists()
    assert spill.discard(str(round_dir)) is False


def test_an_element_pickled_where_it_was_made_is_written_as_it_is(tmp_path):
    """A `Pickled` element (a page worker's link bundle) goes into the file as its bytes: the
    file is the one its unpickled element makes, and reads back as that element; plain bytes
    stay an element of their own."""
    from transforms.tableio.pickled import Pickled, encode
    bundle = {"src": "http://a/", "dst": ["http://a/%d" % i for i in range(50)], "anchor": ["x"] * 50}
    plain, pre = str(tmp_path / "plain.spill"), str(tmp_path / "pre.spill")
    assert _write(plain, [bundle, b"raw"]) == _write(pre, [Pickled(encode(bundle)), b"raw"])
    assert list(spill.read_spill(pre)) == [bundle, b"raw"]


def test_damaged_spill_file_names_the_file(tmp_path):
    path = tmp_path / "bad.spill"
    path.write_bytes(spill.MAGIC + b"\x05\x00\x00\x00\x00\x00\x00\x00garbage")
    with pytest.raises(spill.SpillReadError, match="bad.spill"):
        list(spill.read_spill(str(path)))


def test_spill_file_cut_short_reads_as_damaged_never_as_fewer_elements(tmp_path):
    path = tmp_path / "whole.spill"
    elements = [{"i": i, "url": "http://h.test/%d" % i, "blob": bytes(range(256)) * (i % 5)}
                for i in range(400)]
    _write(str(path), elements)
    data = path.read_bytes()
    cut = tmp_path / "cut.spill"
    for n in sorted({0, 3, len(spill.MAGIC), len(spill.MAGIC) + 1, len(data) // 3, len(data) // 2,
                     len(data) - 9, len(data) - 1}):
        cut.write_bytes(data[:n])
        with pytest.raises(spill.SpillReadError, match="cut.spill"):
            list(spill.read_spill(str(cut)))


def test_aborted_writer_leaves_a_file_that_reads_as_damaged(tmp_path):
    w = spill.SpillWriter(str(tmp_path / "open.spill"))
    for i in range(100):
        w.add({"i": i})
    w.abort()
    with pytest.raises(spill.SpillReadError, match="open.spill"):
        list(spill.read_spill(str(tmp_path / "open.spill")))


def test_spill_files_stream_both_ways(tmp_path):
    """Neither end holds a file's worth of elements: 32 MB through one file, with well under
    that of Python memory at the peak of writing and of reading."""
    import os
    import tracemalloc
    path, n, size = str(tmp_path / "big.spill"), 512, 64 * 1024
    tracemalloc.start()
    try:
        w = spill.SpillWriter(path)
        for _ in range(n):
            w.add(os.urandom(size))
        assert w.close() >= n * size
        write_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        count = sum(len(e) == size for e in spill.read_spill(path))
        read_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == n
    assert write_peak < 4 * 1024 * 1024 and read_peak < 4 * 1024 * 1024, (write_peak, read_peak)


def test_spill_transform_keeps_every_element_in_small_files(tmp_path):
    elements = [{"i": i, "links": ["http://h/%d/%d" % (i, j) for j in range(20)]} for i in range(300)]
    with TestPipeline() as p:
        out = (p | beam.Create(elements, reshuffle=False)
               | Spill(str(tmp_path / spill.DIRNAME / "links"), chunk_bytes=2000))
        assert_that(out, equal_to(elements))
    files = list((tmp_path / spill.DIRNAME / "links").glob("*.spill"))
    assert len(files) > 10   # ~2 KB each: many files, not one holding everything


def test_budget_sizes_follow_the_flag_not_the_round():
    small, default = budget_sizes(64), budget_sizes(1024)
    assert small["spill_bytes"] < default["spill_bytes"]
    assert small["ready_pages"] < default["ready_pages"]
    assert small["bucket_rows"] < default["bucket_rows"]
    assert small["link_batch"] <= default["link_batch"]


@pytest.mark.parametrize("memory_mb", [64, 128, 256, 1024, 4096])
@pytest.mark.parametrize("pages", [100, 5_000, 16_000, 50_000])
def test_url_seen_parts_stay_few_whatever_the_budget(memory_mb, pages):
    """URL-seen's shuffle carries one part per (link batch, bucket): a smaller budget means
    more buckets, and its batches must grow with them, or the parts explode (169 x 70 once)."""
    sizes = budget_sizes(memory_mb)
    rows = {"frontier": 3 * pages, "visited": 5 * pages, "filtered": pages}
    buckets = url_seen_buckets(rows, pages, sizes["bucket_rows"])
    batch = link_batch_size(sizes["link_batch"], buckets)
    assert batch >= sizes["link_batch"]
    links = pages * LINKS_PER_PAGE
    batches = -(-links // batch)
    assert batches * buckets <= links / MIN_PART_ROWS + buckets, (buckets, batch)


def test_link_batches_are_cut_by_links_not_bundles():
    """An index page's bundle holds thousands of links: a batch of N bundles is no bound on
    memory, a batch of N links is (a bundle bigger than N alone)."""
    sizes = [3, 0, 40, 2500, 7, 7, 900, 60, 1, 30_000, 5, 400, 400, 400]
    bundles = [{"src": f"http://a/{i}", "dst": [f"http://a/{i}/{j}" for j in range(n)]}
               for i, n in enumerate(sizes)]

    def check(batches):
        assert sorted(b["src"] for batch in batches for b in batch) == sorted(b["src"] for b in bundles)
        for batch in batches:
            links = sum(len(b["dst"]) for b in batch)
            assert links <= 1000 or len(batch) == 1, [len(b["dst"]) for b in batch]

    with TestPipeline() as p:
        out = p | beam.Create(bundles, reshuffle=False) | LinkBatches(1000)
        assert_that(out, check)


class _FakeFetcher:
    """Fetches each URL, checking that earlier pages were handed over before the next starts."""

    def __init__(self, handed):
        self.handed = handed

    def fetch_host(self, host, requests, state, observe=None):
        results = []
        for i, req in enumerate(requests):
            assert len(self.handed) == i   # streamed: page i-1 left before request i
            res = fetcher_mod.FetchResult(url=req.url, fp=req.fp, fetch_time=1.0, elapsed_ms=1.0,
                                          outcome="ok", http_status=200, body=b"<html>%d</html>" % i)
            results.append(res)
            if observe:
                observe(res)
        return results, state

    def close(self):
        pass


def test_fetch_one_host_streams_pages_and_keeps_no_body():
    rows = [{"fp": i + 1, "url": f"http://h.test/{i}", "host": "h.test"} for i in range(5)]
    handed, lock = [], threading.Lock()

    def on_page(page):
        with lock:
            handed.append(page)

    pages, host_row, _ = fetch_one_host(lambda: _FakeFetcher(handed), "h.test", rows, None,
                                        on_page=on_page)
    assert pages == []                       # everything was handed over as it came
    assert [p["fp"] for p in handed] == [1, 2, 3, 4, 5]
    assert handed[2]["body"] == b"<html>2</html>"
    assert host_row["host"] == "h.test"


def test_fetch_one_host_without_streaming_returns_every_page():
    rows = [{"fp": i + 1, "url": f"http://h.test/{i}", "host": "h.test"} for i in range(3)]

    class Plain(_FakeFetcher):
        def fetch_host(self, host, requests, state, observe=None):
            self.handed = list(range(len(requests)))   # no streaming check
            return [fetcher_mod.FetchResult(url=r.url, fp=r.fp, fetch_time=1.0, elapsed_ms=1.0,
                                            outcome="ok", body=b"b") for r in requests], state

    pages, _, _ = fetch_one_host(lambda: Plain([]), "h.test", rows, None)
    assert sorted(p["fp"] for p in pages) == [1, 2, 3] and all(p["body"] == b"b" for p in pages)
