"""Smaller stage descriptors: a stage's bundle descriptor names only the PCollections its
transforms read or write.

Beam 2.77's in-process runner puts every PCollection of the pipeline into every stage's
`ProcessBundleDescriptor` (`BundleContextManager._build_process_bundle_descriptor`: 292 in
each of a 5 000-page round's 53 descriptors, whose stages name 1 to 28 of them; 32 KB of a
descriptor of ~65 KB), and its worker copies each descriptor again
before building the stage (`BundleProcessorCache.get`). A stage's operations look up only
their transforms' inputs and outputs (coders and windowing by PCollection id), so the rest
is copied ~55 times a round for nothing: building the descriptors took ~36 ms a round and
copying them ~19 ms (computed from py-spy of 12 small rounds).

The patch lets Beam build the descriptor as before, from the pipeline's components with the
PCollections narrowed to the stage's; coders, windowing strategies and environments are all
kept (their references hide in transform payloads). `install()` patches this process only
(the in-process runner); idempotent; does nothing if Beam's internals no longer look as
expected.
"""
import types

from pipelines.patches import target, uses

NAME = "stage_descriptor"
IN_PROCESS = True


def stage_pcollections(transforms, pcollections):
    """The entries of `pcollections` (id -> proto) that `transforms` read or write."""
    used = {pcoll for t in transforms for pcoll in (*t.inputs.values(), *t.outputs.values())}
    return {pcoll: pcollections[pcoll] for pcoll in used if pcoll in pcollections}


def _narrowed(original):
    def build(self):
        context = self.execution_context
        components = context.pipeline_components
        context.pipeline_components = types.SimpleNamespace(
            pcollections=stage_pcollections(self.stage.transforms, components.pcollections),
            coders=components.coders, windowing_strategies=components.windowing_strategies,
            environments=components.environments)
        try:
            return original(self)
        finally:
            context.pipeline_components = components

    build.__wrapped__ = original
    return build


def replacements(context):
    """Narrow the PCollections of every stage descriptor the in-process runner builds."""
    from apache_beam.runners.portability.fn_api_runner import execution
    cls = execution.BundleContextManager
    build = target(cls, "_build_process_bundle_descriptor")
    uses(build, "execution_context", "pipeline_components", "pcollections", "coders",
         "windowing_strategies", "environments")
    return [(cls, "_build_process_bundle_descriptor", _narrowed(build))]
