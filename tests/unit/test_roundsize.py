"""A round's size (pipelines/roundsize.py): --max_pages, or grown with the pages downloaded."""
from hypothesis import given
from hypothesis import strategies as st

from pipelines.roundsize import round_pages, sized, within_budget


def settings(max_pages=1000, growth=0.0, cap=50000):
    return {"max_pages": max_pages, "round_growth": growth, "max_round_pages": cap}


def test_without_growth_every_round_is_max_pages():
    assert round_pages(settings(1000), 10**7) == 1000


def test_a_round_grows_with_the_pages_downloaded_up_to_the_cap():
    s = settings(5000, 0.1, 50000)
    assert round_pages(s, 0) == 5000               # never below --max_pages
    assert round_pages(s, 49_999) == 5000
    assert round_pages(s, 123_456) == 12_345       # the share, rounded down
    assert round_pages(s, 10**7) == 50000          # the cap
    assert round_pages(settings(5000, 0.1, 0), 10**7) == 10**6   # cap 0: none


def test_a_cap_below_max_pages_never_shrinks_a_round():
    assert round_pages(settings(5000, 0.5, 100), 10**6) == 5000


def test_sized_records_the_rounds_size_and_keeps_the_rest():
    s = settings(10, 0.5, 30)
    assert sized(s, 4) is s
    assert sized(s, 40) == {**s, "max_pages": 20}


def test_the_budget_trims_a_grown_round_and_turns_the_growth_off():
    s, given = settings(10, 0.5, 30), {"round_growth": 0.5}
    assert within_budget(given, s, 40, 20) is given     # a 20-page round fits 20 pages left
    assert within_budget(given, s, 40, 19) == {"round_growth": 0.0, "max_pages": 19}
    assert within_budget(given, s, 0, 9) == {"round_growth": 0.0, "max_pages": 9}


@given(st.integers(1, 10**6), st.floats(0, 1), st.integers(0, 10**6), st.integers(0, 10**9),
       st.integers(0, 10**9))
def test_size_is_bounded_and_grows_with_the_crawl(base, growth, cap, a, b):
    s = settings(base, growth, cap)
    lo, hi = sorted((a, b))
    assert base <= round_pages(s, lo) <= round_pages(s, hi)
    if cap:
        assert round_pages(s, hi) <= max(base, cap)


def test_rounds_grow_by_default_once_the_crawl_is_ten_rounds_big():
    from pipelines.settings import effective_round_settings
    s = effective_round_settings({}, {})
    assert round_pages(s, 0) == s["max_pages"] == 1000
    assert round_pages(s, 10_000) == 1000           # ten rounds of --max_pages: not yet
    assert round_pages(s, 123_456) == 12_345
    assert round_pages(effective_round_settings({"round_growth": 0.0}, {}), 123_456) == 1000
