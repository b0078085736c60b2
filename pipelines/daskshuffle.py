"""A GroupByKey's shuffle on dask in 2P tasks for P partitions, not dask's ~2P + P² (issue #49).

`Bag.groupby(shuffle="tasks")` into P partitions is, per shuffle, P `shuffle-group` tasks,
P² `shuffle-split` tasks (one per piece of each input partition, so that a piece moves to
its reader alone) and P joins: on two workers 8 tasks, and a round has about a dozen
shuffles (the fetch list by host, URL-seen by bucket, the keyed combines, the commit): ~100
of a round's ~430 tasks, each a scheduler round trip of milliseconds, for a few hundred KB
of data. Here each input partition is split into P pieces by one task and each output
partition is one task that takes the splits of every input partition and keeps its piece
(and runs what follows the grouping, `finish`): 2P tasks. The price: a join receives every split whole, not only
its piece, so a shuffle moves (P-1)·D bytes between workers instead of (P-1)/P·D. Measured
on bench50k rounds of 5 000 pages: ~0.8 MB a round through all shuffles (their rows are
table references and accumulators, not pages), so up to MAX_PARTITIONS it is the cheaper
side; beyond, dask's own shuffle is used.

Keys go to pieces by a hash that is the same in every worker process (Python's `hash` of a
str is not: each process salts it), as dask's own shuffle does with `tokenize`.
"""
import zlib

MAX_PARTITIONS = 4   # beyond: dask's shuffle (P² small tasks, each piece moved alone)

_PLAIN = (str, bytes, int, float, bool, type(None))


def shuffled(bag, partitions, name, finish):
    """`bag` of (key, value) -> a bag of `partitions` partitions, each `finish` of a list of
    (key, [value, ...]), each key in one partition (`finish` runs in the join's task: a
    step of its own after it would be a task of its own). `name`: the step's task-group
    name (NAME.Split, NAME.Join)."""
    import dask
    import dask.bag as db
    from dask.highlevelgraph import HighLevelGraph
    if partitions > MAX_PARTITIONS:
        if bag.npartitions != partitions:
            bag = bag.repartition(partitions)
        return bag.groupby(_key, shuffle="tasks").map(_values_of_group).map_partitions(finish)
    splits = bag.map_partitions(_split, partitions, token=f"{name}.Split")
    join = f"{name}.Join-{dask.base.tokenize(splits.name, finish)}"
    layer = {(join, j): (_join, j, finish, *[(splits.name, i) for i in range(splits.npartitions)])
             for j in range(partitions)}
    return db.Bag(HighLevelGraph.from_collections(join, layer, dependencies=[splits]), join, partitions)


def stable_hash(key) -> int:
    """A key's hash, the same in every process: CRC-32 of the repr of a str, bytes, number,
    None or a tuple of those; dask's tokenize of anything else."""
    if isinstance(key, _PLAIN) or (isinstance(key, tuple) and all(isinstance(k, _PLAIN) for k in key)):
        return zlib.crc32(repr(key).encode("utf-8", "surrogatepass"))
    from dask.base import tokenize
    return int(tokenize(key), 16)


def _key(item):
    return item[0]


def _values_of_group(group):
    k, items = group
    return k, [item[1] for item in items]


def _split(items, partitions):
    """One input partition -> [its (key, value) pairs for output partition j, for each j]
    (one bag element: the list of the P pieces)."""
    pieces = [[] for _ in range(partitions)]
    for item in items:
        pieces[stable_hash(item[0]) % partitions].append(item)
    return [pieces]


def _join(j, finish, *splits):
    """Output partition j: piece j of every split, grouped by key, then `finish`ed."""
    groups = {}
    for split in splits:
        for pieces in split:
            for k, v in pieces[j]:
                groups.setdefault(k, []).append(v)
    return finish(list(groups.items()))
