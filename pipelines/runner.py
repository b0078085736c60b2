"""Running a round's pipeline on the runner the flags name.

`--runner=DirectRunner` (the default) runs on Beam's in-process FnApiRunner directly, so a
default command never depends on downloading the Prism binary. Any other runner
(PortableRunner, DaskRunner, Flink, Dataflow) is handed the flags as they are.
"""
import base64
import concurrent.futures
import contextlib
import ctypes
import gc
import inspect
import threading
import types

import apache_beam as beam
import pyarrow as pa
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from pipelines import construction, dofnpickles, sideinputbuffers, sizesampling, stagedescriptor, stageinputs
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
    After each stage of a round (`release_stage_state`), above `TRIM_FREE_MB`: a 5 000-page
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
    (`release_stage_state`, `trim_heap`)."""
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


def no_state_cache():
    """The in-process runner keeps no cross-bundle cache of side inputs. Beam 2.77's embedded
    worker caches every side input it reads (up to 100 MB) for later bundles, and weighs each
    value by walking it object by object (`objsize`): in a round each stage runs once, so the
    cache is never hit (two 5 000-page rounds: 41 misses, 0 hits), and weighing the AsDict /
    AsList side inputs (the duplicate map, the key sets) took 0.056 s; the cached values also
    stayed in memory after their stage. Each bundle still builds a side input's view once
    (`StateBackedSideInputMap` keeps it for the bundle). Patches this process only;
    idempotent; does nothing if Beam's internals no longer look as expected."""
    try:
        from apache_beam.runners.portability.fn_api_runner import worker_handlers
    except ImportError:
        return
    if isinstance(getattr(worker_handlers, "STATE_CACHE_SIZE_MB", None), int):
        worker_handlers.STATE_CACHE_SIZE_MB = 0


def release_stage_state(trim_free_mb=None):
    """The in-process runner frees what a stage held once its bundle is done (README "Memory
    budget"). Beam 2.77 keeps every stage's bundle processor cached for reuse, and a round
    runs each stage once, so until the pipeline ended it kept (a) each output's encode
    buffer, grown to the size of that output (up to Beam's 10 MB flush threshold, per
    output of every stage: measured ~37 MB live after a 5 000-page fetch stage), and (b)
    each stage's DoFns set up: the fetch threads and their sessions, and the page worker
    processes (--page_processes) with the memory they had parsed in. After the bundle
    is released, its outputs' buffers are dropped and its processor shut down (DoFn
    teardown); a stage run again builds a new one, as Beam does when its cache is empty.
    `trim_free_mb`: then the heap is trimmed if more than that is free in it (`trim_heap`;
    each call sets it anew, None: never).
    Patches this process only (not a distributed runner's workers); idempotent; does
    nothing if Beam's internals no longer look as expected."""
    try:
        from apache_beam.runners.worker import bundle_processor, sdk_worker
        cache_cls = sdk_worker.BundleProcessorCache
        original = cache_cls.release
        shutdown = cache_cls._shutdown_cached_bundle_processors
        output_op = bundle_processor.DataOutputOperation
    except (ImportError, AttributeError):
        return
    if hasattr(original, "__wrapped__"):   # patched already (by an earlier round of this process)
        cache_cls.release.trim_free_mb = trim_free_mb
        return

    def release(self, instruction_id):
        descriptor_id, processor = self.active_bundle_processors[instruction_id]
        original(self, instruction_id)
        for op in getattr(processor, "ops", {}).values():
            if isinstance(op, output_op):
                op.output_stream = None   # set anew for the processor's next bundle
        shutdown(self.cached_bundle_processors.get(descriptor_id, []))
        if release.trim_free_mb is not None:
            trim_heap(release.trim_free_mb)

    release.__wrapped__ = original
    release.trim_free_mb = trim_free_mb
    cache_cls.release = release


