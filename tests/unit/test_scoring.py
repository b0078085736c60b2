import numpy as np
import pyarrow as pa

from transforms.score import opicstate as scoring
from schemas import tables
from tests.unit.frontier_rows import frontier


def _total_cash(state):
    return float(np.sum(state.column("cash").to_numpy()))


def test_opic_starts_with_one_unit_of_cash_spread_over_known_pages():
    f = frontier([dict(fp=fp, url=f"u{fp}", host="a") for fp in (11, 12, 13, 14)])
    f2, state = scoring.update_opic(f, tables.OPIC.empty_table(), [], [], [])
    assert np.allclose(f2.column("cash").to_numpy(), 0.25)
    assert abs(_total_cash(state) - 1.0) < 1e-12


def test_opic_cash_is_conserved_and_flows_along_fetched_pages_links():
    f = frontier([dict(fp=fp, url=f"u{fp}", host="a") for fp in (11, 12, 13)])
    _, state = scoring.update_opic(f, tables.OPIC.empty_table(), [], [], [])
    # round 1: 11 fetched, links to 12 and to a new page 21; 11 leaves the frontier
    f1 = frontier([dict(fp=fp, url=f"u{fp}", host="a") for fp in (12, 13, 21)])
    f1, state = scoring.update_opic(f1, state, [11], [11, 11], [12, 21])
    cash = dict(zip(state.column("fp").to_pylist(), state.column("cash").to_pylist()))
    hist = dict(zip(state.column("fp").to_pylist(), state.column("history").to_pylist()))
    assert abs(_total_cash(state) - 1.0) < 1e-9
    assert hist[11] > 0 and cash[12] > cash[13] and cash[21] > 0
    by_fp = dict(zip(f1.column("fp").to_pylist(), f1.column("cash").to_pylist()))
    assert by_fp[12] == cash[12] and by_fp[21] == cash[21]
    # round 2: a state read back from Parquet continues where it stopped
    f2 = frontier([dict(fp=fp, url=f"u{fp}", host="a") for fp in (13, 21)])
    _, state2 = scoring.update_opic(f2, pa.Table.from_pylist(state.to_pylist(), schema=tables.OPIC),
                                    [12], [12], [13])
    assert abs(_total_cash(state2) - 1.0) < 1e-9
