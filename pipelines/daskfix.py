"""Beam 2.77's DaskRunner translation, corrected: six bugs (docs/beam-dask-bugs.md).

`apache_beam.runners.dask.dask_runner.DaskRunner` turns each Beam primitive into a dask bag
and submits the graph to a `dask.distributed` cluster. As shipped (2.77) it gets six things
wrong that a real pipeline meets, the round among them; `translate` here builds the graph
without them, and `pipelines.daskrunner.DaskRunner` (the runner a user names with
`--runner`) submits it:

1. Multi-output ParDos: every output lands in ONE bag (bags are keyed by the producing
   transform), so a consumer of a tagged output gets the main output's elements too.
   Here each output PCollection gets its own bag, filtered by tag.
2. Only the LAST transform's bag is computed: every branch that does not lead to it never
   runs (file sinks' finalisation, the round's other tables). Here every leaf is computed,
   in one graph, so shared upstream work runs once.
3. Side inputs are computed by iterating a bag INSIDE the consuming task, which recomputes
   the side input's whole upstream graph there (fetching pages again). Here a side input is
   a dependency of the task in the same graph (the same keys: dask computes it once).
4. A DoFn's side-input arguments are the `AsSingleton`/`AsList` objects themselves
   (`raw_side_inputs`), not their values. Here the ParDo's placeholders are passed.
5. Outputs of `finish_bundle` are dropped (the results are taken before it runs). Here
   they are taken after it.
6. One output receiver is shared by every partition of a ParDo, so a task's results hold
   those of the partitions that ran before it in the same worker. Here each partition has
   its own.

Beyond the bugs, the number of tasks: Beam's translation keeps every partition a Flatten
concatenates and shuffles each GroupByKey over all of them, so a round of a few pages was
~7 000 dask tasks (each scheduled, pickled and sent apart), 180 s of a 185 s round. Here a
PCollection has at most `partitions` partitions (the cluster's worker threads, or
`--dask_npartitions`): a Flatten's result is repartitioned down to it, and a GroupByKey
shuffles into exactly that many (so a step after it, e.g. the fetch, has work for every
worker). A CombinePerKey is lifted (pipelines/daskcombine.py: combined in each partition, a
CombineGlobally merged in one task into one partition, without a shuffle), and a ParDo
consuming one output of a multi-output ParDo selects it inside its own task (`_Select`), not
through a `filter` task per output: on two workers a bench50k round of 5 000 pages went from
559 dask tasks to 346 (issue #49).

The round is the same pipeline on every runner: this is the runner's translation, not a
Dask code path in the round. Metrics are still unsupported by the DaskRunner (the report
then has no `write` time split).
"""
import dataclasses
import re

from pipelines import daskcombine, daskshuffle

def _windowed(item, window_fn):
    from apache_beam.runners.dask.transform_evaluator import get_windowed_value
    return get_windowed_value(item, window_fn)


def _concat(*parts):
    return [x for part in parts for x in part]


@dataclasses.dataclass
class _SideValues:
    """A side input's computed elements, as the windowed iterable SideInputMap reads."""
    values: list
    window_fn: object

    def __iter__(self):
        for v in self.values:
            yield _windowed(v, self.window_fn)


def _split_sides(sizes, parts):
    """The side inputs' values from their partitions, given one after the other (`sizes`:
    how many partitions each side input has)."""
    out, at = [], 0
    for n in sizes:
        out.append(_concat(*parts[at:at + n]))
        at += n
    return out


@dataclasses.dataclass(frozen=True)
class _Select:
    """One output of a multi-output ParDo's partition (whose elements are the main output's
    values and `TaggedOutput`s), selected inside the task that consumes it: no `filter` task
    of its own between the two (tag None: the main output)."""
    tag: object

    def __call__(self, items):
        if self.tag is None:
            return [v for v in items if _is_main(v)]
        return [_untag(v) for v in items if _has_tag(self.tag, v)]


