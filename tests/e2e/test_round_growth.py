"""End-to-end: --round_growth sizes each round from the committed rounds (pipelines/roundsize.py):
max(--max_pages, share x pages downloaded), at most --max_round_pages, and
--max_total_pages still stops the crawl at its budget exactly."""
import math

from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate

BASE, GROWTH, CAP, BUDGET = 8, 0.5, 16, 60


def test_rounds_grow_with_the_crawl_up_to_the_cap_within_the_budget(simweb_small, tmp_path):
    d = tmp_path / "crawl"
    crawlstate.start_crawl(simweb_small, d, "--max_pages", str(BASE), "--round_growth", str(GROWTH),
                           "--max_round_pages", str(CAP))
    reports = crawlstate.run_rounds(d, "--max_total_pages", str(BUDGET))
    c = CrawlDir(str(d))
    sizes, downloaded = [], c.read_report(0)["page_sets"]["downloaded"]
    for n in range(1, c.last_committed() + 1):
        want = min(max(BASE, min(CAP, math.floor(GROWTH * downloaded))), BUDGET - downloaded)
        got = c.read_json(n, "options.json")["max_pages"]
        assert got == want, f"round {n} after {downloaded} pages: a fetch list of {got}, not {want}"
        report = c.read_report(n)
        assert report["fetched"] <= got
        sizes.append(got)
        downloaded = report["page_sets"]["downloaded"]
    assert len(reports) == len(sizes)
    assert BASE < max(sizes) == CAP, sizes        # grown, and held at the cap
    assert downloaded == BUDGET
