"""The issue #5 targets on the generated 100 000-page host graph (seed 0).

    .venv/bin/pytest -m long -s tests/unit/test_evaluate_targets.py      (~3-4 min)

Targets that do not hold on this graph are strict xfails carrying the measured reason:
if a change to the strategies makes one hold, the xfail turns into a failure and the
marker must go. Marker `long`: CI runs them (make test-long), so both ways can fail. The graph is not tuned to make any of them hold (see
benchmarks/bench_targets.py for the figures and diagnostics).
"""
import pytest

pytestmark = [pytest.mark.long, pytest.mark.timeout(1800)]   # the 100 000-page replays: ~3-4 min


@pytest.fixture(scope="module")
def report():
    from benchmarks.bench_targets import run
    return run(pages=100_000, graph_seed=0, log=print)


def _ok(report, key):
    t = report["targets"][key]
    assert t["pass"], t["detail"]


def test_omniscient_at_least_opic(report):
    _ok(report, "BY1")


def test_opic_error_falls_with_every_pass(report):
    _ok(report, "OP1")


def test_opic_greedy_beats_random_from_pass_3(report):
    _ok(report, "OP2")


@pytest.mark.xfail(strict=True, reason="larger-sites-first spends the big hosts' slots on "
                   "their deep pages while BFS reaches every host's home page (12 % of the "
                   "PageRank on 2 % of the pages) early; measured 0.406 vs 0.555")
def test_larger_sites_first_beats_bfs(report):
    _ok(report, "BY2")


@pytest.mark.xfail(strict=True, reason="url_importance, preference and larger-sites-first "
                   "score lower than backlinks; backlinks is close to BFS (0.549 vs 0.555)")
def test_backlinks_lowest_non_random(report):
    _ok(report, "BY3")


@pytest.mark.xfail(strict=True, reason="random over the *frontier* is biased to well-linked "
                   "pages (discovery is in-link weighted): max deviation 0.185; a uniform "
                   "permutation of all pages deviates 0.021")
def test_random_on_the_diagonal(report):
    _ok(report, "BY4")


@pytest.mark.xfail(strict=True, reason="partial PageRank trails BFS at 1-2 % (first batches, "
                   "PageRank of a tiny graph) and backlinks leads BFS at 4-10 %")
def test_cho_partial_pagerank_bfs_backlinks_on_hot_pages(report):
    _ok(report, "CHO")
