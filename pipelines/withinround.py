"""The order a round fetches its fetch list in, for the evaluator's replay.

A round fetches all its hosts at once, each host through its URLs in list order at its
politeness pace; the replay (evaluate.simulate, within_round="hosts") orders a batch the
same way, so its AUC can be held to a real crawl's (tests/e2e/test_round_order_agreement.py).
"""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from transforms.generate.select import rank_within_group


def round_fetch_order(hosts, host_seconds=None) -> np.ndarray:
    """Positions of a fetch list (in generate's order) in the order a round fetches them:
    hosts run concurrently, each through its own URLs in list order, so a URL's time is
    its rank within its host times the host's seconds per fetch (`host_seconds`, default:
    every host at the same pace); ties keep the list's order."""
    hosts = pa.chunked_array([hosts]) if isinstance(hosts, pa.Array) else hosts
    codes = pc.dictionary_encode(hosts).combine_chunks()
    rank = rank_within_group(codes.indices.fill_null(-1).to_numpy(zero_copy_only=False))
    if not host_seconds:
        return np.argsort(rank, kind="stable")
    usual = min(host_seconds.values())        # a host not named goes at the usual pace
    pace = np.array([host_seconds.get(h, usual) for h in codes.dictionary.to_pylist()] or [usual])
    when = rank * pace[codes.indices.fill_null(0).to_numpy(zero_copy_only=False)]
    return np.argsort(when, kind="stable")


def host_pace(crawl_delays: dict, delay_per_host: float, fetch_seconds: float) -> dict:
    """{host: seconds per fetch} for the replay: a host is fetched at most once per
    max(--delay_per_host, its robots Crawl-delay), and no faster than one fetch takes."""
    return {h: max(delay_per_host, d or 0.0, fetch_seconds) for h, d in crawl_delays.items()}
