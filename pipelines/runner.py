"""Running a round's pipeline on the runner the flags name.

`--runner=DirectRunner` (the default) runs on Beam's in-process FnApiRunner directly, so a
default command never depends on downloading the Prism binary. Any other runner
(PortableRunner, DaskRunner, Flink, Dataflow) is handed the flags as they are.
"""
import ctypes
import functools
import gc

import apache_beam as beam
import pyarrow as pa
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from pipelines import patches
from transforms.procs import warm_fork_server

DIRECT_RUNNER_NAMES = (None, "DirectRunner", "direct")   # run on the in-process FnApiRunner


def spreads_files(p):
    """True on a distributed runner: a round's input files are spread over its workers
    (a Reshuffle after the file list). The in-process runner gains nothing from it."""
    runner = p.options.view_as(StandardOptions).runner
    return runner not in DIRECT_RUNNER_NAMES + ("FnApiRunner",)


# Beam infers every transform's output type at construction by disassembling the bytecode of
# its functions: ~0.6 s of a round's ~0.9 s construction, for types nothing here uses (the
# round declares the coders it relies on). Off unless --pipeline_type_check is given.
TYPE_CHECK_FLAGS = ("--pipeline_type_check", "--no_pipeline_type_check")


def pipeline_options(argv):
    """PipelineOptions for argv; DirectRunner runs on the FnApiRunner (no Prism download)."""
    argv = list(argv)
    if not any(a.split("=", 1)[0] in TYPE_CHECK_FLAGS for a in argv):
        argv.append("--no_pipeline_type_check")
    options = PipelineOptions(argv)
    std = options.view_as(StandardOptions)
    if std.runner in DIRECT_RUNNER_NAMES:
        from apache_beam.runners.portability.fn_api_runner import fn_runner
        return options, fn_runner.FnApiRunner()
    return options, None


M_ARENA_MAX, M_MMAP_THRESHOLD = -8, -3   # glibc mallopt parameters
EAGER_MMAP_THRESHOLD = 16 << 20   # with eager_heap: blocks this big or more are mapped
TRIM_FREE_MB = 48                 # a stage leaving more than this free in the heap: trimmed
EAGER_TRIM_FREE_MB = 8            # ... with eager_heap


class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def mallinfo(libc=None):
    """glibc's `mallinfo2` ready to call (a `MallInfo2`: `arena` the heap's size, `fordblks`
    its free chunks), or None where there is none (not glibc, or older than 2.33)."""
    try:
        info = (libc or ctypes.CDLL("libc.so.6")).mallinfo2
        info.restype = MallInfo2
        return info
    except (OSError, AttributeError):
        return None


def trim_heap(min_free_mb, libc=None) -> bool:
    """Hand the free pages inside glibc's heap back to the OS (`malloc_trim(0)`) if more than
    `min_free_mb` of the heap is free (`mallinfo`; without it, always); True if it trimmed.
    The trim threshold only returns the heap's free top: a stage that frees what it read
    leaves holes under what the next stage allocated, resident until reused (the visited
    probe of a 45 112-page bench150k round: heap 116 -> 148 MB, free 57 -> 98).
    After each stage of a round (patches.release_stage), above `TRIM_FREE_MB`: a 5 000-page
    bench150k round never has that much free (no trim; 56 `mallinfo2` calls, 0.01 s), a
    45 112-page round trims after 51 of its 56 stages (0.086 s) and its tree's peak PSS was
    451 / 464 MB against 491 / 481 untrimmed, alternating (benchmarks/RESULTS.md,
    twenty-sixth session). At 8 MB the small round trimmed 56 times too (0.04 s) for no
    lower peak. Not glibc: nothing to trim, False."""
    info = mallinfo(libc)
    if info is not None and info().fordblks <= min_free_mb << 20:
        return False
    try:
        (libc or ctypes.CDLL("libc.so.6")).malloc_trim(0)
        return True
    except (OSError, AttributeError):
        return False


