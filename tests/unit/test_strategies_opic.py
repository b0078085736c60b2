"""OPIC: cash conservation, estimates, and convergence towards PageRank."""
import numpy as np
import pyarrow as pa
import pytest

from strategies.graph import dedupe_edges, l1, pagerank
from strategies.opic import (OpicState, opic_distribute, opic_estimate, opic_init, opic_round,
                             opic_visit)
from strategies.ordering import get_ordering


def _graph(n=300, m=1500, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n, m)
    d = (s + 1 + rng.zipf(1.8, m)) % n          # skewed in-degrees, no self-loops
    keep = rng.random(n) < 0.9                   # ~10 % dangling pages
    use = keep[s]
    s, d = dedupe_edges(s[use], d[use], n)     # PageRank counts an edge once
    return s, d, n


@pytest.mark.parametrize("damping", [0.85, None])
def test_cash_is_conserved_over_many_steps(damping):
    s, d, n = _graph()
    st = opic_init(n, seeds=[0, 1, 2])
    rng = np.random.default_rng(1)
    for _ in range(2000):
        mask = rng.random(n) < 0.05
        st = opic_visit(st, mask, s, d, damping=damping)
        assert abs(st.total_cash - 1.0) < 1e-9
        assert abs((st.history + st.cash).sum() + st.virtual_history + st.virtual_cash
                   - (st.total_history + 1.0)) < 1e-9
    est = st.estimate()
    assert abs(est.sum() + (st.virtual_history + st.virtual_cash) / (st.total_history + 1)
               - 1.0) < 1e-9


def test_three_page_cash_flow_by_hand_and_the_order_it_gives():
    # A -> B, A -> C, B -> C ; A is the seed and holds all the cash; damping 0.85
    src, dst = np.array([0, 0, 1]), np.array([1, 2, 2])
    st = opic_init(3, seeds=[0])
    # visit A: its 1.0 goes to its history; 0.85 split over B and C; 0.15 to the virtual
    # page, which is visited at once and spreads it over the three pages (0.05 each)
    st = opic_visit(st, np.array([True, False, False]), src, dst, damping=0.85)
    assert st.history.tolist() == pytest.approx([1.0, 0.0, 0.0])
    assert st.cash.tolist() == pytest.approx([0.05, 0.425 + 0.05, 0.425 + 0.05])
    assert (st.virtual_cash, st.virtual_history) == pytest.approx((0.0, 0.15))
    # visit B (cash 0.475): 0.85 * 0.475 to C, 0.15 * 0.475 spread over the three
    st = opic_visit(st, np.array([False, True, False]), src, dst, damping=0.85)
    spread = 0.15 * 0.475 / 3
    assert st.history.tolist() == pytest.approx([1.0, 0.475, 0.0])
    assert st.cash.tolist() == pytest.approx([0.05 + spread, spread, 0.475 + 0.85 * 0.475 + spread])
    assert st.virtual_history == pytest.approx(0.15 + 0.15 * 0.475)
    assert abs(st.total_cash - 1.0) < 1e-9
    assert abs((st.history + st.cash).sum() + st.virtual_history - (st.total_history + 1.0)) < 1e-9
    # the opic ordering over a frontier with that cash: C (0.90), A (0.07), B (0.02)
    f = pa.table({"fp": pa.array([10, 11, 12], pa.int64()), "cash": st.cash})
    assert np.argsort(-get_ordering("opic").score(f), kind="stable").tolist() == [2, 0, 1]
    # importance estimate (H + C) / (G + 1), G = 1 + 0.475 + virtual history 0.22125
    g1 = 1.0 + 0.475 + 0.15 + 0.15 * 0.475 + 1.0
    assert st.estimate().tolist() == pytest.approx(
        [(1.0 + 0.05 + spread) / g1, (0.475 + spread) / g1, (0.475 + 0.85 * 0.475 + spread) / g1])