class _InlineExecutor:
    """`ThreadPoolExecutor`'s context manager and `submit`, running the call at once."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args, **kwargs):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:   # noqa: BLE001 - handed to the caller, as a pool would
            future.set_exception(e)
        return future


def lean_stage_threads():
    """The in-process runner starts no threads of its own per stage. Beam 2.77 starts two
    for every stage of a round (~55 a round): its bundle processor builds the stage's
    operations in a new one-thread pool (so that an SDK harness can give up on a DoFn
    stuck unpickling), and its state sampler starts a thread that wakes every few ms to
    charge elapsed time to the running step (the msec counters of a runner's UI), which
    `stop` then joins. In-process nobody reads those counters, and a stuck unpickle would
    hang the round either way. Built in the calling thread and without the sampling
    thread, a 10-page round's stages took 0.93 / 0.89 s instead of 1.18 / 1.18 s (scratch
    timer around `run_stages`, alternating). Element counts, user metrics and the fetch's
    progress are unchanged (they do not come from the sampler's thread). Patches this
    process only; idempotent; does nothing if Beam's internals no longer look as expected."""
    try:
        from apache_beam.runners.worker import bundle_processor, statesampler
        sampler = statesampler.StateSampler
        set_tracker = statesampler.set_current_tracker
        futures = bundle_processor.concurrent.futures
        futures.ThreadPoolExecutor, futures.TimeoutError   # noqa: B018 - present, or no patch
    except (ImportError, AttributeError):
        return
    if hasattr(sampler.start, "__wrapped__"):   # patched already (an earlier round)
        return

    def start(self):
        self.tracked_thread = threading.current_thread()
        set_tracker(self)
        self.started = True

    def stop(self):
        set_tracker(None)
        self.finished = True

    start.__wrapped__, stop.__wrapped__ = sampler.start, sampler.stop
    sampler.start, sampler.stop = start, stop
    inline = types.SimpleNamespace(ThreadPoolExecutor=_InlineExecutor, TimeoutError=futures.TimeoutError)
    bundle_processor.concurrent = types.SimpleNamespace(futures=inline)


def _raw_pickle_functions():
    """Beam's cloudpickle `dumps`/`loads` patched (once) so that `dumps` may leave out the
    bz2 step while `uncompressed_pickles` is active; `loads` reads either. None if Beam's
    internals no longer look as expected."""
    try:
        from apache_beam.internal import cloudpickle_pickler as cp
        dumps, loads, pickle_only, unpickle = cp.dumps, cp.loads, cp._dumps, cp._loads
        signature = inspect.signature(dumps)
        wanted = {"use_zlib", "enable_best_effort_determinism", "enable_stable_code_identifier_pickling", "config"}
        if not wanted <= set(signature.parameters):
            return None
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    if hasattr(dumps, "active"):   # patched already
        return dumps

    def raw_dumps(o, *args, **kwargs):
        if raw_dumps.active:
            a = signature.bind(o, *args, **kwargs)
            a.apply_defaults()
            a = a.arguments
            if not a["use_zlib"]:
                return base64.b64encode(pickle_only(o, a["enable_best_effort_determinism"],
                                                    a["enable_stable_code_identifier_pickling"], a["config"]))
        return dumps(o, *args, **kwargs)

    def raw_loads(encoded, *args, **kwargs):
        data = base64.b64decode(encoded)
        if data[:1] == b"\x80":   # a pickle (protocol 2+); bz2 starts "BZh", zlib 0x78
            return unpickle(data)
        return loads(encoded, *args, **kwargs)

    raw_dumps.active, raw_dumps.__wrapped__, raw_loads.__wrapped__ = 0, dumps, loads
    cp.dumps, cp.loads = raw_dumps, raw_loads
    return raw_dumps


@contextlib.contextmanager
def uncompressed_pickles():
    """While a pipeline is built and run by the in-process runner, Beam pickles its DoFns
    and coders without compressing them. Beam bz2-compresses every payload at level 9 (for
    protocol buffer limits of remote runners) and the in-process runner decompresses each
    again to build each stage: ~0.13 s of a tiny round's ~1 s (cProfile of three 20-page
    rounds: 0.26 s compressing, 0.12 s decompressing). Payloads made meanwhile are plain
    base64 pickles, which the patched `loads` reads (and still bz2 or zlib ones); only used
    where every reader is this process (`--direct_running_mode` in_memory or
    multi_threading), never around a pipeline whose workers are other processes."""
    dumps = _raw_pickle_functions()
    if dumps is None:
        yield
        return
    dumps.active += 1
    try:
        yield
    finally:
        dumps.active -= 1


def workers_in_this_process(options, runner) -> bool:
    """True if every stage runs in this process (the in-process runner, in memory or on
    threads; not its multi_processing mode, whose workers are processes of their own)."""
    return runner is not None and options.view_as(DirectOptions).direct_running_mode in (
        "in_memory", "multi_threading")


def run_pipeline(builder, argv, helpers=False, eager_heap=False):
    """Build (`builder(p)`) and run a pipeline with Beam flags `argv`; its result. `helpers`:
    the stages will likely start helper processes (transforms.procs), so on the in-process
    runner their fork server starts now, in the background, while the first stages run.
    `eager_heap`: on the in-process runner, this process hands freed memory back to the OS
    at once (`lean_allocators`)."""
    construction.install()
    options, runner = pipeline_options(argv)
    if runner is not None:   # the in-process runner: this process holds the round
        if helpers:
            warm_fork_server()
        lean_allocators(eager_heap)
        freeze_survivors()
        no_state_cache()
        release_stage_state(EAGER_TRIM_FREE_MB if eager_heap else TRIM_FREE_MB)
        lean_stage_threads()
        dofnpickles.install()
        stagedescriptor.install()
        sideinputbuffers.install()
        stageinputs.install()
        sizesampling.install()
    if "DaskRunner" in str(options.view_as(StandardOptions).runner):
        from pipelines import daskfix
        daskfix.install()   # Beam 2.77's DaskRunner translation bugs (see daskfix)
    with uncompressed_pickles() if workers_in_this_process(options, runner) else contextlib.nullcontext():
        p = beam.Pipeline(runner=runner, options=options) if runner else beam.Pipeline(options=options)
        builder(p)
        result = p.run()
        state = result.wait_until_finish()
    if state not in (None, "DONE", beam.runners.runner.PipelineState.DONE):
        raise RuntimeError(f"pipeline ended in state {state}")
    return result

