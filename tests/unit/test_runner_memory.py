"""The in-process runner frees a stage's state once its bundle is done (patches.release_stage), and
pipelines/__init__ keeps Arrow's C++ pool off mimalloc (docs/memory.md)."""
import os
import subprocess
import sys
import threading
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.runners.worker import bundle_processor, sdk_worker, statesampler

from pipelines import patches, runner, settings
from pipelines.patches import stage_threads

REPO = Path(__file__).resolve().parents[2]


class _MarksTeardown(beam.DoFn):
    """Stage 1: passes elements on; its teardown leaves a file."""

    def __init__(self, marker):
        self.marker = marker

    def process(self, x):
        yield x

    def teardown(self):
        Path(self.marker).write_text("torn down")


class _SeesMarker(beam.DoFn):
    """Stage 2 (after a GroupByKey): whether stage 1's DoFn was already torn down."""

    def __init__(self, marker, out):
        self.marker, self.out = marker, out

    def process(self, kv):
        with open(self.out, "a") as f:
            f.write(f"{kv[0]}:{sorted(kv[1])}:{os.path.exists(self.marker)}\n")


def _two_stages(p, marker, out):
    (p | beam.Create([("a", 1), ("a", 2), ("b", 3)])
     | "First" >> beam.ParDo(_MarksTeardown(marker))
     | beam.GroupByKey()
     | "Second" >> beam.ParDo(_SeesMarker(marker, out)))


def test_a_stage_is_torn_down_before_the_next_runs_and_results_hold(tmp_path, monkeypatch):
    original = sdk_worker.BundleProcessorCache.release
    marker, out = str(tmp_path / "marker"), str(tmp_path / "out")
    runner.run_pipeline(lambda p: _two_stages(p, marker, out), ["--runner=DirectRunner"])
    assert sorted(Path(out).read_text().splitlines()) == ["a:[1, 2]:True", "b:[3]:True"]
    assert sdk_worker.BundleProcessorCache.release is original   # put back after the round
    # the control: on Beam's own code the first stage is torn down only at the pipeline's end
    monkeypatch.setenv(patches.OFF_VARIABLE, "release_stage")
    Path(marker).unlink()
    Path(out).unlink()
    runner.run_pipeline(lambda p: _two_stages(p, marker, out), ["--runner=DirectRunner"])
    assert sorted(Path(out).read_text().splitlines()) == ["a:[1, 2]:False", "b:[3]:False"]


def test_released_bundle_drops_its_output_buffers(tmp_path):
    """After a bundle, no DataOutputOperation of a cached or active processor keeps its
    output stream (and the buffer it grew to)."""
    kept = []
    original = bundle_processor.BundleProcessor.shutdown

    def shutdown(self):
        kept.extend(op.output_stream for op in self.ops.values()
                    if isinstance(op, bundle_processor.DataOutputOperation))
        return original(self)

    bundle_processor.BundleProcessor.shutdown = shutdown
    try:
        marker, out = str(tmp_path / "marker"), str(tmp_path / "out")
        runner.run_pipeline(lambda p: _two_stages(p, marker, out), ["--runner=DirectRunner"])
    finally:
        bundle_processor.BundleProcessor.shutdown = original
    assert kept and all(s is None for s in kept)


def test_arrow_cpp_pool_is_the_system_allocator():
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    env["PYTHONPATH"] = str(REPO)
    got = subprocess.run([sys.executable, "-c", "import pipelines, pyarrow as pa; "
                          "print(pa.default_memory_pool().backend_name)"],
                         env=env, capture_output=True, text=True, check=True, cwd=REPO)
    assert got.stdout.strip() == "system"


# A 20 MB block malloc'd after a 24 MB block was freed: the mapped bytes it adds while it lives.
_MAPPED_AFTER_A_BIG_FREE = """
import ctypes, sys
from pipelines.runner import lean_allocators, mallinfo
libc = ctypes.CDLL("libc.so.6")
if mallinfo(libc) is None:
    print("no-mallinfo2")
    sys.exit(0)
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
lean_allocators(eager_heap=sys.argv[1] == "eager")
libc.free(libc.malloc(24 << 20))   # glibc's own rule now puts blocks under 24 MB in its heap
before = libc.mallinfo2().hblkhd
block = libc.malloc(20 << 20)
print(libc.mallinfo2().hblkhd - before)
libc.free(block)
"""


