"""Near-duplicate clusters in one pass over page tables (transforms.contentseen.nearpass,
issue #12) give exactly what the band-row path gave (`duplicates._band_rows` ->
`clusters.candidate_edges`, one row per (page, band) with the whole signature), on a
generated round with planted near-duplicates: families of near copies across three old
rounds and the new one (old pages already in a cluster, a refetched old page, exact
signature ties, a family wider than the cap, copies below the threshold)."""
from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that

from tests.unit.pipeline_graph import transform_labels
from transforms.contentseen import clusters, duplicates, nearpass, oldside
from transforms.contentseen import fingerprints as F
from transforms.contentseen import step
from transforms.tableio.sideinput import combined_side_input
from transforms.urls.fpsets import sorted_union

BANDS, ROWS = F.LSH_PARAMS
P = F.NUM_PERM
NEW_ROUND = 4


def _copy(rng, sig, changed):
    s = sig.copy()
    if changed:
        pos = rng.choice(P, changed, replace=False)
        s[pos] = rng.integers(0, 2**32, changed, dtype=np.uint32)
    return s


def _table(fp, rnd, sigs, has, head_fp=None, head_round=None):
    n = len(fp)
    return pa.table({
        "fp": pa.array(fp, pa.int64()), "url": [f"http://h{int(f) % 5}.example/p/{int(f)}" for f in fp],
        "round": pa.array(rnd, pa.int32()), "minhash": F.signature_column(np.asarray(sigs, np.uint32), has),
        "near_cluster_fp": pa.array([None] * n if head_fp is None else head_fp, pa.int64()),
        "near_cluster_round": pa.array([None] * n if head_round is None else head_round, pa.int32())})


@pytest.fixture(scope="module")
def round_case():
    """(new table, old table): 30 families (one of 150 pages) of near copies over rounds 1-4."""
    rng = np.random.default_rng(12)
    fam_sizes = [150] + list(rng.integers(2, 25, 29))
    fp, rnd, sigs, hf, hr = [], [], [], [], []
    for size in fam_sizes:
        base = rng.integers(0, 2**32, P, dtype=np.uint32)
        head = None
        for k in range(size):
            r = int(rng.integers(1, NEW_ROUND + 1))
            changed = int(rng.choice([0, 0, 2, 4, 6, 9, 14, 20, 40]))   # J from 1 to ~0.7
            fp.append(int(rng.integers(-2**62, 2**62)))
            rnd.append(r)
            sigs.append(_copy(rng, base, changed))
            # some old pages already joined a cluster (an earlier old page of the family)
            in_cluster = r < NEW_ROUND and head is not None and head[1] < r and rng.random() < 0.5
            hf.append(head[0] if in_cluster else None)
            hr.append(head[1] if in_cluster else None)
            if r < NEW_ROUND and (head is None or r < head[1]):
                head = (fp[-1], r)
    singles = 300
    fp += [int(x) for x in rng.integers(-2**62, 2**62, singles)]
    rnd += [int(x) for x in rng.integers(1, NEW_ROUND + 1, singles)]
    sigs += list(rng.integers(0, 2**32, (singles, P), dtype=np.uint32))
    hf += [None] * singles
    hr += [None] * singles
    fp, rnd, sigs = np.array(fp, np.int64), np.array(rnd, np.int32), np.array(sigs, np.uint32)
    has = rng.random(len(fp)) < 0.97                     # a few pages without a signature
    new = np.flatnonzero(rnd == NEW_ROUND)
    old = np.flatnonzero(rnd < NEW_ROUND)
    # refetches: an old page of the big family and the old page X of a family of its own
    # (X, X again this round with its text edited, a near copy of X) fetched again this round
    again = old[np.flatnonzero(has[old])[0]]
    x = int(rng.integers(-2**62, 2**62))
    x_sig = rng.integers(0, 2**32, P, dtype=np.uint32)
    fp, rnd, sigs, has = np.r_[fp, x], np.r_[rnd, 2], np.r_[sigs, x_sig[None, :]], np.r_[has, True]
    hf.append(None)
    hr.append(None)
    old = np.r_[old, len(fp) - 1]
    new_fp = np.r_[fp[new], fp[again], x, int(rng.integers(-2**62, 2**62))]
    new_sigs = np.r_[sigs[new], _copy(rng, sigs[again], 3)[None, :], _copy(rng, x_sig, 2)[None, :],
                     _copy(rng, x_sig, 4)[None, :]]
    new_t = _table(new_fp, np.full(len(new_fp), NEW_ROUND), new_sigs, np.r_[has[new], True, True, True])
    old_t = _table(fp[old], rnd[old], sigs[old], has[old],
                   [hf[i] for i in old], [hr[i] for i in old])
    return new_t, old_t


def _band_row_path(new_t, old_t, thr, cap):
    """EDGES and widest as NearClusters computed them before: band rows with signatures."""
    nb, keys = duplicates._band_rows(new_t, BANDS, ROWS, P, True)
    ob, _ = duplicates._band_rows(old_t, BANDS, ROWS, P, False, keep_keys=np.unique(keys))
    return clusters.candidate_edges([nb, ob], BANDS, ROWS, P, thr, cap)


def _page_path(new_t, old_t, thr, cap):
    nt = nearpass.page_table(new_t, P, (BANDS, ROWS))
    ks = np.unique(nearpass.page_band_keys(nt, P, (BANDS, ROWS)))
    ot = nearpass.page_table(old_t, P, (BANDS, ROWS), ks)
    assert ot.num_rows < old_t.num_rows                  # old pages sharing no key are left out
    return nearpass.near_edges([nt], [ot], BANDS, ROWS, P, thr, cap)


