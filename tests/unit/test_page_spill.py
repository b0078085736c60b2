"""ProcessPages with spill files (--memory_mb): the visited rows wait for their host's
template on disk, and the VISITED tables come out the same as when they wait in memory."""
import glob

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline

from tests.unit.test_page_pool import _pages
from tests.unit.test_page_fate import CONFIG
from transforms.page.step import ProcessPages
from transforms.tableio.step import SpillToFiles


def _visited_rows(tmp_path, name, to_files):
    out = tmp_path / f"{name}.txt"
    with TestPipeline() as p:
        pages = p | beam.Create(_pages(), reshuffle=False)
        none = p | "NoBundles" >> beam.Create([])
        paged = {"pages": pages, "bundles": none, "results": p | "NoResults" >> beam.Create([])} | ProcessPages(
            CONFIG, 0, to_files)
        (paged["visited"]
         | beam.FlatMap(lambda t: [repr(sorted(r.items())) for r in t.to_pylist()])
         | beam.io.WriteToText(str(out), shard_name_template=""))
    return sorted(out.read_text().splitlines())


def test_visited_rows_through_spill_files_give_the_same_visited_tables(tmp_path):
    in_memory = _visited_rows(tmp_path, "memory", None)
    spilled = _visited_rows(tmp_path, "spilled",
                            lambda name: SpillToFiles(str(tmp_path / "spill" / name), 4096))
    assert len(in_memory) >= 10
    assert spilled == in_memory
    assert len(glob.glob(str(tmp_path / "spill" / "visited" / "*.spill"))) >= 2   # it did spill
    # and the VISITED tables again, for content-seen's later stages (`visited_files`)
    assert glob.glob(str(tmp_path / "spill" / "visited_tables" / "*.spill"))
