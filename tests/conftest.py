"""Shared fixtures: the simulated web (tests/simweb) and crawl helpers; CI's check that no
test skips (tests/ciskips.py)."""
import atexit
import os
import shutil
import tempfile

from tests import ciskips
from tests.simweb.fixtures import *  # noqa: F401,F403

# caches (the memory-mapped language model) go to a directory of this test run, not the
# user's ~/.cache; crawls the tests start as subprocesses inherit it
if "BEAMCRAWL_CACHE" not in os.environ:
    os.environ["BEAMCRAWL_CACHE"] = tempfile.mkdtemp(prefix="beamcrawl-test-cache-")
    atexit.register(shutil.rmtree, os.environ["BEAMCRAWL_CACHE"], True)

from tests.s3server import s3_server  # noqa: E402,F401  (moto's S3 server on loopback, for s3:// crawls)


def pytest_configure(config):
    ciskips.register(config)