def _apply_dofn(items, fn, label, window_fn, args, kwargs, side_specs, side_sizes, options, select, *side_parts):
    """One bag partition through the DoFn (Beam's apply_dofn_to_bundle, with side inputs
    given as computed values and a receiver of its own), in a worker whose filesystems get
    the pipeline's options first (s3:// endpoint and keys: pipelines.storage). The elements
    are windowed here and the side inputs' partitions are the task's own arguments, not
    tasks of their own: a dask task costs ms of scheduling whatever it does."""
    from pipelines import storage
    storage.use(options)
    from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler
    from apache_beam.runners.dask.transform_evaluator import OneReceiver
    from apache_beam.transforms.core import DoFn
    from apache_beam.transforms.sideinputs import SideInputMap
    receivers = OneReceiver()
    if select is not None:
        items = select(items)
    side_inputs = [SideInputMap(cls, options, _SideValues(values, mapping))
                   for (cls, options, mapping), values in zip(side_specs, _split_sides(side_sizes, side_parts))]
    invoker = DoFnInvoker.create_invoker(
        DoFnSignature(fn),
        _OutputHandler(window_fn=window_fn, main_receivers=receivers[None], tagged_receivers=receivers,
                       per_element_output_counter=None, output_batch_converter=None,
                       process_yields_batches=False, process_batch_yields_elements=False),
        context=DoFnContext(label, state=None), side_inputs=side_inputs, input_args=args,
        input_kwargs=kwargs, user_state_context=None, bundle_finalizer_param=DoFn.BundleFinalizerParam())
    invoker.invoke_setup()
    invoker.invoke_start_bundle()
    for item in items:
        invoker.invoke_process(_windowed(item, window_fn))
    invoker.invoke_finish_bundle()
    invoker.invoke_teardown()
    # as Beam's evaluator: main outputs as plain values, tagged ones as TaggedOutput(tag, windowed)
    return [v if not _is_main(v) else v.value for v in receivers.values]


def _is_main(v):
    from apache_beam.pvalue import TaggedOutput
    return not isinstance(v, TaggedOutput)


def _has_tag(tag, v):
    from apache_beam.pvalue import TaggedOutput
    return isinstance(v, TaggedOutput) and v.tag == tag


def _untag(v):
    return v.value.value    # TaggedOutput -> WindowedValue -> the element


def _count(partition):
    return [sum(1 for _ in partition)]


def _pardo_bag(node, input_bag, side_bags, options):
    """`input_bag`: a bag, or a `_View` of one output of another ParDo's bag (selected inside
    this ParDo's task, `select`)."""
    transform = node.transform
    # side inputs in the args as Beam's placeholders (raw_side_inputs would hand the DoFn the
    # AsSingleton objects themselves: Beam's own evaluator does, and its file sinks break on it)
    args, kwargs = transform.args, transform.kwargs
    main_input = next(iter(node.main_inputs.values()))
    window_fn = main_input.windowing.windowfn if hasattr(main_input, "windowing") else None
    side_specs = [(type(si), si._view_options(), si._window_mapping_fn) for si in node.side_inputs]
    side_parts = [bag.to_delayed(optimize_graph=False) for bag in side_bags]
    return _base(input_bag).map_partitions(
        _apply_dofn, transform.fn, transform.label, window_fn, list(args), kwargs, side_specs,
        [len(parts) for parts in side_parts], options, _selector(input_bag), *[d for parts in side_parts for d in parts],
        token=task_name(node.full_label))


@dataclasses.dataclass(frozen=True)
class _View:
    """One output (`tag`) of a multi-output ParDo's `bag`, for a ParDo that consumes it."""
    bag: object
    tag: object


def _base(bag):
    return bag.bag if isinstance(bag, _View) else bag


def _selector(bag):
    return _Select(bag.tag) if isinstance(bag, _View) else None


def task_name(label):
    """A dask task-group name for a Beam step (the scheduler's task stream and dashboard group
    tasks by it: where a round's time goes), e.g. 'Fetch/Fetch' -> 'Fetch.Fetch'."""
    return re.sub(r"[^A-Za-z0-9_.]+", ".", label).strip(".") or "ParDo"


def _grouped_values(groups):
    from apache_beam.runners.dask.transform_evaluator import defenestrate
    return [(k, [defenestrate(elm) for elm in v]) for k, v in groups]


def _group_by_key(bag, partitions, name):
    """Beam's GroupByKey as a shuffle into `partitions` partitions (pipelines/daskshuffle)."""
    return daskshuffle.shuffled(bag, partitions, name, _grouped_values)


