"""A crawl killed with SIGKILL at each step of a round, on local disk and on S3, then run
again with the same command, ends in the state of a crawl that was never killed (#49).

The kill is deterministic: `BEAMCRAWL_CRASH_AT=<point>` makes the process that reaches
`transforms.faults.crash_point(<point>)` SIGKILL itself (no cleanup, no flush): during the
fetch, after a table part is written (its bundle not done), after the pipeline (nothing
committed), between report.json and _COMMITTED, and halfway through pruning old snapshots.
The command stops at a page budget (`--max_total_pages`), so running it again continues to
the same end. After the rerun: the same rows in every table (none twice), and no object
that a manifest does not list.
"""
import os
import subprocess
import sys

import pytest

from pipelines import storage
from pipelines.crawldir import CrawlDir
from pipelines.sweep import unlisted
from tests import s3server
from tests.e2e import crawlstate

pytestmark = pytest.mark.long   # a subprocess crawl killed and rerun per point and storage

POINTS = ("fetch", "write_part", "before_commit", "commit", "prune")
ROUND = ("--max_pages", "12", "--keep_snapshots", "1")   # round defaults, given to inject
BUDGET = ("--max_total_pages", "30")


def _crawl_command(d, flags, env=None):
    return subprocess.run([sys.executable, "-m", "pipelines.crawl", "--crawl_dir", str(d), *BUDGET, *flags],
                          cwd=crawlstate.REPO, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=600)


def _start(web, d, flags):
    crawlstate.start_crawl(web, d, *ROUND, *flags)


@pytest.fixture(scope="module")
def uninterrupted(simweb_small, tmp_path_factory):
    d = tmp_path_factory.mktemp("uninterrupted") / "crawl"
    _start(simweb_small, d, [])
    done = _crawl_command(d, [])
    assert done.returncode == 0, done.stderr[-3000:]
    storage.use([])
    return crawlstate.state(d), CrawlDir(str(d)).last_committed()


def _where(storage_kind, s3_server, tmp_path, point):
    if storage_kind == "local":
        return tmp_path / "crawl", []
    return f"s3://{s3server.BUCKET}/killed-at-{point}", s3_server.beam_flags()


@pytest.mark.parametrize("storage_kind", ["local", "s3"])
@pytest.mark.parametrize("point", POINTS)
def test_a_crawl_killed_at_any_step_and_run_again_ends_as_if_never_killed(
        point, storage_kind, uninterrupted, simweb_small, s3_server, tmp_path):
    d, flags = _where(storage_kind, s3_server, tmp_path, point)
    _start(simweb_small, d, flags)
    killed = _crawl_command(d, flags, env={"BEAMCRAWL_CRASH_AT": point})
    assert killed.returncode == -9, f"not killed at {point}: {killed.returncode} {killed.stderr[-3000:]}"
    again = _crawl_command(d, flags)
    assert again.returncode == 0, again.stderr[-3000:]
    storage.use(flags)
    crawl = CrawlDir(str(d))
    state, last = uninterrupted
    assert crawl.last_committed() == last
    crawlstate.assert_same_state(state, crawlstate.state(d))
    assert {n: unlisted(crawl, n) for n in crawl.committed_rounds()} == {n: [] for n in range(last + 1)}
