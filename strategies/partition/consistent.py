"""Consistent hashing (UbiCrawler; seed 000): hosts and shards on one 64-bit ring.

Each live shard s puts round(virtual_nodes × weight[s]) points on the ring (the hash of
"shard-s/vnode-v"); a host belongs to the first point at or after its own hash, wrapping
round. Removing a shard takes only its points away, so only its hosts move, each to the
next point clockwise; adding one takes ≈1/(m+1) of the hosts, from all the others. With
one point per shard the arcs are very uneven (max/mean ≈ 3.3 for 16 shards); with
1 000 they are within a few per cent (benchmarks/bench_partition.py prints both).
"""
from __future__ import annotations

import numpy as np

from strategies.hashing import text_hash64
from strategies.partition.base import Partitioner


class Consistent(Partitioner):
    name = "consistent"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        labels, shards = [], []
        for s in self.live:
            n = max(1, round(self.virtual_nodes * self.weights[s]))
            labels += [f"shard-{s}/vnode-{v}" for v in range(n)]
            shards += [s] * n
        points = text_hash64(labels)
        order = np.argsort(points, kind="stable")
        self.points = points[order]
        self.point_shard = np.asarray(shards, dtype=np.int32)[order]

    def owners_of_hashes(self, hashes):
        i = np.searchsorted(self.points, np.asarray(hashes, dtype=np.uint64), side="left")
        return self.point_shard[i % len(self.points)]

    def __eq__(self, other):
        return (type(self) is type(other) and self.num_shards == other.num_shards
                and self.removed == other.removed and self.weights == other.weights
                and self.virtual_nodes == other.virtual_nodes)

    __hash__ = None
