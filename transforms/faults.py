"""Fault injection for crash-safety tests.

`BEAMCRAWL_CRASH_AT=<point>` makes the process that reaches `crash_point(<point>)` kill
itself with SIGKILL, as a power cut would: no cleanup, no flush. Points: `fetch` (after a
host's fetch, inside the pipeline), `before_commit` (pipeline done, round not committed).
Unset in normal use; the check is one environment lookup.
"""
import os
import signal

ENV = "BEAMCRAWL_CRASH_AT"


def crash_point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
