"""No full garbage collection while a bundle fetches; the process's settings come back."""
import gc
import threading

import pytest

from transforms.fetch.gcpause import NEVER, full_collections_deferred


def test_only_the_full_collection_waits_and_the_thresholds_come_back():
    before = gc.get_threshold()
    with full_collections_deferred():
        g0, g1, g2 = gc.get_threshold()
        assert (g0, g1) == before[:2] and g2 == NEVER
    assert gc.get_threshold() == before


def test_restored_when_the_bundle_fails():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), full_collections_deferred():
        raise RuntimeError("a host job failed")
    assert gc.get_threshold() == before


def test_overlapping_bundles_restore_once_the_last_ends():
    """Two bundles of one process in two threads, the first ending while the second runs."""
    before = gc.get_threshold()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with full_collections_deferred():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second():
        first_in.wait(5)
        with full_collections_deferred():
            second_in.set()
            first_out.wait(5)
            seen["while_second_runs"] = gc.get_threshold()[2]

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen["while_second_runs"] == NEVER
    assert gc.get_threshold() == before


def test_fetch_step_defers_during_its_bundle(monkeypatch):
    """FetchHosts' bundle runs inside the deferral (the finish_bundle wrapper, not a copy)."""
    from transforms.fetch import step

    observed = []

    def fake_fetch_bundle(self):
        observed.append(gc.get_threshold()[2])
        yield "page"

    monkeypatch.setattr(step.FetchHosts, "_fetch_bundle", fake_fetch_bundle)
    dofn = step.FetchHosts.__new__(step.FetchHosts)
    assert list(dofn.finish_bundle()) == ["page"]
    assert observed == [NEVER]
    assert gc.get_threshold()[2] != NEVER