def test_one_visit_moves_cash_to_history_and_children():
    # 0 -> 1, 0 -> 2 ; 3 has no out-links
    cash = np.array([0.4, 0.1, 0.2, 0.3])
    c, h, vc, vh = opic_distribute(cash, np.zeros(4), np.array([1, 0, 0, 1], bool),
                                   np.array([0, 0]), np.array([1, 2]), damping=0.5,
                                   visit_virtual=False)
    assert h.tolist() == [0.4, 0, 0, 0.3]
    assert c.tolist() == pytest.approx([0.0, 0.1 + 0.1, 0.2 + 0.1, 0.0])
    assert vc == pytest.approx(0.2 + 0.3) and vh == 0.0
    # visiting the virtual page spreads its cash over the known pages
    c2, h2, vc2, vh2 = opic_distribute(cash, np.zeros(4), np.array([1, 0, 0, 1], bool),
                                       np.array([0, 0]), np.array([1, 2]), damping=0.5,
                                       known_mask=np.array([1, 1, 1, 0], bool))
    assert vc2 == 0.0 and vh2 == pytest.approx(0.5)
    assert c2.tolist() == pytest.approx([0.5 / 3, 0.2 + 0.5 / 3, 0.3 + 0.5 / 3, 0.0])


def test_only_edges_of_fetched_pages_move_cash():
    cash = np.array([0.5, 0.5])
    c, h, vc, _ = opic_distribute(cash, np.zeros(2), np.array([False, False]),
                                  np.array([0, 1]), np.array([1, 0]))
    assert c.tolist() == [0.5, 0.5] and h.tolist() == [0, 0] and vc == 0


def test_estimate_converges_to_pagerank_with_passes():
    s, d, n = _graph(400, 3000, seed=3)
    truth = pagerank(s, d, n, tol=1e-13)
    st = opic_init(n)
    errors = []
    for _ in range(30):                           # 30 passes, every page once per pass
        for chunk in np.array_split(np.arange(n), 8):
            mask = np.zeros(n, bool)
            mask[chunk] = True
            st = opic_visit(st, mask, s, d)
        est = st.cash + st.history
        errors.append(l1(est / est.sum(), truth))
    assert errors[-1] < 0.05 and errors[-1] < errors[4] < errors[0]


def test_state_grows_with_new_pages():
    st = OpicState(np.array([0.6, 0.4]), np.array([0.1, 0.0]), 0.0, 0.2)
    g = st.grow(4)
    assert g.cash.tolist() == [0.6, 0.4, 0, 0] and g.total_history == pytest.approx(0.3)
    assert np.allclose(opic_estimate(g.cash, g.history, g.total_history),
                       np.array([0.7, 0.4, 0, 0]) / 1.3)
    with pytest.raises(ValueError):
        opic_init(3, seeds=[])


def test_round_update_on_fingerprints_conserves_cash_with_unknown_targets():
    page_fp = np.array([500, -7, 42, 9])             # any int64 fps, any order
    st = opic_init(4, seeds=[0, 1])                  # 500 and -7 are the seeds
    cash, hist, vh = st.cash, st.history, 0.0
    # round 1: fetch both seeds; 500 links to 42 and to a filtered URL 77; -7 has no links
    cash, hist, vh = opic_round(page_fp, cash, hist, [500, -7], [500, 500], [42, 77],
                                virtual_history=vh)
    assert abs(cash.sum() - 1.0) < 1e-12
    assert hist.tolist() == [0.5, 0.5, 0.0, 0.0]
    assert cash[2] > cash[3] > 0                     # 42 got a link share, 9 only virtual
    # round 2: fetch 42 (links back to 500)
    cash, hist, vh = opic_round(page_fp, cash, hist, [42], [42], [500], virtual_history=vh)
    assert abs(cash.sum() - 1.0) < 1e-12
    est = opic_estimate(cash, hist, hist.sum() + vh)
    assert abs(est.sum() + vh / (hist.sum() + vh + 1) - 1.0) < 1e-12
