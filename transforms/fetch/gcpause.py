"""No full garbage collection while a bundle fetches (pure Python, no Beam).

A fetch is many threads, each one host's politeness chain of requests. Python's cyclic
garbage collector runs a full collection now and then, and a full collection holds the
interpreter lock while it walks every tracked object — up to ~130 ms in a 5 000-page round,
five times a round — so every chain stops for that long. The fetch and parse leave almost
no cyclic garbage (~2 objects per page, measured), so `full_collections_deferred` raises
only the oldest generation's threshold while a bundle fetches: young collections still run,
the full pass waits for the end of the bundle. Nested and concurrent uses restore the
thresholds once the last one ends.
"""
from __future__ import annotations

import contextlib
import gc
import threading

NEVER = 2**30          # a gen-2 threshold no count of young collections reaches

_lock = threading.Lock()
_state = {"depth": 0, "saved": None}   # the process's own GC settings, shared by its threads


@contextlib.contextmanager
def full_collections_deferred():
    """While inside: gen-0 and gen-1 collections as usual, no automatic gen-2 collection."""
    with _lock:
        if _state["depth"] == 0:
            _state["saved"] = gc.get_threshold()
            g0, g1, _ = _state["saved"]
            gc.set_threshold(g0, g1, NEVER)
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                gc.set_threshold(*_state["saved"])
                _state["saved"] = None
