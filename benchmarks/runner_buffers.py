"""Run `pipelines.round` and log the in-process runner's live PCollection buffers (benchmark only).

    python benchmarks/runner_buffers.py OUT.txt --crawl_dir D [round flags]

Run as a script, it imports the installed beamcrawl (the editable install's checkout), not the
checkout it sits in: to measure another checkout (a worktree), set PYTHONPATH to it.

After each stage, OUT.txt gets the stage, the bytes held by every buffer still alive (the
encoded elements a PCollection keeps between the stage that wrote it and the ones that
read it), the largest by PCollection name, and at the end the peak of their sum. Buffers
are held by weak references, so a buffer the runner has dropped is not counted. Like
`benchmarks.stagetimer` it wraps private methods of Beam's FnApiRunner (`get_buffer`,
`_execute_bundle`): a measuring tool for issue #12's memory target, never part of a crawl.
"""
import collections
import runpy
import sys
import weakref

SHOWN = 6              # buffers listed per stage
MIN_SHOWN = 512 * 1024  # bytes


def _size(buf, execution):
    """Bytes of encoded elements a ListBuffer or GroupingBuffer holds now."""
    if isinstance(buf, execution.ListBuffer):
        return sum(len(x) for x in buf._inputs)
    if isinstance(buf, execution.GroupingBuffer):
        grouped = getattr(buf, "_grouped_output", None)
        if grouped:
            return sum(len(x) for part in grouped for x in part)
        return sum(len(k) + sum(len(v) if isinstance(v, bytes) else 64 for v in vs)
                   for k, vs in buf._table.items())
    return 0


def main():
    from apache_beam.runners.portability.fn_api_runner import execution, fn_runner
    out = open(sys.argv[1], "w")   # noqa: SIM115 - open for the whole round, closed below
    live, names, peak = weakref.WeakValueDictionary(), {}, [0]
    get_buffer = execution.BundleContextManager.get_buffer
    execute = fn_runner.FnApiRunner._execute_bundle

    def named_buffer(self, buffer_id, transform_id):
        buf = get_buffer(self, buffer_id, transform_id)
        if id(buf) not in live:
            pcoll = (buffer_id.decode() if isinstance(buffer_id, bytes) else str(buffer_id)).split(":", 1)[-1]
            known = self.execution_context.pipeline_components.pcollections
            names[id(buf)] = known[pcoll].unique_name if pcoll in known else pcoll
            live[id(buf)] = buf
        return buf

    def logged(self, ctx, bundle_context_manager, *args, **kwargs):
        try:
            return execute(self, ctx, bundle_context_manager, *args, **kwargs)
        finally:
            by_name = collections.Counter()
            for key, buf in list(live.items()):
                by_name[names.get(key, "?")] += _size(buf, execution)
            total = sum(by_name.values())
            peak[0] = max(peak[0], total)
            out.write(f"after {bundle_context_manager.stage.name[:100]}: {total / 2**20:.1f} MB\n")
            for name, size in by_name.most_common(SHOWN):
                if size >= MIN_SHOWN:
                    out.write(f"    {size / 2**20:7.1f} MB  {name}\n")
            out.flush()

    execution.BundleContextManager.get_buffer = named_buffer
    fn_runner.FnApiRunner._execute_bundle = logged
    sys.argv = ["pipelines.round"] + sys.argv[2:]
    try:
        runpy.run_module("pipelines.round", run_name="__main__")
    finally:
        out.write(f"peak of the live buffers: {peak[0] / 2**20:.1f} MB\n")
        out.close()


if __name__ == "__main__":
    main()
