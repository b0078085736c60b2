"""Run `pipelines.round` with a timer around each stage of the in-process runner (benchmark only).

    python benchmarks/stagetimer.py OUT.jsonl --crawl_dir D [round flags]
    python benchmarks/stagetimer.py OUT.jsonl --module pipelines.crawl --crawl_dir D [crawl flags]

Run as a script, it imports the installed beamcrawl, not the checkout it sits in: PYTHONPATH
names the checkout to measure (as `crawl_split` and `bench_sweep` set it for `--repo`).

Writes one JSON line per executed stage to OUT.jsonl: its start (seconds since this script
started; `at`: epoch seconds), its seconds, `cpu`: this process's CPU seconds in it (all its
threads, not its helper processes'), the process's RSS after it (MB), the names of the transforms fused
into it, and where glibc says so (`mallinfo2`, glibc 2.33+) its malloc heap after the stage:
`heap_mb` (the arenas' size), `heap_free_mb` (free chunks inside them, resident until reused
or trimmed) and `arrow_mb` (what pyarrow's pool holds). A round whose RSS grows while
`heap_free_mb` grows and its objects do not is holding freed memory, not data. It wraps a
private method of Beam's FnApiRunner (`_execute_bundle`), so it is a measuring tool for
`benchmarks.profile_round`, never part of a crawl.
"""
import json
import re
import runpy
import sys
import time

T0 = time.perf_counter()
T0_EPOCH = time.time()


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _heap(mallinfo):
    """The heap figures of a stage's line (none without `mallinfo2`)."""
    import pyarrow as pa
    out = {"arrow_mb": round(pa.total_allocated_bytes() / 2**20, 1)}
    if mallinfo is not None:
        m = mallinfo()
        out.update(heap_mb=round(m.arena / 2**20, 1), heap_free_mb=round(m.fordblks / 2**20, 1))
    return out


def _transforms(stage_name):
    """The user-facing transform names of a fused stage ('ContentSeen/MarkNear', ...)."""
    names = re.findall(r"ref_AppliedPTransform_([A-Za-z0-9_-]+?)_\d+\)", stage_name)
    names += re.findall(r"\(([A-Za-z][A-Za-z0-9_/()-]*?)/(?:Read|Write)", stage_name)
    return sorted({n.replace("-", "/") for n in names})


def main():
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    out = open(sys.argv[1], "w")   # noqa: SIM115 - open for the whole round, closed below
    original = fn_runner.FnApiRunner._execute_bundle
    from pipelines.runner import mallinfo as glibc_mallinfo
    mallinfo = glibc_mallinfo()

    def timed(self, ctx, bundle_context_manager, *args, **kwargs):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return original(self, ctx, bundle_context_manager, *args, **kwargs)
        finally:
            out.write(json.dumps({"start": round(start - T0, 3), "at": round(T0_EPOCH + start - T0, 3),
                                  "seconds": round(time.perf_counter() - start, 4),
                                  "cpu": round(time.process_time() - cpu, 4),
                                  "rss_mb": round(_rss_mb(), 1), **_heap(mallinfo),
                                  "transforms": _transforms(bundle_context_manager.stage.name)}) + "\n")
            out.flush()

    fn_runner.FnApiRunner._execute_bundle = timed
    module, argv = "pipelines.round", sys.argv[2:]
    if argv[:1] == ["--module"]:   # a whole crawl: every round's stages, one line each
        module, argv = argv[1], argv[2:]
    sys.argv = [module] + argv
    try:
        runpy.run_module(module, run_name="__main__")
    finally:
        out.close()


if __name__ == "__main__":
    main()
