"""What every host partitioner is: hosts -> the shard (crawler fleet) that owns them.

A partitioner is a pure, picklable function of (host, the shards alive): the same answer
on every worker of every fleet and in every Python process, because hosts are hashed with
`strategies.hashing.text_hash64` (blake2b), never with the salted built-in `hash()`.
The key is the host (the politeness unit): one host's URLs are always one fleet's, so
per-host politeness needs no coordination between fleets.
"""
from __future__ import annotations

import numpy as np

from strategies.hashing import text_hash64


class Partitioner:
    """Assigns hosts to shards 0..num_shards-1, minus `removed` (dead or retired shards)."""

    name = "base"

    def __init__(self, num_shards: int, removed=(), weights=(), virtual_nodes: int = 1000):
        if num_shards < 1:
            raise ValueError("num_shards must be at least 1")
        removed = tuple(sorted(set(int(r) for r in removed)))
        bad = [r for r in removed if not 0 <= r < num_shards]
        if bad:
            raise ValueError(f"removed shard {bad[0]} is not one of 0..{num_shards - 1}")
        live = tuple(s for s in range(num_shards) if s not in removed)
        if not live:
            raise ValueError("every shard is removed; at least one must stay")
        weights = tuple(float(w) for w in weights)
        if weights and len(weights) != num_shards:
            raise ValueError(f"{len(weights)} weights for {num_shards} shards")
        if any(w <= 0 for w in weights):
            raise ValueError("weights must be positive")
        if virtual_nodes < 1:
            raise ValueError("virtual_nodes must be at least 1")
        self.num_shards, self.removed, self.live = num_shards, removed, live
        self.weights = weights or (1.0,) * num_shards
        self.virtual_nodes = int(virtual_nodes)

    def owners_of_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Shard (int32) of each 64-bit host hash (uint64)."""
        raise NotImplementedError

    def owners(self, hosts) -> np.ndarray:
        """Shard (int32) of each host; each distinct host is hashed once."""
        hosts = list(hosts)
        if not hosts:
            return np.zeros(0, dtype=np.int32)
        distinct, inverse = np.unique(np.asarray(hosts, dtype=object).astype(str), return_inverse=True)
        return self.owners_of_hashes(text_hash64(distinct))[inverse].astype(np.int32)

    def owner(self, host: str) -> int:
        return int(self.owners([host])[0])

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __repr__(self):
        return (f"{type(self).__name__}(num_shards={self.num_shards}, removed={self.removed}, "
                f"virtual_nodes={self.virtual_nodes})")
