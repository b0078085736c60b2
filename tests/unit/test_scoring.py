"""The round's OPIC state update (transforms.score.opicstate) against cash flows worked out
by hand: fingerprints, a link to a URL outside the known pages, a state read back from
Parquet, and the fetch order the opic ordering then gives."""
import numpy as np
import pyarrow as pa
import pytest

from schemas import tables
from strategies.ordering import get_ordering
from tests.unit.frontier_rows import frontier
from transforms.generate.select import select
from transforms.score import opicstate as scoring

D = 0.85


def _pages(fps):
    return frontier([dict(fp=fp, url=f"http://a/{fp}", host="a") for fp in fps])


def _by_fp(table, col):
    return dict(zip(table.column("fp").to_pylist(), table.column(col).to_pylist()))


def _check_conserved(state):
    real = [fp != tables.OPIC_VIRTUAL_FP for fp in state.column("fp").to_pylist()]
    cash = np.asarray(state.column("cash").to_pylist())
    hist = np.asarray(state.column("history").to_pylist())
    assert abs(cash.sum() - 1.0) < 1e-9
    # Σ(H + C) over real pages + virtual history = G + 1
    g = hist.sum()
    assert abs((hist + cash)[real].sum() + hist[~np.asarray(real)].sum() - (g + 1.0)) < 1e-9


def _fetch_order(f):
    f = f.set_column(f.schema.get_field_index("score"), "score", pa.array(get_ordering("opic").score(f)))
    return select(f, f.num_rows, f.num_rows).column("fp").to_pylist()


def test_opic_starts_with_one_unit_of_cash_spread_over_known_pages():
    f2, state = scoring.update_opic(_pages([11, 12, 13, 14]), tables.OPIC.empty_table(), [], [], [])
    assert f2.column("cash").to_pylist() == pytest.approx([0.25] * 4)
    assert _by_fp(state, "history") == {tables.OPIC_VIRTUAL_FP: 0.0, 11: 0.0, 12: 0.0, 13: 0.0, 14: 0.0}
    _check_conserved(state)


def test_opic_cash_flows_as_worked_out_by_hand_over_two_rounds():
    _, state = scoring.update_opic(_pages([11, 12, 13]), tables.OPIC.empty_table(), [], [], [])
    # round 1: 11 (cash 1/3) is fetched; it links to 12, to a new page 21 and to 99, a URL
    # that is not a known page (filtered): three out-links, each worth 0.85 * 1/3 / 3; the
    # share of 99 and the 0.15 * 1/3 not passed on go to the virtual page, which spreads
    # them over the 4 known pages (11, 12, 13, 21)
    f1, state = scoring.update_opic(_pages([12, 13, 21]), state, [11], [11, 11, 11], [12, 21, 99])
    share = D / 3 / 3
    spread = (share + (1 - D) / 3) / 4
    cash = _by_fp(state, "cash")
    hist = _by_fp(state, "history")
    assert cash[11] == pytest.approx(spread)
    assert cash[12] == pytest.approx(1 / 3 + share + spread)
    assert cash[13] == pytest.approx(1 / 3 + spread)
    assert cash[21] == pytest.approx(share + spread)
    assert hist[11] == pytest.approx(1 / 3) and hist[12] == hist[13] == hist[21] == 0.0
    assert hist[tables.OPIC_VIRTUAL_FP] == pytest.approx(4 * spread)
    _check_conserved(state)
    # the frontier carries the state's cash; the richest page is fetched first
    assert _by_fp(f1, "cash") == pytest.approx({fp: cash[fp] for fp in (12, 13, 21)})
    assert _fetch_order(f1) == [12, 13, 21]
    # round 2, from a state read back from Parquet: 12 is fetched and links only to 13
    c12 = cash[12]
    f2, state2 = scoring.update_opic(_pages([13, 21]), pa.Table.from_pylist(state.to_pylist(), schema=tables.OPIC),
                                     [12], [12], [13])
    spread2 = (1 - D) * c12 / 4
    cash2 = _by_fp(state2, "cash")
    assert cash2[12] == pytest.approx(spread2)
    assert cash2[13] == pytest.approx(cash[13] + D * c12 + spread2)
    assert cash2[21] == pytest.approx(cash[21] + spread2)
    assert cash2[11] == pytest.approx(cash[11] + spread2)
    assert _by_fp(state2, "history")[12] == pytest.approx(c12)
    assert _by_fp(state2, "history")[tables.OPIC_VIRTUAL_FP] == pytest.approx(4 * spread + 4 * spread2)
    _check_conserved(state2)
    assert _fetch_order(f2) == [13, 21]
