"""OPIC state across rounds: cash and history updated with a round's fetches and out-links (pure)."""
import numpy as np
import pyarrow as pa

from schemas import tables
from strategies.opic import opic_round
from transforms.urls.fpsets import sorted_unique


def cat(arrays):
    return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)


def column(parts, name):
    return cat([t.column(name).to_numpy(zero_copy_only=False) for t in parts if t is not None and t.num_rows])


def update_opic(frontier, prev_opic, fetched_fp, src_fp, dst_fp):
    """(frontier with cash/history filled, new OPIC table) after one round's fetches.

    Pages: every page the previous state knew, plus this round's frontier and fetches.
    A crawl without OPIC state yet (round 0, or a strategy switch) starts with one unit of
    cash spread evenly over the pages it knows.
    """
    prev_fp = prev_opic.column("fp").to_numpy(zero_copy_only=False)
    is_virtual = prev_fp == tables.OPIC_VIRTUAL_FP
    vhist = float(prev_opic.column("history").to_numpy(zero_copy_only=False)[is_virtual].sum())
    known_fp = prev_fp[~is_virtual]
    page_fp = sorted_unique(cat([known_fp, frontier.column("fp").to_numpy(zero_copy_only=False),
                                 np.asarray(fetched_fp, np.int64)]))
    cash = np.zeros(len(page_fp))
    history = np.zeros(len(page_fp))
    if len(known_fp):
        pos = np.searchsorted(page_fp, known_fp)
        cash[pos] = prev_opic.column("cash").to_numpy(zero_copy_only=False)[~is_virtual]
        history[pos] = prev_opic.column("history").to_numpy(zero_copy_only=False)[~is_virtual]
    elif len(page_fp):
        cash[:] = 1.0 / len(page_fp)
    cash, history, vhist = opic_round(page_fp, cash, history, fetched_fp, src_fp, dst_fp,
                                      virtual_history=vhist)
    pos = np.searchsorted(page_fp, frontier.column("fp").to_numpy(zero_copy_only=False))
    frontier = frontier.set_column(frontier.schema.get_field_index("cash"), "cash", pa.array(cash[pos]))
    frontier = frontier.set_column(frontier.schema.get_field_index("history"), "history",
                                   pa.array(history[pos]))
    state = pa.Table.from_arrays(
        [pa.array(np.r_[tables.OPIC_VIRTUAL_FP, page_fp], pa.int64()), pa.array(np.r_[0.0, cash]),
         pa.array(np.r_[vhist, history])], schema=tables.OPIC)
    return frontier, state