def test_an_eager_heap_maps_large_blocks_after_a_large_free():
    """With eager_heap (a --memory_mb below the default) glibc's thresholds are fixed: a 20 MB
    block is mapped, and unmapped when freed, even after a bigger block was freed; without it
    glibc's own rule takes it from its heap, whose free top it keeps."""
    def mapped(mode):
        got = subprocess.run([sys.executable, "-c", _MAPPED_AFTER_A_BIG_FREE, mode], capture_output=True,
                             text=True, check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
        if got.stdout.strip() == "no-mallinfo2":
            pytest.skip("not glibc 2.33+")
        return int(got.stdout)
    assert mapped("default") == 0
    assert mapped("eager") >= 20 << 20


def test_only_a_budget_below_the_default_makes_the_heap_eager():
    from pipelines.roundpipeline import budget_sizes
    default = settings.ROUND_SETTINGS["memory_mb"].default
    assert not budget_sizes(default)["eager_heap"]
    assert not budget_sizes(4 * default)["eager_heap"]
    assert budget_sizes(default // 4)["eager_heap"]



def _five_shuffles(p, out):
    x = p | beam.Create(range(12))
    for i in range(5):
        x = (x | f"Key{i}" >> beam.Map(lambda v: (v % 3, v)) | f"Group{i}" >> beam.GroupByKey()
             | f"Flat{i}" >> beam.FlatMap(lambda kv: kv[1])
             | f"Count{i}" >> beam.Map(lambda v: (beam.metrics.Metrics.counter("t", "seen").inc(), v)[1]))
    x | "Out" >> beam.Map(lambda v: open(out, "a").write(f"{v}\n"))   # noqa: SIM115


def test_stages_start_no_threads_of_their_own(tmp_path, monkeypatch):
    """No execution-tree thread and no state-sampler thread per stage (Beam starts two for
    each); results and user metrics are the same."""
    started = []
    original = threading.Thread.start

    def start(self):
        started.append(self.name)
        return original(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    out = str(tmp_path / "out")
    result = runner.run_pipeline(lambda p: _five_shuffles(p, out), ["--runner=DirectRunner"])
    assert sorted(int(v) for v in Path(out).read_text().split()) == list(range(12))
    seen = result.metrics().query(beam.metrics.MetricsFilter().with_name("seen"))["counters"]
    assert sum(c.committed for c in seen) == 5 * 12
    assert not [n for n in started if n.startswith("ExecutionTreeCreator") or n.endswith("(run)")], started
    assert len(started) < 3, started   # six stages: Beam alone started 12 more
    assert "start" in vars(statesampler.StateSampler) and bundle_processor.concurrent.futures.ThreadPoolExecutor \
        is __import__("concurrent.futures").futures.ThreadPoolExecutor   # put back after the round


def test_inline_executor_hands_back_results_and_errors():
    with stage_threads.InlineExecutor(max_workers=1, thread_name_prefix="x") as executor:
        assert executor.submit(lambda a, b=0: a + b, 2, b=3).result(timeout=1) == 5
        failed = executor.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failed.result(timeout=1)


class _PicklesSomething(beam.DoFn):
    """Records how Beam's pickler encodes an object while the pipeline runs."""

    def __init__(self, out):
        self.out = out

    def process(self, x):
        from apache_beam.internal import pickler
        with open(self.out, "a") as f:
            f.write(pickler.dumps({"x": x}).decode() + "\n")
        yield x


def test_in_process_payloads_are_not_bz2_compressed_and_both_forms_load(tmp_path):
    import base64

    from apache_beam.internal import pickler
    out = str(tmp_path / "payloads")
    runner.run_pipeline(lambda p: p | beam.Create([1, 2]) | beam.ParDo(_PicklesSomething(out)),
                        ["--runner=DirectRunner"])
    during = Path(out).read_text().split()
    assert len(during) == 2 and all(base64.b64decode(d)[:1] == b"\x80" for d in during)
    after = pickler.dumps({"x": 3})   # outside a run: Beam's own bz2 form, readable anywhere
    assert base64.b64decode(after)[:3] == b"BZh" and pickler.loads(after) == {"x": 3}
    # while patched (only during a run: payloads made then are read then) both forms load
    with patches.active(patches.Context(in_process=True, workers_here=True), environ={},
                        only={"raw_pickles"}) as applied:
        assert applied == ["raw_pickles"]
        assert sorted(pickler.loads(d)["x"] for d in during) == [1, 2]
        assert pickler.loads(after) == {"x": 3}


def test_only_runs_whose_workers_are_this_process_skip_the_compression():
    from apache_beam.options.pipeline_options import PipelineOptions
    local = object()
    assert runner.workers_in_this_process(PipelineOptions([]), local)
    assert runner.workers_in_this_process(PipelineOptions(["--direct_running_mode=multi_threading"]), local)
    assert not runner.workers_in_this_process(PipelineOptions(["--direct_running_mode=multi_processing"]), local)
    assert not runner.workers_in_this_process(PipelineOptions([]), None)   # PortableRunner, Dask, ...


class _Cycle:
    """A reference cycle: only the cyclic collector frees it."""

    def __init__(self):
        self.me = self


def test_a_round_freezes_what_is_alive_and_no_garbage(tmp_path):
    """Objects alive when a round starts leave the full collections (gc.freeze); garbage
    cycles present then are collected first, not frozen."""
    import gc
    import weakref

    alive, dead = _Cycle(), _Cycle()
    dead_ref = weakref.ref(dead)
    del dead                     # garbage, but a cycle: freed only by a collection
    gc.disable()                 # no automatic collection: only the round's own can free it
    try:
        runner.run_pipeline(lambda p: p | beam.Create([1, 2]) | beam.Map(lambda x: x),
                            ["--runner=DirectRunner"])
    finally:
        gc.enable()
    assert dead_ref() is None
    # `alive` is frozen: the collector no longer tracks it among its generations
    assert not any(o is alive for o in gc.get_objects())
    assert gc.get_freeze_count() > 0


class _FakeLibc:
    """libc's mallinfo2 and malloc_trim, recording the trims."""

    def __init__(self, free_mb):
        self.free, self.trims = free_mb << 20, []
        self.mallinfo2 = lambda: runner.MallInfo2(fordblks=self.free)
        self.malloc_trim = self.trims.append


def test_the_heap_is_trimmed_only_when_enough_of_it_is_free():
    assert runner.trim_heap(8, _FakeLibc(9)) and runner.trim_heap(8, _FakeLibc(500))
    assert not runner.trim_heap(8, _FakeLibc(8)) and not runner.trim_heap(8, _FakeLibc(0))
    lib = _FakeLibc(9)
    runner.trim_heap(8, lib)
    assert lib.trims == [0]          # malloc_trim(0): every arena, all of its free pages
    no_info = _FakeLibc(0)
    del no_info.mallinfo2            # glibc before 2.33: trimmed without asking
    assert runner.trim_heap(8, no_info) and no_info.trims == [0]


def test_the_heap_is_trimmed_after_every_stage_an_eager_one_sooner(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(runner, "trim_heap", lambda mb, libc=None: calls.append(mb))
    monkeypatch.setattr(runner, "lean_allocators", lambda eager_heap=False: None)   # (process-wide)
    marker, out = str(tmp_path / "marker"), str(tmp_path / "out")
    runner.run_pipeline(lambda p: _two_stages(p, marker, out), ["--runner=DirectRunner"], eager_heap=True)
    assert len(calls) >= 2 and set(calls) == {runner.EAGER_TRIM_FREE_MB}   # one per stage
    stages, calls[:] = len(calls), []
    runner.run_pipeline(lambda p: _two_stages(p, marker, out), ["--runner=DirectRunner"])
    assert calls == [runner.TRIM_FREE_MB] * stages and runner.EAGER_TRIM_FREE_MB < runner.TRIM_FREE_MB
    assert sorted(Path(out).read_text().splitlines()) == sorted(["a:[1, 2]:True", "b:[3]:True"] * 2)
