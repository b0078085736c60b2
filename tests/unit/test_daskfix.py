"""The six translation bugs of Beam 2.77's DaskRunner (docs/beam-dask-bugs.md): one minimal
pipeline each, run on Beam's runner (strict xfail: it shows the bug, and says so the day a
Beam release fixes it) and on ours, `pipelines.daskrunner.DaskRunner` (passes), on an
in-process dask.distributed cluster.

What each pipeline's DoFns saw is read back from files they write (`_Record`): a dask task
returns no elements to the launcher."""
import glob
import os
import uuid

import apache_beam as beam
import distributed   # apache-beam[dask] (requirements.txt)
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.dask.dask_runner import DaskRunner as BeamDaskRunner

from pipelines.daskrunner import DaskRunner

RUNNERS = [pytest.param(BeamDaskRunner, marks=pytest.mark.xfail(strict=True, reason="Beam 2.77's DaskRunner bug"),
                        id="beam"),
           pytest.param(DaskRunner, id="ours")]


@pytest.fixture(scope="module")
def address():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


class _Record(beam.DoFn):
    """Writes repr() of each element it sees, one file per bundle, under `folder`."""

    def __init__(self, folder):
        self.folder = folder

    def start_bundle(self):
        self.seen = []

    def process(self, x):
        self.seen.append(repr(x))

    def finish_bundle(self):
        os.makedirs(self.folder, exist_ok=True)
        with open(os.path.join(self.folder, uuid.uuid4().hex), "w") as f:
            f.write("".join(s + "\n" for s in self.seen))


def _seen(folder):
    return sorted(line for p in glob.glob(os.path.join(folder, "*")) for line in open(p).read().splitlines())


def _run(runner_cls, build, address, *flags, test_runner_api="AUTO"):
    p = beam.Pipeline(runner=runner_cls(), options=PipelineOptions(
        ["--dask_client_address", address, *flags]))
    build(p)
    p.run(test_runner_api=test_runner_api).wait_until_finish()


class _Split(beam.DoFn):
    def process(self, x):
        yield x if x % 2 == 0 else beam.pvalue.TaggedOutput("odd", x)


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_1_each_output_of_a_multi_output_pardo_reaches_only_its_consumers(runner_cls, address, tmp_path):
    def build(p):
        out = p | beam.Create(list(range(6))) | beam.ParDo(_Split()).with_outputs("odd", main="even")
        out.odd | "Odd" >> beam.ParDo(_Record(str(tmp_path / "odd")))
    _run(runner_cls, build, address)
    assert _seen(str(tmp_path / "odd")) == ["1", "3", "5"]


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_2_every_branch_runs_not_only_the_last(runner_cls, address, tmp_path):
    def build(p):
        xs = p | beam.Create([1, 2])
        xs | "A" >> beam.ParDo(_Record(str(tmp_path / "a")))
        xs | "Double" >> beam.Map(lambda x: 2 * x) | "B" >> beam.ParDo(_Record(str(tmp_path / "b")))
    _run(runner_cls, build, address)
    assert (_seen(str(tmp_path / "a")), _seen(str(tmp_path / "b"))) == (["1", "2"], ["2", "4"])


