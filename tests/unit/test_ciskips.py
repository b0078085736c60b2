"""CI's skip check (tests/ciskips.py): with CI=true a skipped test fails the session unless it
is on the allow-list; without CI a skip is only reported."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ciskips

REPO = Path(__file__).resolve().parents[2]
# the sessions run the project's own hook (tests/conftest.py), so it is what is shown to work
CONFTEST = "from tests import ciskips\nfrom tests.conftest import pytest_configure  # noqa: F401\n"
TESTS = """import pytest

def test_runs():
    pass

def test_needs_a_browser():
    pytest.skip("no Chromium")

@pytest.mark.xfail(strict=True, reason="a known gap")
def test_known_gap():
    assert False
"""


def _session(tmp_path, ci, allowed=None, *args):
    (tmp_path / "conftest.py").write_text(CONFTEST if allowed is None else
                                          CONFTEST + f"ciskips.ALLOWED.update({allowed!r})\n")
    (tmp_path / "test_x.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--rootdir", str(tmp_path), *args, str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_a_skip_fails_the_session_in_ci_and_names_the_test(tmp_path):
    got = _session(tmp_path, ci=True)
    assert got.returncode == 1, got.stdout
    assert "CI: 1 test(s) skipped that must run in CI" in got.stdout
    assert "test_x.py::test_needs_a_browser: " in got.stdout and "no Chromium" in got.stdout


def test_outside_ci_a_skip_is_only_reported(tmp_path):
    got = _session(tmp_path, ci=False)
    assert got.returncode == 0, got.stdout
    assert "CI:" not in got.stdout


def test_an_allowed_skip_passes_with_its_reason_printed(tmp_path):
    got = _session(tmp_path, ci=True, allowed={"test_x.py::test_needs_a_browser": "the reason"})
    assert got.returncode == 0, got.stdout
    assert "CI: allowed skip test_x.py::test_needs_a_browser: the reason" in got.stdout


def test_with_xdist_workers_the_main_process_counts_their_skips(tmp_path):
    got = _session(tmp_path, True, None, "-n", "2")
    assert got.returncode == 1, got.stdout
    assert "CI: 1 test(s) skipped that must run in CI" in got.stdout


def test_every_allowed_test_exists_and_carries_a_reason():
    for nodeid, reason in ciskips.ALLOWED.items():
        path, _, name = nodeid.partition("::")
        assert f"def {name}(" in (REPO / path).read_text(), nodeid
        assert len(reason) > 20, nodeid


@pytest.mark.parametrize("nodeid,test", [("a.py::t[x-1]", "a.py::t"), ("a.py::t", "a.py::t")])
def test_parameters_do_not_matter_to_the_allow_list(nodeid, test):
    assert ciskips._test_of(nodeid) == test
