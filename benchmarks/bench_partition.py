"""Host partitioning (issue #15): load balance and the hosts that move when a shard goes.

    .venv/bin/python -m benchmarks.bench_partition [--hosts 100000] [--max_shards 16]

For m = 2..max_shards shards it assigns `--hosts` synthetic host names with hash_mod and
with consistent hashing at 1 and 1 000 virtual nodes per shard, and prints

  load   max/mean hosts per shard (1.0 = perfectly even)
  moved  the share of all hosts whose shard changes when shard 0 is removed, and whether
         only the removed shard's hosts moved (consistent hashing's promise)

Not a test (tests/unit/test_partition.py holds the targets); run it by hand.
"""
from __future__ import annotations

import argparse

import numpy as np

from strategies.partition import get_partitioner, load_ratio


def figures(hosts, m, name, vnodes):
    before = get_partitioner(name, m, virtual_nodes=vnodes).owners(hosts)
    after = get_partitioner(name, m, removed=(0,), virtual_nodes=vnodes).owners(hosts)
    moved = before != after
    return load_ratio(before, m), float(moved.mean()), bool(not (moved & (before != 0)).any())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=100_000)
    ap.add_argument("--max_shards", type=int, default=16)
    args = ap.parse_args(argv)
    hosts = [f"host{i}.example{i % 97}.org" for i in range(args.hosts)]
    print(f"{args.hosts} hosts; 'moved' = share of hosts whose shard changes when shard 0 is removed")
    print(f"{'m':>3} | {'hash_mod load':>13} {'moved':>6} | {'consistent×1 load':>17} {'moved':>6} "
          f"| {'consistent×1000 load':>20} {'moved':>6} {'only its':>8} | {'1/m':>5} {'(m-1)/m':>7}")
    for m in range(2, args.max_shards + 1):
        hm = figures(hosts, m, "hash_mod", 1)
        c1 = figures(hosts, m, "consistent", 1)
        ck = figures(hosts, m, "consistent", 1000)
        print(f"{m:>3} | {hm[0]:>13.3f} {hm[1]:>6.3f} | {c1[0]:>17.3f} {c1[1]:>6.3f} "
              f"| {ck[0]:>20.3f} {ck[1]:>6.3f} {str(ck[2]):>8} | {1 / m:>5.3f} {(m - 1) / m:>7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