class _Upstream(beam.DoFn):
    """An upstream step with a side effect (as fetching a page is): one file per element."""

    def __init__(self, folder):
        self.folder = folder

    def process(self, x):
        os.makedirs(self.folder, exist_ok=True)
        with open(os.path.join(self.folder, uuid.uuid4().hex), "w") as f:
            f.write(f"{x}\n")
        yield x


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_3_a_side_input_is_computed_once_not_again_inside_its_consumer(runner_cls, address, tmp_path):
    def build(p):
        upstream = p | "Nums" >> beam.Create([1, 2, 3]) | beam.ParDo(_Upstream(str(tmp_path / "upstream")))
        used = p | "Zero" >> beam.Create([0]) | "Use" >> beam.Map(lambda x, side: x + len(side),
                                                                  beam.pvalue.AsList(upstream))
        # the upstream also feeds the main graph (as the fetch feeds the round's tables)
        (used, upstream) | beam.Flatten() | beam.ParDo(_Record(str(tmp_path / "out")))
    _run(runner_cls, build, address)
    assert _seen(str(tmp_path / "upstream")) == ["1", "2", "3"]   # each element processed once
    assert _seen(str(tmp_path / "out")) == ["1", "2", "3", "3"]


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_4_a_dofn_gets_a_side_inputs_value_not_the_view_object(runner_cls, address, tmp_path):
    """(Seen when the pipeline is not rebuilt from its runner-API proto, which p.run() does
    for this runner by default: a pipeline with cross-language transforms, or run with
    test_runner_api=False. The rebuilt ParDos hold placeholders, the originals the views.)"""
    def build(p):
        total = p | "Nums" >> beam.Create([1, 2, 3]) | beam.CombineGlobally(sum)
        (p | "Xs" >> beam.Create([10]) | beam.Map(lambda x, t: x + t, beam.pvalue.AsSingleton(total))
         | beam.ParDo(_Record(str(tmp_path / "out"))))
    _run(runner_cls, build, address, test_runner_api=False)
    assert _seen(str(tmp_path / "out")) == ["16"]


class _Batch(beam.DoFn):
    """Outputs nothing per element; the bundle's count when the bundle ends."""

    def start_bundle(self):
        self.n = 0

    def process(self, x):
        self.n += 1

    def finish_bundle(self):
        yield beam.transforms.window.GlobalWindows.windowed_value(self.n)


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_5_outputs_of_finish_bundle_are_kept(runner_cls, address, tmp_path):
    def build(p):
        p | beam.Create(list(range(5))) | beam.ParDo(_Batch()) | beam.ParDo(_Record(str(tmp_path / "out")))
    _run(runner_cls, build, address)
    assert _seen(str(tmp_path / "out")) == ["5"]


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_6_each_partition_outputs_only_its_own_elements(runner_cls, address, tmp_path):
    def build(p):
        (p | beam.Create(list(range(6))) | beam.Map(lambda x: x * 10)
         | beam.ParDo(_Record(str(tmp_path / "out"))))
    _run(runner_cls, build, address, "--dask_npartitions", "3")
    assert _seen(str(tmp_path / "out")) == ["0", "10", "20", "30", "40", "50"]


def test_a_round_on_beams_own_dask_runner_is_refused_with_one_line(tmp_path, capsys):
    from pipelines import round as round_mod
    for name in ("DaskRunner", "apache_beam.runners.dask.dask_runner.DaskRunner"):
        assert round_mod.main(["--crawl_dir", str(tmp_path), "--runner", name]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --runner") and "pipelines.daskrunner.DaskRunner" in err
        assert err.count("\n") == 1


def test_a_pcollection_has_at_most_the_partitions_the_cluster_runs_at_once():
    """Beam's translation keeps every partition a Flatten concatenates and shuffles each
    GroupByKey over all of them (a round was ~7 000 dask tasks); ours bounds them, and the
    grouping is the same."""
    from apache_beam.runners.dask.overrides import dask_overrides

    from pipelines import daskfix
    p = beam.Pipeline(options=PipelineOptions([]))
    parts = [p | f"C{i}" >> beam.Create([(i % 3, i)]) for i in range(10)]
    parts | beam.Flatten() | beam.GroupByKey()
    p.replace_all(dask_overrides())   # new PCollections for the Flatten and the GroupByKey
    bags, leaves = daskfix.translate(p, {}, p.options, partitions=2)
    assert max(bag.npartitions for bag in bags.values()) == 2
    [grouped] = leaves
    assert grouped.npartitions == 2   # the step after a shuffle has work for every thread
    got = sorted((k, sorted(v)) for k, v in grouped.compute(scheduler="sync"))
    assert got == [(0, [0, 3, 6, 9]), (1, [1, 4, 7]), (2, [2, 5, 8])]
