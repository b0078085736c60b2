"""hash(host) mod m (seeds 000, 002, 004): the peer-to-peer crawlers' split.

Even and stateless, but m is the number of live shards: when one is removed (or added),
a host keeps its shard only if its hash gives the same remainder mod m±1, so about
(m-1)/m of all hosts move (seed 000: "几乎所有任务都需要重新进行分配").
"""
from __future__ import annotations

import numpy as np

from strategies.partition.base import Partitioner


class HashMod(Partitioner):
    name = "hash_mod"

    def owners_of_hashes(self, hashes):
        live = np.asarray(self.live, dtype=np.int32)
        return live[(np.asarray(hashes, dtype=np.uint64) % np.uint64(len(live))).astype(np.int64)]
