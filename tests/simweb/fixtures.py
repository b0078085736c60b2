"""Pytest fixtures: ``from tests.simweb.fixtures import *`` in a conftest.py.

simweb_small     session-scoped SimWebProcess of the ``small`` web, seed 1, its clock frozen at
                 ``sim_start`` (a page is the same bytes whenever it is fetched, so two crawls
                 of it commit the same state: tests/e2e/crawlstate.py compares them)
simweb_factory   function-scoped factory: ``simweb_factory(config, seed=1, hostile=False,
                 clock_file=False, sim_start=None, **overrides)`` (overrides are SimConfig
                 fields, e.g. ``trickle_seconds=3``); every web it starts is stopped at teardown
"""
from __future__ import annotations

import pytest

from .process import SimWebProcess

__all__ = ["simweb_small", "simweb_factory"]


@pytest.fixture(scope="session")
def simweb_small(tmp_path_factory):
    p = SimWebProcess("small", seed=1, workdir=tmp_path_factory.mktemp("simweb_small"), clock_file=True)
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture
def simweb_factory(tmp_path_factory):
    started = []

    def make(config="small", seed: int = 1, hostile: bool = False, clock_file=False,
             sim_start=None, **kw):
        p = SimWebProcess(config, seed=seed, hostile=hostile, clock_file=clock_file,
                          sim_start=sim_start, workdir=tmp_path_factory.mktemp("simweb"), **kw)
        started.append(p)
        return p

    yield make
    for p in started:
        p.stop()
