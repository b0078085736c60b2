"""Host partitioning: hash(host) mod m and consistent hashing (strategies/partition)."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from strategies.partition import PARTITIONERS, get_partitioner, load_ratio

HOSTS = [f"host{i}.example{i % 97}.org" for i in range(100_000)]


@pytest.fixture(scope="module")
def hosts():
    return HOSTS


@pytest.mark.parametrize("m", range(2, 17))
def test_consistent_load_is_within_ten_per_cent_at_1000_virtual_nodes(hosts, m):
    owners = get_partitioner("consistent", m, virtual_nodes=1000).owners(hosts)
    assert load_ratio(owners, m) <= 1.10


def test_one_virtual_node_per_shard_is_very_uneven(hosts):
    ratios = [load_ratio(get_partitioner("consistent", m, virtual_nodes=1).owners(hosts), m)
              for m in (8, 16)]
    assert min(ratios) > 1.8, ratios


@pytest.mark.parametrize("m", [3, 8, 16])
def test_removing_a_shard_moves_only_its_hosts_under_consistent_hashing(hosts, m):
    before = get_partitioner("consistent", m).owners(hosts)
    after = get_partitioner("consistent", m, removed=(1,)).owners(hosts)
    moved = before != after
    assert not (moved & (before != 1)).any(), "a host of a surviving shard moved"
    assert (after != 1).all()
    assert 0.7 / m <= moved.mean() <= 1.3 / m


@pytest.mark.parametrize("m", [3, 8, 16])
def test_removing_a_shard_moves_almost_every_host_under_hash_mod(hosts, m):
    before = get_partitioner("hash_mod", m).owners(hosts)
    after = get_partitioner("hash_mod", m, removed=(1,)).owners(hosts)
    assert (before != after).mean() >= 0.9 * (m - 1) / m


def test_adding_a_shard_takes_hosts_only_for_the_new_shard(hosts):
    before = get_partitioner("consistent", 4).owners(hosts)
    after = get_partitioner("consistent", 5).owners(hosts)
    moved = before != after
    assert (after[moved] == 4).all()
    assert 0.15 <= moved.mean() <= 0.25


def test_a_removed_shard_that_comes_back_gets_exactly_its_hosts_back(hosts):
    whole = get_partitioner("consistent", 5).owners(hosts)
    again = get_partitioner("consistent", 5, removed=()).owners(hosts)
    assert np.array_equal(whole, again)


def test_weights_scale_a_shards_share(hosts):
    owners = get_partitioner("consistent", 3, weights=(1, 1, 2)).owners(hosts)
    share = np.bincount(owners, minlength=3) / len(hosts)
    assert share[2] == pytest.approx(0.5, abs=0.03)
    assert share[0] == pytest.approx(0.25, abs=0.03)


def test_hash_mod_is_even(hosts):
    assert load_ratio(get_partitioner("hash_mod", 16).owners(hosts), 16) < 1.05


@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_the_same_owner_in_every_python_process(name):
    sample = HOSTS[:2000]
    here = get_partitioner(name, 7).owners(sample).tolist()
    code = (f"from strategies.partition import get_partitioner; "
            f"print(get_partitioner({name!r}, 7).owners([f'host{{i}}.example{{i % 97}}.org' "
            f"for i in range(2000)]).tolist())")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        assert eval(out) == here


@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_partitioners_pickle(name):
    p = get_partitioner(name, 5, removed=(2,))
    q = pickle.loads(pickle.dumps(p))
    assert q == p and np.array_equal(q.owners(HOSTS[:500]), p.owners(HOSTS[:500]))
    assert 2 not in set(q.owners(HOSTS[:500]).tolist())


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(num_shards=0), "at least 1"),
    (dict(num_shards=3, removed=(3,)), "not one of 0..2"),
    (dict(num_shards=2, removed=(0, 1)), "every shard is removed"),
    (dict(num_shards=2, weights=(1,)), "1 weights for 2 shards"),
    (dict(num_shards=2, weights=(1, 0)), "positive"),
])
def test_unusable_arguments_are_refused(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        get_partitioner("consistent", **kwargs)


def test_unknown_partition_is_named():
    with pytest.raises(ValueError, match="unknown partition 'modulo'"):
        get_partitioner("modulo", 2)
