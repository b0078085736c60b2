"""`--page_processes auto` and `--fetch_process auto` are sized by the cores of the process
that runs the step, not of the one that built the round: a launcher on an 8-core laptop
sends the round to workers of one core each (or to a Dask worker pinned to a core), and
each must start the helpers a one-core machine gets (none), not the launcher's."""
import pytest

from pipelines.config import RoundConfig
from pipelines.settings import effective_round_settings
from transforms import procs
from transforms.fetch.step import FetchHosts
from transforms.page.step import PageFates, VisitedTables


def _cores(monkeypatch, n):
    monkeypatch.setattr(procs.os, "sched_getaffinity", lambda _pid: set(range(n)), raising=False)


def _setup(dofn):
    dofn.setup()
    try:
        return dofn._processes
    finally:
        dofn.teardown()


@pytest.mark.parametrize("worker_cores, page, fetch", [(1, 0, 0), (4, 3, 2)])
def test_auto_helpers_are_sized_by_the_workers_cores_not_the_launchers(monkeypatch, worker_cores, page, fetch):
    _cores(monkeypatch, 8)                      # the launcher builds the round
    cfg = RoundConfig.build(effective_round_settings({}, {}), 1, 0.0)
    _cores(monkeypatch, worker_cores)           # the worker runs its steps
    assert _setup(PageFates(cfg.page, cfg.page_processes)) == page
    assert _setup(VisitedTables(cfg.page_processes)) == page
    assert _setup(FetchHosts(cfg.fetch, processes=cfg.fetch_processes)) == fetch


def test_a_number_given_is_kept_whatever_the_cores(monkeypatch):
    _cores(monkeypatch, 8)
    cfg = RoundConfig.build(effective_round_settings({"page_processes": "2", "fetch_process": "3"}, {}), 1, 0.0)
    _cores(monkeypatch, 1)
    assert _setup(PageFates(cfg.page, cfg.page_processes)) == 2
    assert _setup(FetchHosts(cfg.fetch, processes=cfg.fetch_processes)) == 3
