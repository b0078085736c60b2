"""Host partitioners: which crawler fleet (shard) owns a host. The registry.

A partitioner is one module with a `Partitioner` subclass and one line in PARTITIONERS.

    from strategies.partition import get_partitioner
    part = get_partitioner("consistent", num_shards=3, removed=(1,), virtual_nodes=1000)
    part.owners(["a.example:80", "b.example:80"])   # int32 shard per host
"""
from __future__ import annotations

from strategies.partition.base import Partitioner
from strategies.partition.consistent import Consistent
from strategies.partition.hash_mod import HashMod

PARTITIONERS: dict[str, type] = {
    "consistent": Consistent,
    "hash_mod": HashMod,
}


def get_partitioner(name: str, num_shards: int, removed=(), weights=(),
                    virtual_nodes: int = 1000) -> Partitioner:
    try:
        cls = PARTITIONERS[name]
    except KeyError:
        raise ValueError(f"unknown partition {name!r}; known: {', '.join(sorted(PARTITIONERS))}") from None
    return cls(num_shards, removed=removed, weights=weights, virtual_nodes=virtual_nodes)


def load_ratio(owners, num_shards, live=None) -> float:
    """max/mean of hosts per live shard."""
    import numpy as np
    live = list(range(num_shards)) if live is None else list(live)
    counts = np.bincount(np.asarray(owners), minlength=num_shards)[live]
    return float(counts.max() / counts.mean())


__all__ = ["PARTITIONERS", "Partitioner", "get_partitioner", "load_ratio"]
