"""`boilerplate.BlockCounts` (arrays, folded in steps) against the plain count it replaces."""
import pickle

import pytest
from hypothesis import given, settings, strategies as st

from transforms.page import boilerplate
from transforms.page.boilerplate import BlockCounts, page_block_fps


def reference_template(sides, min_pages, share):
    """The template the way it was counted first: per side a dict of fp -> distinct pages and
    the set of page keys; sides merged by adding counts and joining keys."""
    counts, keys = {}, set()
    for pages in sides:
        side_keys = set()
        for fps in pages:
            if hash(fps) not in side_keys:
                side_keys.add(hash(fps))
                for f in fps:
                    counts[f] = counts.get(f, 0) + 1
        keys |= side_keys
    need = max(min_pages, int(share * len(keys) + 0.999999))
    return frozenset(f for f, c in counts.items() if c >= need)


fingerprint = st.one_of(st.integers(0, 12), st.integers(-2**63, 2**63 - 1))
page = st.lists(fingerprint, max_size=6).map(lambda fps: page_block_fps(None, fps))


@settings(max_examples=300, deadline=None)
@given(sides=st.lists(st.lists(page, max_size=30), min_size=1, max_size=4),
       min_pages=st.integers(1, 6), share=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
       fold_min=st.integers(1, 8), pickled=st.booleans())
def test_the_template_is_the_plain_counts(sides, min_pages, share, fold_min, pickled):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BlockCounts, "FOLD_MIN", fold_min)   # small: folds in the middle of the pages
        accs = []
        for pages in sides:
            acc = BlockCounts()
            for fps in pages:
                acc.add_page(fps)
            accs.append(pickle.loads(pickle.dumps(acc)) if pickled else acc)
        for other in accs[1:]:
            accs[0].merge(other)
        assert accs[0].template(min_pages, share) == reference_template(sides, min_pages, share)


def test_a_block_on_half_the_pages_of_a_host_is_template():
    pages = [["menu", "footer", f"text {i}"] for i in range(9)] + [["text 0", "other"]]
    assert boilerplate.host_template(pages) == {boilerplate.block_fp("menu"), boilerplate.block_fp("footer")}


def test_a_big_host_is_folded_into_arrays_not_held_page_by_page():
    acc = BlockCounts()
    for i in range(20_000):
        acc.add_page(page_block_fps(None, (1, 2, 1000 + i)))
    assert len(acc._page_fps) < 20_000   # folded on the way
    assert acc.template() == {1, 2}
    assert len(acc._fps) == 20_002 and len(acc._keys) == 20_000
