"""Shared fixtures: the simulated web (tests/simweb) and crawl helpers."""
from tests.simweb.fixtures import *  # noqa: F401,F403
