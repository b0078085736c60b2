"""The in-process runner frees what a stage held once its bundle is done.

Beam 2.77 keeps every stage's bundle processor cached for reuse, and a round runs each
stage once, so until the pipeline ended it kept (a) each output's encode buffer, grown to
the size of that output (up to Beam's 10 MB flush threshold, per output of every stage:
~37 MB live after a 5 000-page fetch stage), and (b) each stage's DoFns set up: the fetch
sessions, and the page worker processes (--page_processes) with the memory they had parsed
in. Here, after Beam has released a bundle, its outputs' buffers are dropped and its
processor shut down (DoFn teardown, which Beam would run at the pipeline's end); a stage run
again builds a new one, as Beam does when its cache is empty. Then `Context.after_stage`
runs (the runner's heap trim, `runner.trim_heap`).

Nothing in the crawler depends on the earlier teardown for its results: without the patch
the same DoFns are torn down when the pipeline ends (the whole bench50k crawl's peak tree
PSS was ~22 % higher, benchmarks/RESULTS.md "Twenty-eighth session").
"""
from pipelines.patches import target, uses

NAME = "release_stage"
IN_PROCESS = True


def replacements(context):
    from apache_beam.runners.worker import bundle_processor, sdk_worker
    cache_cls = sdk_worker.BundleProcessorCache
    original = target(cache_cls, "release")
    target(cache_cls, "_shutdown_cached_bundle_processors")
    output_op = target(bundle_processor, "DataOutputOperation", type)
    uses(original, "active_bundle_processors", "cached_bundle_processors")
    after_stage = context.after_stage

    def release(self, instruction_id):
        descriptor_id, processor = self.active_bundle_processors[instruction_id]
        original(self, instruction_id)
        for op in getattr(processor, "ops", {}).values():
            if isinstance(op, output_op):
                op.output_stream = None   # set anew for the processor's next bundle
        self._shutdown_cached_bundle_processors(self.cached_bundle_processors.get(descriptor_id, []))
        if after_stage is not None:
            after_stage()

    release.__wrapped__ = original
    return [(cache_cls, "release", release)]
