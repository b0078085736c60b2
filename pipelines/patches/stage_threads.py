"""The in-process runner starts no threads of its own per stage.

Beam 2.77 starts two for every stage of a round (~55 a round): its bundle processor builds
the stage's operations in a new one-thread pool (so that an SDK harness can give up on a
DoFn stuck unpickling), and its state sampler starts a thread that wakes every few ms to
charge elapsed time to the running step (the msec counters of a runner's UI), which `stop`
then joins. In-process nobody reads those counters, and a stuck unpickle would hang the
round either way. Built in the calling thread and without the sampling thread, a 10-page
round's stages took 0.93 / 0.89 s instead of 1.18 / 1.18 s (scratch timer around
`run_stages`, alternating). Element counts, user metrics and the fetch's progress are
unchanged (they do not come from the sampler's thread).
"""
import concurrent.futures
import threading
import types

from pipelines.patches import target, uses

NAME = "stage_threads"
IN_PROCESS = True


class InlineExecutor:
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


def replacements(context):
    from apache_beam.runners.worker import bundle_processor, statesampler
    sampler = statesampler.StateSampler
    target(sampler, "start")
    target(sampler, "stop")
    set_tracker = target(statesampler, "set_current_tracker")
    futures = target(bundle_processor, "concurrent").futures
    uses(target(bundle_processor.BundleProcessor, "__init__"), "concurrent", "ThreadPoolExecutor")

    def start(self):
        self.tracked_thread = threading.current_thread()
        set_tracker(self)
        self.started = True

    def stop(self):
        set_tracker(None)
        self.finished = True

    inline = types.SimpleNamespace(ThreadPoolExecutor=InlineExecutor, TimeoutError=futures.TimeoutError)
    return [(sampler, "start", start), (sampler, "stop", stop),
            (bundle_processor, "concurrent", types.SimpleNamespace(futures=inline))]
