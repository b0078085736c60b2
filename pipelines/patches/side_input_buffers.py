"""A side input's runner buffer freed once its data is in the runner's state.

When a stage of Beam 2.77's in-process runner has run, the PCollections it produced for
later stages' side inputs are encoded into the runner's state
(`commit_side_inputs_to_state`), which those stages read. The runner then frees the
buffers of PCollections that later stages read as main input, but a PCollection read only
as a side input keeps its buffer, never read again, until the pipeline ends: a second copy
of every side input, as big as the round's key sets (~5.5 MB of state in a 16 000-page
round, summed at the state's appends; before `GatherAll`, tracemalloc showed an allocation
site in the runner's bundle run holding 13.56 MB, the size of the state then, which I take to
be these buffers).

The patch drops those buffers after the stage that filled them has committed them to
state; a buffer some stage also reads as main input is left to Beam. In-process runner only.
"""
from pipelines.patches import target, uses

NAME = "side_input_buffers"
IN_PROCESS = True


def side_input_only_buffers(descriptors, consumed_as_main):
    """The buffer ids among a stage's side-input `descriptors` ({(transform, tag): (buffer
    id, access pattern)}) that no stage reads as main input."""
    return {buffer_id for buffer_id, _ in descriptors.values() if buffer_id not in consumed_as_main}


def _freeing(original):
    def execute_bundle(self, context, manager, *args, **kwargs):
        result = original(self, context, manager, *args, **kwargs)
        descriptors = context.side_input_descriptors_by_stage.get(manager.stage.name, {})
        for buffer_id in side_input_only_buffers(descriptors, context.buffer_id_to_consumer_pairs):
            context.pcoll_buffers.pop(buffer_id, None)
        return result

    execute_bundle.__wrapped__ = original
    return execute_bundle


def replacements(context):
    """Free side-input-only buffers once committed to state."""
    from apache_beam.runners.portability.fn_api_runner import execution, fn_runner
    uses(target(execution.FnApiRunnerExecutionContext, "__init__"),
         "side_input_descriptors_by_stage", "buffer_id_to_consumer_pairs", "pcoll_buffers")
    # the side inputs are committed to state inside _execute_bundle, before it returns
    uses(target(fn_runner.FnApiRunner, "_execute_bundle"), "commit_side_inputs_to_state")
    return [(fn_runner.FnApiRunner, "_execute_bundle", _freeing(target(fn_runner.FnApiRunner, "_execute_bundle")))]
