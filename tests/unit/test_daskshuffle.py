"""Our Dask runner's GroupByKey shuffle (pipelines/daskshuffle.py): into P partitions in at
most 2P tasks (dask's own: 2P + P²), each key in exactly one partition, placed by a hash
every worker process computes alike."""
import os
import subprocess
import sys

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import daskfix, daskshuffle

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _grouped(partitions, n=40):
    from apache_beam.runners.dask.overrides import dask_overrides
    p = beam.Pipeline(options=PipelineOptions([]))
    pairs = [p | f"C{i}" >> beam.Create([(f"host{i % 7}", i)]) for i in range(n)] | beam.Flatten()
    pairs | "Group" >> beam.GroupByKey()
    p.replace_all(dask_overrides())
    _, [grouped] = daskfix.translate(p, {}, p.options, partitions=partitions)
    return grouped


def _tasks(bag):
    import dask
    from distributed.utils import key_split
    (opt,) = dask.optimize(bag)
    return [key_split(k) for k in dict(opt.__dask_graph__())]


@pytest.mark.parametrize("partitions", [2, 3, daskshuffle.MAX_PARTITIONS + 1])
def test_a_group_by_key_puts_each_key_with_all_its_values_in_one_partition(partitions):
    grouped = _grouped(partitions)
    assert grouped.npartitions == partitions
    import dask
    parts = dask.compute(*grouped.to_delayed(), scheduler="sync")
    keys = [k for part in parts for k, _ in part]
    assert sorted(keys) == [f"host{i}" for i in range(7)]      # each key once: in one partition
    got = {k: sorted(v) for part in parts for k, v in part}
    assert got == {f"host{h}": [i for i in range(40) if i % 7 == h] for h in range(7)}


def test_a_group_by_key_into_two_partitions_is_four_tasks():
    tasks = _tasks(_grouped(2).map_partitions(len))   # (as the round computes its leaves)
    assert not [t for t in tasks if t.startswith("shuffle")]   # dask's shuffle: 2 + 2 + 4 tasks
    assert len([t for t in tasks if t.endswith(".Split")]) <= 2
    assert len([t for t in tasks if t.startswith("Group.GroupByKey.Join")]) == 2
    # the flatten before it 2, 2 splits, 2 joins, 2 outputs (dask's shuffle: 2 + 4 + 2 between)
    assert len(tasks) == 8 + tasks.count("from_sequence")


def test_the_hash_that_places_a_key_is_the_same_in_every_process():
    keys = ["site1.simweb.test", b"\x00\x01", 123456789, ("a", 2), None]
    here = [daskshuffle.stable_hash(k) for k in keys]
    code = ("from pipelines import daskshuffle; "
            f"print([daskshuffle.stable_hash(k) for k in {keys!r}])")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": REPO}).stdout
        assert out.strip() == repr(here)
