"""The runtime patches of Beam (pipelines/patches) change how fast a round runs, never what it
commits: the same crawl on Beam's own code (BEAMCRAWL_PATCHES_OFF=all) and patched."""
import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from pipelines import patches
from tests.e2e import crawlstate

ROUNDS = 3


def _crawl(web, crawl_dir, off):
    """A 3-round crawl of `web` with BEAMCRAWL_PATCHES_OFF=`off` (None: every patch on); the
    rounds in a process of their own, as a user runs them."""
    env = {k: v for k, v in os.environ.items() if k != patches.OFF_VARIABLE}
    if off is not None:
        env[patches.OFF_VARIABLE] = off
    with mock.patch.dict(os.environ, env, clear=True):   # inject runs in this process
        crawlstate.start_crawl(web, crawl_dir)
    done = subprocess.run([sys.executable, "-m", "pipelines.crawl", "--crawl_dir", str(crawl_dir),
                           "--rounds", str(ROUNDS)], cwd=crawlstate.REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _report(crawl_dir, n):
    return json.loads((Path(crawl_dir) / "rounds" / f"{n:06d}" / "report.json").read_text())


@pytest.fixture(scope="module")
def crawls(simweb_small, tmp_path_factory):
    """{arm: (crawl directory, the finished crawl process)}: patched, and on Beam's own code."""
    out = {}
    for arm, off in (("patched", None), ("beam", "all")):
        d = tmp_path_factory.mktemp(f"patches_{arm}") / "crawl"
        out[arm] = (d, _crawl(simweb_small, d, off))
    return out


def test_beams_own_code_commits_the_same_crawl_as_the_patched_runner(crawls):
    patched, beam = crawls["patched"][0], crawls["beam"][0]
    for n in range(1, ROUNDS + 1):
        crawlstate.assert_same_state(crawlstate.state(patched, n), crawlstate.state(beam, n))


def test_the_patched_crawl_did_run_patched_and_the_other_did_not(crawls):
    """Else the comparison above would prove nothing: each round records its patches."""
    for n in range(1, ROUNDS + 1):
        assert _report(crawls["patched"][0], n)["runtime_patches"] == list(patches.PATCHES)
        assert _report(crawls["beam"][0], n)["runtime_patches"] == []