def lean_allocators(eager_heap=False):
    """Memory freed inside a round goes back to the allocator the next stage uses (README
    "Memory budget"): Arrow allocates from the C heap instead of its mimalloc pool, and
    glibc keeps 2 malloc arenas instead of up to 8 per core (the fetch threads each
    claimed one and left it fragmented). Measured on a 4 000-page round: peak RSS 876 MB,
    with the system pool 777 MB, with 2 arenas 822 MB. Process-wide; idempotent.

    `eager_heap` (a `--memory_mb` below the default): freed memory also goes back to the OS
    at once, for a few % more CPU. glibc left to itself raises its mmap threshold to the
    size of each large block freed (up to 32 MB) and its trim threshold to twice that, so up
    to 64 MB free at its heap's top stays with the process: after a 45 207-page bench150k
    round its heap was 189 MB with 131 MB free, against 88 MB with 45 free after a 5 000-page
    round. Fixing the mmap threshold (at 16 MB) stops that rule, and the trim threshold stays
    at 128 KB (the heap's top goes back as soon as that much of it is free). With
    `--memory_mb 256` (`benchmarks.round_memory`, alternating): the 45 207-page round's process
    peaked at 387 / 380 MB against 432 / 422 MB (CPU 24.17 / 23.71 against 24.01 / 23.60 s), a
    5 000-page bench50k round's at 277 / 277 / 279 against 284 / 297 / 290 MB (its round
    4.777 s against 4.597 s, means of 3); the tree's peak, in the fetch stage, did not move.
    With the default budget whole crawls of 5 000-page rounds took 62.4 s against 61.3 s
    (means of 4, alternating; benchmarks/RESULTS.md, twenty-first session), so it is not the
    default. Once set in a process it stays set: glibc has no way back to its own rule.
    An eager heap is also trimmed after each stage with more than 8 MB free, not 48
    (patches.release_stage, `trim_heap`)."""
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_ARENA_MAX, 2)
        if eager_heap:
            libc.mallopt(M_MMAP_THRESHOLD, EAGER_MMAP_THRESHOLD)
    except (OSError, AttributeError):   # not glibc: nothing to tune
        pass


def freeze_survivors():
    """What is alive when a round starts is left out of the cyclic garbage collector's full
    passes for the rest of the process (`gc.freeze`, after one full collection so that no
    garbage is frozen): the imported modules, Beam's and this package's classes and caches.
    A full pass walked all of them again every round: over 16 tiny rounds of one crawl, the
    full collections took 0.737 s with the imports frozen once and 0.434 s frozen at every
    round (gc callbacks; unfrozen, 0.515 s over 6 tiny rounds, ~86 ms a round, computed). Frozen objects
    are still freed when their last reference goes; only a cycle among them that becomes
    garbage later would stay: the frozen count grew by ~26 objects a round over those 16
    rounds. In-process runner only (this process runs the round's stages)."""
    gc.collect()
    gc.freeze()


def workers_in_this_process(options, runner) -> bool:
    """True if every stage runs in this process (the in-process runner, in memory or on
    threads; not its multi_processing mode, whose workers are processes of their own)."""
    return runner is not None and options.view_as(DirectOptions).direct_running_mode in (
        "in_memory", "multi_threading")


def run_pipeline(builder, argv, helpers=False, eager_heap=False):
    """Build (`builder(p)`) and run a pipeline with Beam flags `argv`; its result, whose
    `runtime_patches` names the patches of Beam it ran with (`pipelines.patches`: only while
    this pipeline is built and run). `helpers`: the stages will likely start helper
    processes (transforms.procs), so on the in-process runner their fork server starts now,
    in the background, while the first stages run. `eager_heap`: on the in-process runner,
    this process hands freed memory back to the OS at once (`lean_allocators`)."""
    off = patches.switched_off()
    options, runner = pipeline_options(argv)
    if runner is not None:   # the in-process runner: this process holds the round
        if helpers:
            warm_fork_server()
        if "allocators" not in off:
            lean_allocators(eager_heap)
        if "gc_freeze" not in off:
            freeze_survivors()
    trim = EAGER_TRIM_FREE_MB if eager_heap else TRIM_FREE_MB
    context = patches.Context(in_process=runner is not None,
                              workers_here=workers_in_this_process(options, runner),
                              after_stage=functools.partial(trim_heap, trim))
    with patches.active(context) as applied:
        p = beam.Pipeline(runner=runner, options=options) if runner else beam.Pipeline(options=options)
        builder(p)
        # a runner may say it needs no round trip through the runner-API proto (ours for Dask)
        result = p.run(test_runner_api=getattr(p.runner, "RUNNER_API_ROUND_TRIP", "AUTO"))
        state = result.wait_until_finish()
    if state not in (None, "DONE", beam.runners.runner.PipelineState.DONE):
        raise RuntimeError(f"pipeline ended in state {state}")
    result.runtime_patches = tuple(applied)
    return result
