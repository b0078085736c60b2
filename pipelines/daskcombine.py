"""A Beam CombinePerKey on dask, lifted: combined inside each partition first, then only
the accumulators are grouped (pipelines/daskfix.translate uses it; issue #49).

Beam's DaskRunner runs a CombinePerKey as its expansion: a GroupByKey of every value, then
the CombineFn over each key's values. On more than one partition that is a task shuffle of
all the values (per GroupByKey 2P + P² tasks for P partitions), and a round has about ten
combines whose result is ONE value (CombineGlobally: sums, key sets for side inputs): each
shuffled its input into P partitions of which one holds the key and the others are empty,
and every step after it ran P tasks, P-1 of them on nothing. Lifted, as Beam's Fn API
runners and Dataflow run a combine:

- each partition's values are added into one accumulator per key, in the task that made
  them (fused by dask: no task of its own);
- a CombineGlobally's accumulators are merged in ONE task into one partition: no shuffle,
  and the steps after it run one task;
- a keyed CombinePerKey shuffles the accumulators (one per key and partition, not every
  value) into the same partitions as a GroupByKey, and merges each key's there.

Only where the result is the same as the expansion's: a `CombineFn` (or a callable Beam
wraps in one) with no extra arguments or side inputs, on globally windowed input; any other
combine is translated as its expansion (`lifted` returns None).
"""
import dataclasses


def lifted(node, input_bag, partitions, name, select=None):
    """The output bag of CombinePerKey `node` over `input_bag`, lifted; None when the combine
    must run as its expansion (see the module). `name`: the step's task-group name; its
    tasks are NAME.Partial (fused into the task before it) and NAME.Merge. `select`: what the
    combine takes of each of `input_bag`'s partitions (one output of a multi-output ParDo),
    or None: all."""
    from apache_beam.transforms import core
    from apache_beam.transforms.window import GlobalWindows
    transform = node.transform
    if type(transform) is not core.CombinePerKey or transform.args or transform.kwargs or node.side_inputs:
        return None
    main_input = next(iter(node.main_inputs.values()), None)
    windowing = getattr(main_input, "windowing", None)
    if windowing is None or not isinstance(windowing.windowfn, GlobalWindows):
        return None
    fn = core.CombineFn.maybe_from_callable(transform.fn)
    partial = input_bag.map_partitions(_partial, fn, select, token=f"{name}.Partial")
    if _is_global(node) or not partitions:
        import dask
        import dask.bag as db
        merged = dask.delayed(_merge_all)(fn, *partial.to_delayed(optimize_graph=False),
                                          dask_key_name=f"{name}.Merge-{dask.base.tokenize(partial.name)}")
        return db.from_delayed([merged])
    from pipelines import daskshuffle
    return daskshuffle.shuffled(partial, partitions, name, _MergeGroups(fn))


def _is_global(node):
    """Is this CombinePerKey the one inside a CombineGlobally (one key: None)?"""
    from apache_beam.transforms import core
    parent = getattr(node, "parent", None)
    return parent is not None and isinstance(parent.transform, core.CombineGlobally)


def _partial(items, fn, select=None):
    """One partition: [(key, accumulator of its values in this partition)]."""
    if select is not None:
        items = select(items)
    values = {}
    for k, v in items:
        values.setdefault(k, []).append(v)
    fn.setup()
    try:
        return [(k, fn.compact(fn.add_inputs(fn.create_accumulator(), vs))) for k, vs in values.items()]
    finally:
        fn.teardown()


def _merge(fn, accumulators_by_key):
    fn.setup()
    try:
        return [(k, fn.extract_output(fn.merge_accumulators(accs))) for k, accs in accumulators_by_key.items()]
    finally:
        fn.teardown()


def _merge_all(fn, *partials):
    """Every partition's (key, accumulator) pairs -> (key, output), in one task."""
    accs = {}
    for part in partials:
        for k, acc in part:
            accs.setdefault(k, []).append(acc)
    return _merge(fn, accs)


@dataclasses.dataclass(frozen=True)
class _MergeGroups:
    """A partition of (key, [accumulator, ...]) from the shuffle -> (key, output)s."""
    fn: object

    def __call__(self, groups):
        return _merge(self.fn, dict(groups))
