"""The page step on worker processes (--page_processes) gives exactly the inline outputs."""
import glob
from pathlib import Path

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.unit.test_page_fate import CONFIG, fetched
from transforms.page.fate import page_fate
from transforms.page.pool import FatePool, auto_processes
from transforms.page.step import PageFates

NAMES = sorted(Path(p).stem for p in glob.glob(str(Path(__file__).parent / "data" / "page_fate" / "*.json")))


def _pages():
    return [fetched(n) for n in NAMES] * 3


def test_a_pool_computes_the_same_fates_as_inline():
    pages = _pages()
    pool = FatePool(CONFIG, processes=2, batch=4, inflight=2)
    got = []
    try:
        for p in pages:
            for fates, seconds in pool.submit(p):
                got.extend(fates)
                assert seconds >= 0
        for fates, _ in pool.drain():
            got.extend(fates)
    finally:
        pool.close()
    assert len(got) == len(pages)
    key = lambda f: repr(sorted(f.result.items()))   # noqa: E731
    assert sorted(map(repr, got), key=str) == sorted((repr(page_fate(p, CONFIG)) for p in pages), key=str)
    assert sorted(map(key, got)) == sorted(key(page_fate(p, CONFIG)) for p in pages)


def _outputs(processes):
    tags = ("results", "pages", "links", "filtered")
    with TestPipeline() as p:
        out = (p | beam.Create(_pages(), reshuffle=False)
               | beam.ParDo(PageFates(CONFIG, processes, min_pages=2)).with_outputs(*tags, "stats", main="visited"))
        expected = {"visited": [], **{t: [] for t in tags}}
        for page in _pages():
            fate = page_fate(page, CONFIG)
            expected["results"].append(fate.result)
            expected["links"].extend(fate.links)
            expected["filtered"].extend(fate.filtered)
            if fate.visited is not None:
                expected["visited"].append(fate.visited)
            if fate.stored is not None:
                expected["pages"].append(fate.stored)
        for tag, rows in expected.items():
            as_repr = out[tag] | f"Repr{tag}" >> beam.Map(lambda r: repr(sorted(r.items())))
            assert_that(as_repr, equal_to([repr(sorted(r.items())) for r in rows]), label=f"Check{tag}")


def test_the_page_step_on_worker_processes_emits_what_it_emits_inline():
    _outputs(1)
    _outputs(0)


def test_auto_leaves_one_core_to_the_fetch():
    assert auto_processes(1) == 0
    assert auto_processes(2) == 1
    assert auto_processes(8) == 7
