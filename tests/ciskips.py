"""CI's rule on skipped tests: with CI=true (.ci/run sets it) a session fails when any test
skips unless the skip is on ALLOWED with its reason. A skip in CI is a feature left untested
while the run stays green (rendering without Chromium, the nginx export without nginx, a
required package missing): CI must install what the features need, not skip past it.

tests/conftest.py registers `SkipCheck`; `CI=true make test` runs the check locally.
"""
import os
import re

import pytest

# test (node id without its parameters) -> why it may skip in CI
ALLOWED = {
    "tests/unit/test_langmodel.py::test_unwritable_cache_falls_back_to_py3langid":
        "CI runs as root, whom a read-only directory does not stop; the fallback itself is "
        "covered as root by test_cache_path_that_is_a_file_falls_back",
}


def ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _test_of(nodeid):
    return re.sub(r"\[.*\]$", "", nodeid)


def _reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


class SkipCheck:
    """Collects the session's skips (xfails are not skips) and fails the session on any
    skip not in ALLOWED."""

    def __init__(self):
        self.skips = []

    def _note(self, report):
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skips.append((report.nodeid, _reason(report)))

    def pytest_runtest_logreport(self, report):
        self._note(report)

    def pytest_collectreport(self, report):
        self._note(report)

    def unexpected(self):
        return [(n, r) for n, r in self.skips if _test_of(n) not in ALLOWED]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        if self.unexpected() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        allowed = [(n, r) for n, r in self.skips if _test_of(n) in ALLOWED]
        for nodeid, _ in allowed:
            terminalreporter.write_line(f"CI: allowed skip {nodeid}: {ALLOWED[_test_of(nodeid)]}")
        bad = self.unexpected()
        if bad:
            terminalreporter.write_sep("=", f"CI: {len(bad)} test(s) skipped that must run in CI", red=True)
            for nodeid, reason in bad:
                terminalreporter.write_line(f"{nodeid}: {reason}")
            terminalreporter.write_line("Install what they need (.ci/run), or add them to "
                                        "tests/ciskips.py ALLOWED with the reason.")


def register(config):
    """Install the check in the session's main process (xdist workers report to it)."""
    if ci() and not hasattr(config, "workerinput"):
        config.pluginmanager.register(SkipCheck(), "ci-skip-check")
