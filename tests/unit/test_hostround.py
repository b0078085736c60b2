"""HostRound.starting: where a host's politeness clock starts in a round (pure)."""
import math

import pytest

from transforms.fetch.hostround import HostRound
from transforms.fetch.records import HostState
from transforms.fetch.unitfetch import _Turns

NOW = 1_000_000.0


@pytest.mark.parametrize("last, expected", [
    (None, -math.inf),            # never fetched: no delay to wait
    (NOW - 5.0, NOW - 5.0),       # fetched before: the delay runs from then
    (NOW, NOW),
    (NOW + 3600.0, NOW),          # "in the future" (another worker's clock): counts as now
])
def test_the_last_fetch_is_clamped_to_now(last, expected):
    assert HostRound.starting(last, NOW).last_end == expected


def test_a_unit_of_hosts_starts_each_host_from_the_clamped_last_fetch():
    """The unit fetcher's per-host turns (unitfetch) build their round the same way."""
    ahead = _Turns("a.test", [], HostState("a.test", last_fetch_time=NOW + 3600.0), None, NOW, True)
    behind = _Turns("b.test", [], HostState("b.test", last_fetch_time=NOW - 1.0), None, NOW, True)
    never = _Turns("c.test", [], None, None, NOW, False)
    assert (ahead.round.last_end, behind.round.last_end, never.round.last_end) == (NOW, NOW - 1.0, -math.inf)
    assert (ahead.round.robots_done, never.round.robots_done) == (False, True)