def _flatten(bags, partitions):
    """The inputs' partitions concatenated into at most `partitions` partitions, each one task
    (db.concat then repartition made an alias task per input partition and a task per cut)."""
    import dask
    import dask.bag as db
    parts = [d for bag in bags for d in bag.to_delayed(optimize_graph=False)]
    n = max(1, min(partitions, len(parts)))
    chunks = [parts[i::n] for i in range(n)]
    return db.from_delayed([dask.delayed(_concat)(*chunk) for chunk in chunks])


def translate(pipeline, bag_kwargs, options, partitions=None):
    """{output PCollection: dask bag} of every primitive, and the leaf bags (the outputs
    nobody consumes: each must be computed). `options`: the pipeline's, for the workers;
    `partitions`: the most partitions a PCollection gets (None: as Beam's translation)."""
    from apache_beam import pvalue
    from apache_beam.pipeline import PipelineVisitor
    from apache_beam.runners.dask.transform_evaluator import TRANSLATIONS, Flatten, GroupByKey, NoOp, ParDo

    # views: the outputs of multi-output ParDos, which a ParDo (or lifted combine) taking one as
    # its main input selects in its own task, partition by partition; any other consumer (a
    # side input takes every partition, a shuffle sends them: `bags`) gets the output
    # filtered by a task of its own, so that only that output moves between workers
    bags, views, consumed, lifted = {}, {}, set(), []

    class Visitor(PipelineVisitor):
        def enter_composite_transform(self, node):
            # a CombinePerKey combined in each partition first (daskcombine); its expansion's
            # steps are then not translated
            if not partitions or len(node.inputs) != 1 or _inside(node, lifted) or node.inputs[0] not in bags:
                return
            source = views.get(node.inputs[0], bags[node.inputs[0]])
            bag = daskcombine.lifted(node, _base(source), partitions, task_name(node.full_label), _selector(source))
            if bag is not None:
                consumed.add(node.inputs[0])
                bags[next(iter(node.outputs.values()))] = bag
                lifted.append(node.full_label + "/")

        def visit_transform(self, node):
            if _inside(node, lifted):
                return
            op = TRANSLATIONS.get(node.transform.__class__, NoOp)(node, bag_kwargs=bag_kwargs)
            source = views if isinstance(op, ParDo) else bags
            inputs = []
            for pc in node.inputs:
                if isinstance(pc, pvalue.PBegin):
                    inputs.append(None)
                elif pc in bags:
                    inputs.append(source.get(pc, bags[pc]))
                    consumed.add(pc)
            side_bags = []
            for si in node.side_inputs:   # (every partition: a view would move the whole ParDo's)
                side_bags.append(bags[si.pvalue])
                consumed.add(si.pvalue)
            single = inputs[0] if len(inputs) == 1 and not isinstance(op, Flatten) else inputs
            if isinstance(op, ParDo):
                bag = _pardo_bag(node, single, side_bags, options)
            elif partitions and isinstance(op, GroupByKey):
                bag = _group_by_key(single, partitions, task_name(node.full_label))
            elif partitions and isinstance(op, Flatten):
                bag = _flatten(single, partitions)
            else:
                bag = op.apply(input_bag=single if inputs else None, side_inputs=None)
            outputs = node.outputs
            if len(outputs) == 1:
                bags[next(iter(outputs.values()))] = bag
            else:
                for tag, pc in outputs.items():
                    bags[pc] = bag.filter(_is_main) if tag is None else bag.filter(_TagIs(tag)).map(_untag)
                    views[pc] = _View(bag, tag)

    pipeline.visit(Visitor())
    # an output nobody consumes: its ParDo's bag is computed (its other outputs need no filter)
    leaves = {}
    for pc, bag in bags.items():
        if pc not in consumed:
            leaf = _base(views.get(pc, bag))
            leaves[leaf.name] = leaf
    return bags, list(leaves.values())


def _inside(node, prefixes):
    return any(node.full_label.startswith(p) for p in prefixes)


@dataclasses.dataclass(frozen=True)
class _TagIs:
    tag: str

    def __call__(self, v):
        return _has_tag(self.tag, v)
