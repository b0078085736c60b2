"""Fingerprint sets: sorted_unique, member and FpIndex agree with Python sets."""
import numpy as np
from hypothesis import given, settings, strategies as st

from transforms.urls.fpsets import FpIndex, member, sorted_unique

I64 = st.integers(min_value=-2**63, max_value=2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(I64, max_size=300), st.lists(I64, max_size=300))
def test_fp_index_contains_is_set_membership(members, probes):
    s = sorted_unique(np.array(members, dtype=np.int64))
    values = np.array(probes + members[:50], dtype=np.int64)
    expected = np.array([v in set(members) for v in values.tolist()], dtype=bool)
    assert (FpIndex(s).contains(values) == expected).all()
    assert (member(values, s) == expected).all()


def test_fp_index_on_random_fingerprints_matches_member():
    rng = np.random.default_rng(7)
    s = sorted_unique(rng.integers(-2**63, 2**63 - 1, 50_000, dtype=np.int64))
    values = np.concatenate([rng.choice(s, 20_000), rng.integers(-2**63, 2**63 - 1, 80_000, dtype=np.int64)])
    got = FpIndex(s).contains(values)
    assert (got == member(values, s)).all() and got[:20_000].all()


def test_crowded_slots_fall_back_to_binary_search():
    # values chosen to share their top bits (as URLs crafted to collide would): one slot
    # holds all of them, more than FpIndex.MAX_SCAN
    s = sorted_unique(np.arange(1, 10_000, 3, dtype=np.int64))
    values = np.arange(-10, 10_010, dtype=np.int64)
    got = FpIndex(s).contains(values)
    assert (got == np.isin(values, s)).all()


def test_empty_sets_and_empty_probes():
    empty = np.zeros(0, np.int64)
    assert FpIndex(empty).contains(np.array([1, 2], np.int64)).tolist() == [False, False]
    assert FpIndex(np.array([5], np.int64)).contains(empty).tolist() == []


class _SmallRanges(FpIndex):
    SLOTS_AT_ONCE = 3   # the directory counted three slots at a time: many range edges


@settings(max_examples=100, deadline=None)
@given(st.lists(I64, max_size=300), st.lists(I64, max_size=100))
def test_fp_index_directory_counted_by_ranges_is_the_whole_count(members, probes):
    """The directory, built a range of slots at a time, equals one count over every slot
    (each slot's start is the number of values whose top bits come before it), and the
    bitmap has exactly the bits of the values' top bits."""
    s = sorted_unique(np.array(members, dtype=np.int64))
    index = _SmallRanges(s)
    u = s.view(np.uint64) ^ np.uint64(1 << 63)
    slots = np.bincount((u >> index.shift).astype(np.int64), minlength=1 << index.bits)
    assert index.start.tolist() == [0] + np.cumsum(slots).tolist()
    assert index.start.dtype == np.int32
    present = np.zeros(1 << (index.bits + index.BITMAP_EXTRA), dtype=bool)
    present[(u >> index.map_shift).astype(np.int64)] = True
    assert np.array_equal(index.bitmap, np.packbits(present, bitorder="little"))
    values = np.array(probes + members[:50], dtype=np.int64)
    assert (index.contains(values) == member(values, s)).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(I64, max_size=300), st.lists(I64, max_size=300))
def test_member_of_a_sorted_set_with_repeats(members, probes):
    # callers may pass np.sort(values) without dropping repeats (urlseen.step._removed)
    s = np.sort(np.array(members + members[:40], dtype=np.int64))
    values = np.array(probes + members[:50], dtype=np.int64)
    expected = np.array([v in set(members) for v in values.tolist()], dtype=bool)
    assert (member(values, s) == expected).all()
