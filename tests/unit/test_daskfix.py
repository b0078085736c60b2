"""pipelines/daskfix: Beam 2.77's DaskRunner, corrected, on an in-process dask cluster.

Each test pins one of the translation gaps the round meets (see daskfix's docstring)."""
import glob
import os

import apache_beam as beam
import distributed   # apache-beam[dask] (requirements.txt)
import pytest

from pipelines.runner import run_pipeline

DASK = "apache_beam.runners.dask.dask_runner.DaskRunner"


@pytest.fixture(scope="module")
def address():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


class _Split(beam.DoFn):
    def __init__(self, log):
        self.log = log

    def process(self, x):
        with open(self.log, "a") as f:   # a side effect: how often the element was processed
            f.write(f"{x}\n")
        yield x
        yield beam.pvalue.TaggedOutput("stats", {"n": x})


def _lines(pattern):
    return sorted(line for p in glob.glob(pattern) for line in open(p).read().split())


def test_tagged_outputs_side_inputs_and_every_sink(address, tmp_path):
    log = str(tmp_path / "processed.txt")

    def build(p):
        out = p | beam.Create(list(range(10))) | beam.ParDo(_Split(log)).with_outputs("stats", main="rows")
        total = out.stats | "N" >> beam.Map(lambda d: d["n"]) | beam.CombineGlobally(sum)
        (out.rows | "Plus" >> beam.Map(lambda x, t: x + t, beam.pvalue.AsSingleton(total))
         | "WriteRows" >> beam.io.WriteToText(str(tmp_path / "rows")))
        (out.stats | "Keys" >> beam.Map(lambda d: sorted(d)[0])
         | "WriteStats" >> beam.io.WriteToText(str(tmp_path / "stats")))

    run_pipeline(build, ["--runner", DASK, "--dask_client_address", address])
    # the main output's consumer saw only rows, the tagged output's only dicts
    assert _lines(str(tmp_path / "rows-*")) == sorted(str(45 + x) for x in range(10))
    assert _lines(str(tmp_path / "stats-*")) == ["n"] * 10
    # both sinks finalised (not only the last transform's branch), no temp files left
    assert not [p for p in os.listdir(tmp_path) if p.startswith("beam-temp")]
    # the side input's upstream (with its side effect) ran once, not again inside its consumer
    assert sorted(open(log).read().split()) == sorted(str(x) for x in range(10))
