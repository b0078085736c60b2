"""Two translation bugs of Beam 2.77's DaskRunner, corrected in the launcher (issue #15).

`apache_beam.runners.dask.dask_runner.DaskRunner` turns each Beam primitive into a dask bag
and submits the graph to a `dask.distributed` cluster. As shipped (2.77) it gets three things
wrong that any real pipeline meets, the round among them:

1. Multi-output ParDos: the main output and every tagged output land in ONE bag, and every
   consumer of any of the outputs reads that bag (bags are keyed by the producing
   transform, not by the output PCollection). A consumer of a `stats` output gets the
   pa.Tables of the main output too: "a pa.Table element arrives as a dict" (issue #15).
   Here each output PCollection gets its own bag, filtered by tag.
2. Only the LAST transform's bag is computed (`dask.optimize(list(bags.values())[-1])`);
   every branch that does not lead to it never runs. Beam's file sinks finalise in a
   branch of their own, hence "WriteToText left non-empty temp files and an empty final
   file". Here every leaf (an output nobody consumes) is computed, in one graph, so shared
   upstream work runs once.
3. Side inputs are computed by `bag.compute()` INSIDE the consuming task, which recomputes
   the side input's whole upstream graph there: upstream side effects (fetching pages!)
   would run twice. Here a side input is a dependency of the task in the same graph
   (`to_delayed(optimize_graph=False)`: the same keys, so dask computes it once).

`install()` replaces `DaskRunner.run_pipeline` in this (launcher) process only; the workers
run the tasks the launcher submits and need no change. The round is the same pipeline on
every runner: this is the runner's translation, not a Dask code path in the round. Metrics
are still unsupported by the DaskRunner (the report then has no `write` time split).
"""
import dataclasses

_installed = False


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


def _apply_dofn(items, fn, label, window_fn, args, kwargs, side_specs, *side_values):
    """One bag partition through the DoFn (Beam's apply_dofn_to_bundle, with side inputs
    given as computed values)."""
    from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler
    from apache_beam.runners.dask.transform_evaluator import OneReceiver
    from apache_beam.transforms.core import DoFn
    from apache_beam.transforms.sideinputs import SideInputMap
    receivers = OneReceiver()
    side_inputs = [SideInputMap(cls, options, _SideValues(values, mapping))
                   for (cls, options, mapping), values in zip(side_specs, side_values)]
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
        invoker.invoke_process(item)
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


def _pardo_bag(node, input_bag, side_bags):
    import dask
    transform = node.transform
    # side inputs in the args as Beam's placeholders (raw_side_inputs would hand the DoFn the
    # AsSingleton objects themselves: Beam's own evaluator does, and its file sinks break on it)
    args, kwargs = transform.args, transform.kwargs
    main_input = next(iter(node.main_inputs.values()))
    window_fn = main_input.windowing.windowfn if hasattr(main_input, "windowing") else None
    side_specs = [(type(si), si._view_options(), si._window_mapping_fn) for si in node.side_inputs]
    side_values = [dask.delayed(_concat)(*bag.to_delayed(optimize_graph=False)) for bag in side_bags]
    return input_bag.map(_windowed, window_fn).map_partitions(
        _apply_dofn, transform.fn, transform.label, window_fn, list(args), kwargs, side_specs, *side_values)


def _translate(pipeline, bag_kwargs):
    """{output PCollection: dask bag} of every primitive, and the leaf bags."""
    from apache_beam import pvalue
    from apache_beam.pipeline import PipelineVisitor
    from apache_beam.runners.dask.transform_evaluator import TRANSLATIONS, Flatten, NoOp, ParDo

    bags, consumed = {}, set()

    class Visitor(PipelineVisitor):
        def visit_transform(self, node):
            op = TRANSLATIONS.get(node.transform.__class__, NoOp)(node, bag_kwargs=bag_kwargs)
            inputs = []
            for pc in node.inputs:
                if isinstance(pc, pvalue.PBegin):
                    inputs.append(None)
                elif pc in bags:
                    inputs.append(bags[pc])
                    consumed.add(pc)
            side_bags = []
            for si in node.side_inputs:
                side_bags.append(bags[si.pvalue])
                consumed.add(si.pvalue)
            single = inputs[0] if len(inputs) == 1 and not isinstance(op, Flatten) else inputs
            if isinstance(op, ParDo):
                bag = _pardo_bag(node, single, side_bags)
            else:
                bag = op.apply(input_bag=single if inputs else None, side_inputs=None)
            outputs = node.outputs
            if len(outputs) == 1:
                bags[next(iter(outputs.values()))] = bag
            else:
                for tag, pc in outputs.items():
                    bags[pc] = bag.filter(_is_main) if tag is None else bag.filter(_TagIs(tag)).map(_untag)

    pipeline.visit(Visitor())
    leaves = [bag for pc, bag in bags.items() if pc not in consumed]
    return bags, leaves


@dataclasses.dataclass(frozen=True)
class _TagIs:
    tag: str

    def __call__(self, v):
        return _has_tag(self.tag, v)


def _run_pipeline(self, pipeline, options):
    import dask.distributed as ddist
    from apache_beam.runners.dask.dask_runner import DaskOptions, DaskRunnerResult
    from apache_beam.runners.dask.overrides import dask_overrides
    dask_options = options.view_as(DaskOptions).get_all_options(drop_default=True, current_only=True)
    bag_kwargs = DaskOptions._extract_bag_kwargs(dask_options)
    client = ddist.Client(**dask_options)
    pipeline.replace_all(dask_overrides())
    _, leaves = _translate(pipeline, bag_kwargs)
    counts = [leaf.map_partitions(_count) for leaf in leaves]   # run every branch; fetch no data
    futures = client.compute(counts, optimize_graph=False)
    return DaskRunnerResult(client, futures)


def install():
    """Correct DaskRunner.run_pipeline in this process (idempotent)."""
    global _installed
    if _installed:
        return
    from apache_beam.runners.dask import dask_runner
    dask_runner.DaskRunner.run_pipeline = _run_pipeline
    _installed = True
