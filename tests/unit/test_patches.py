"""pipelines.patches: Beam patched only on its own version, loudly skipped otherwise, and put
back after the round."""
import importlib
import types

import apache_beam
import pytest

from pipelines import patches
from pipelines.settings import UsageError

IN_PROCESS = patches.Context(in_process=True, workers_here=True)


class Owner:
    def f(self):
        return "beam"


@pytest.fixture
def fake_patches(monkeypatch):
    """Install fake patch modules: `add(name, make, in_process=False)`; PATCHES is theirs."""
    names = []

    def add(name, make, in_process=False):
        module = types.ModuleType(f"pipelines.patches.{name}")
        module.NAME, module.IN_PROCESS, module.replacements = name, in_process, make
        monkeypatch.setitem(importlib.sys.modules, module.__name__, module)
        names.append(name)
        monkeypatch.setattr(patches, "PATCHES", tuple(names))
    monkeypatch.setattr(patches, "_WARNED", set())
    return add


def test_a_patch_is_active_only_inside_the_block(fake_patches):
    fake_patches("one", lambda c: [(Owner, "f", lambda self: "patched")])
    with patches.active(IN_PROCESS, environ={}, version=patches.BEAM_VERSION) as names:
        assert Owner().f() == "patched" and names == ["one"]
    assert Owner().f() == "beam" and "f" in Owner.__dict__


def test_beam_is_put_back_when_the_round_fails(fake_patches):
    fake_patches("one", lambda c: [(Owner, "f", lambda self: "patched")])
    with pytest.raises(RuntimeError):
        with patches.active(IN_PROCESS, environ={}, version=patches.BEAM_VERSION):
            raise RuntimeError("round failed")
    assert Owner().f() == "beam"


def test_another_beam_version_runs_beams_own_code_with_one_warning_line(fake_patches, capsys):
    fake_patches("one", lambda c: [(Owner, "f", lambda self: "patched")])
    for _ in range(3):   # a crawl's rounds: the line is printed once
        with patches.active(IN_PROCESS, environ={}, version="2.99.0") as names:
            assert Owner().f() == "beam" and names == []
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "2.99.0" in err[0] and patches.BEAM_VERSION in err[0] and "one" in err[0]


def test_a_missing_target_skips_that_patch_loudly_and_keeps_the_others(fake_patches, capsys):
    def gone(context):
        return [(Owner, "f", lambda self: "x"), (Owner, "g", patches.target(Owner, "g"))]
    fake_patches("gone", gone)
    fake_patches("two", lambda c: [(Owner, "f", lambda self: "two")])
    with patches.active(IN_PROCESS, environ={}, version=patches.BEAM_VERSION) as names:
        assert names == ["two"] and Owner().f() == "two"
    assert Owner().f() == "beam"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gone" in err[0] and "Owner.g" in err[0]


def test_in_process_patches_stay_off_on_a_distributed_runner(fake_patches):
    fake_patches("launcher", lambda c: [(Owner, "f", lambda self: "launcher")])
    fake_patches("worker", lambda c: [(Owner, "f", lambda self: "worker")], in_process=True)
    with patches.active(patches.Context(in_process=False), environ={}, version=patches.BEAM_VERSION) as names:
        assert names == ["launcher"] and Owner().f() == "launcher"


def test_switched_off_by_name_or_all_and_a_misspelt_name_is_refused(fake_patches):
    fake_patches("one", lambda c: [(Owner, "f", lambda self: "patched")])
    with patches.active(IN_PROCESS, environ={patches.OFF_VARIABLE: "one"}, version=patches.BEAM_VERSION) as n:
        assert n == [] and Owner().f() == "beam"
    assert patches.switched_off({patches.OFF_VARIABLE: "all"}) == {"one", *patches.TUNING}
    with pytest.raises(UsageError, match="onee"):
        patches.switched_off({patches.OFF_VARIABLE: "onee"})


def test_target_and_uses_name_what_they_did_not_find():
    assert patches.target(Owner, "f") is Owner.__dict__["f"]
    with pytest.raises(patches.Missing, match="Owner.g"):
        patches.target(Owner, "g")
    with pytest.raises(patches.Missing, match="Owner.f"):
        patches.target(Owner, "f", kind=type)

    def reads():
        return apache_beam.version
    patches.uses(reads, "version")
    with pytest.raises(patches.Missing, match="__version__"):
        patches.uses(reads, "__version__")


def test_every_patch_finds_its_targets_in_the_installed_beam(capsys):
    """On the Beam of requirements.txt every patch applies: a Beam upgrade fails here (and
    warns at run time) instead of silently losing a patch's gain."""
    assert apache_beam.__version__ == patches.BEAM_VERSION, \
        "Beam was upgraded: measure each patch on it (benchmarks/bench_patches.py) and move BEAM_VERSION"
    from apache_beam.transforms import userstate
    original = userstate.get_dofn_specs
    with patches.active(IN_PROCESS, environ={}) as names:
        assert names == list(patches.PATCHES)
        assert userstate.get_dofn_specs is not original
    assert userstate.get_dofn_specs is original
    assert capsys.readouterr().err == ""