@pytest.mark.parametrize("thr", [0.0, 0.8, 0.9])
@pytest.mark.parametrize("cap", [0, 5, clusters.NEAR_CAP])
@pytest.mark.parametrize("packed", [True, False])
def test_page_pass_gives_the_band_row_edges_and_clusters(round_case, thr, cap, packed, monkeypatch):
    if not packed:      # a round too large for a pair's rank in one int64: the lexsort
        monkeypatch.setattr(nearpass, "_PACK_LIMIT", 0)
    new_t, old_t = round_case
    before, widest_before = _band_row_path(new_t, old_t, thr, cap)
    after, widest_after = _page_path(new_t, old_t, thr, cap)
    assert before.num_rows > 100 and widest_before >= min(cap or 150, 64)
    assert widest_after == widest_before
    assert after.equals(before)
    a, b = clusters.resolve_clusters(after), clusters.resolve_clusters(before)
    assert a.equals(b) and a.num_rows > 50
    # the planted cases are in it: pages joining old clusters, and the refetched page
    assert (np.asarray(a.column("cluster_round")) < NEW_ROUND).sum() > 10


def test_page_pass_of_a_round_without_old_pages_or_pairs():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**32, P, dtype=np.uint32)
    t = _table([5, 9, 7], [2, 2, 2], [base, _copy(rng, base, 2), rng.integers(0, 2**32, P, dtype=np.uint32)],
               [True, True, True])
    before, w0 = clusters.candidate_edges([duplicates._band_rows(t, BANDS, ROWS, P, True)[0]], BANDS, ROWS, P, 0.9)
    after, w1 = nearpass.near_edges([nearpass.page_table(t)], [], BANDS, ROWS, P, 0.9)
    assert after.equals(before) and (w0, w1) == (2, 2) and set(after.column("of_fp").to_pylist()) == {5}
    assert nearpass.near_edges([], [nearpass.page_table(t)], BANDS, ROWS)[0].num_rows == 0
    assert nearpass.page_table(t.slice(0, 1).set_column(3, "minhash", pa.nulls(1, F.MINHASH_TYPE))) is None


def test_near_clusters_step_gives_the_band_row_clusters(round_case):
    """The Beam step on bundles of tables (new and old split) = the band-row path's clusters."""
    new_t, old_t = round_case
    want = clusters.resolve_clusters(_band_row_path(new_t, old_t, 0.9, clusters.NEAR_CAP)[0])
    with TestPipeline(runner=FnApiRunner()) as p:
        def parts(label, t, k):
            return p | label >> beam.Create([t.slice(i, k) for i in range(0, t.num_rows, k)], reshuffle=False)
        got = {"new": parts("New", new_t, 97), "old": parts("Old", old_t, 131)} | step.NearClusters()

        def check(tables):
            assert len(tables) == 1 and tables[0].equals(want), tables
        assert_that(got, check)


def test_near_edges_takes_its_tables_over(round_case):
    """The lists handed in are emptied (their tables freed for the comparisons), and the
    edges are those of tables split into several chunks (signatures copied out of them)."""
    new_t, old_t = round_case
    nt = nearpass.page_table(new_t, P, (BANDS, ROWS))
    ot = nearpass.page_table(old_t, P, (BANDS, ROWS))
    whole, _ = nearpass.near_edges([nt], [ot], BANDS, ROWS, P, 0.8)
    half = nt.num_rows // 2
    new_parts, old_parts = [nt.slice(0, half), nt.slice(half)], [ot]
    split, _ = nearpass.near_edges(new_parts, old_parts, BANDS, ROWS, P, 0.8)
    assert new_parts == [] and old_parts == []
    assert whole.num_rows and split.equals(whole)


def test_near_clusters_on_the_callers_band_keys(round_case):
    """With `band_keys` (ApplyContentSeen's live keys: `oldside.new_band_keys` of the new
    tables) the step keeps the same old pages and gives the same clusters, without a key set
    of its own; other LSH parameters than the keys were made with are refused."""
    new_t, old_t = round_case
    nt = nearpass.page_table(new_t, P, (BANDS, ROWS))
    assert np.array_equal(np.unique(oldside.new_band_keys(new_t)),
                          np.unique(nearpass.page_band_keys(nt, P, (BANDS, ROWS))))
    want = clusters.resolve_clusters(_band_row_path(new_t, old_t, 0.9, clusters.NEAR_CAP)[0])
    p = TestPipeline(runner=FnApiRunner())
    new = p | "New" >> beam.Create([new_t.slice(i, 97) for i in range(0, new_t.num_rows, 97)],
                                   reshuffle=False)
    old = p | "Old" >> beam.Create([old_t.slice(i, 131) for i in range(0, old_t.num_rows, 131)],
                                   reshuffle=False)
    live = combined_side_input(new | "Keys" >> beam.Map(oldside.new_band_keys), "Live", sorted_union)
    got = {"new": new, "old": old} | "Near" >> step.NearClusters(band_keys=live)

    def check(tables):
        assert len(tables) == 1 and tables[0].equals(want) and want.num_rows > 50, tables
    assert_that(got, check)
    labels = transform_labels(p)
    assert any(label.startswith("Near/OldPages") for label in labels)
    assert not [label for label in labels if "BandKeySet" in label or "NewBandKeys" in label]
    p.run().wait_until_finish()
    with pytest.raises(ValueError, match="band_keys"):
        step.NearClusters(params=(8, 16), band_keys=live)
