"""End-to-end: --round_growth sizes each round from the committed rounds (pipelines/roundsize.py):
max(--max_pages, share x pages downloaded), at most --max_round_pages, and
--max_total_pages still stops the crawl at its budget exactly."""
import collections
import math

import pytest

from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate

BASE, GROWTH, CAP, BUDGET = 8, 0.5, 16, 60


def size_after(downloaded):
    return max(BASE, min(CAP, math.floor(GROWTH * downloaded)))


@pytest.fixture(scope="module")
def grown(simweb_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("round_growth") / "crawl"
    crawlstate.start_crawl(simweb_small, d, "--max_pages", str(BASE), "--round_growth", str(GROWTH),
                           "--max_round_pages", str(CAP))
    reports = crawlstate.run_rounds(d, "--max_total_pages", str(BUDGET))
    return CrawlDir(str(d)), reports


def test_rounds_grow_with_the_crawl_up_to_the_cap_within_the_budget(grown):
    c, reports = grown
    sizes, downloaded = [], c.read_report(0)["page_sets"]["downloaded"]
    for n in range(1, c.last_committed() + 1):
        want = min(size_after(downloaded), BUDGET - downloaded)
        got = c.read_json(n, "options.json")["max_pages"]
        assert got == want, f"round {n} after {downloaded} pages: a fetch list of {got}, not {want}"
        report = c.read_report(n)
        assert report["fetched"] <= got
        sizes.append(got)
        downloaded = report["page_sets"]["downloaded"]
    assert len(reports) == len(sizes)
    assert BASE < max(sizes) == CAP, sizes        # grown, and held at the cap
    assert downloaded == BUDGET


def test_pending_is_cut_at_the_next_rounds_size(grown):
    """A report's pending page set is what the next round can fetch: the due URLs of its
    frontier, at most --max_per_host a host, at most the *next* round's (grown) size."""
    c, _ = grown
    above_own = 0
    for n in range(1, c.last_committed() + 1):
        if not c.read_json(n, "options.json")["round_growth"]:
            continue     # the round --max_total_pages cut: its growth off, its pending cut at it
        report, per_host = c.read_report(n), c.read_json(n, "options.json")["max_per_host"]
        frontier = c.read_table("frontier", n, columns=["host", "not_before"])
        due = collections.Counter(h for h, nb in zip(frontier.column("host").to_pylist(),
                                                     frontier.column("not_before").to_pylist())
                                  if (nb or 0) <= report["round_time"])
        schedulable = sum(min(k, per_host) for k in due.values())
        want = min(schedulable, size_after(report["page_sets"]["downloaded"]))
        assert report["page_sets"]["pending"] == want, n
        above_own += want > c.read_json(n, "options.json")["max_pages"]
    assert above_own, "no round's pending exceeded its own size: the test shows nothing"
