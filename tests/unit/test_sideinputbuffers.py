"""pipelines.patches.side_input_buffers: a PCollection read only as a side input loses its runner
buffer once committed to state; consumers in later stages still read all of it."""
from pathlib import Path

import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner import fn_runner

from pipelines import patches, runner
from pipelines.patches import side_input_buffers as sideinputbuffers


def test_only_buffers_no_stage_reads_as_main_input():
    descriptors = {("t1", "side0"): (b"a", "iter"), ("t2", "side0"): (b"a", "iter"), ("t3", "s"): (b"b", "multimap")}
    assert sideinputbuffers.side_input_only_buffers(descriptors, {b"b": set()}) == {b"a"}


def test_side_input_buffers_are_freed_and_results_hold(tmp_path, monkeypatch):
    [(owner, name, patched)] = sideinputbuffers.replacements(patches.Context(in_process=True))
    assert (owner, name) == (fn_runner.FnApiRunner, "_execute_bundle")
    left = []

    def recording(self, context, manager, *args, **kwargs):
        result = patched(self, context, manager, *args, **kwargs)
        for descriptors in context.side_input_descriptors_by_stage.values():
            for buffer_id, _ in descriptors.values():
                if buffer_id in context.pcoll_buffers and buffer_id not in context.buffer_id_to_consumer_pairs:
                    left.append(buffer_id)
        return result

    monkeypatch.setenv(patches.OFF_VARIABLE, "side_input_buffers")   # the recording one instead
    monkeypatch.setattr(fn_runner.FnApiRunner, "_execute_bundle", recording)
    out = tmp_path / "out"

    def build(p):
        keys = p | "Keys" >> beam.Create([1, 2, 3]) | "Double" >> beam.Map(lambda x: 2 * x)
        both = p | "Both" >> beam.Create([10])
        first = (p | "Main" >> beam.Create([2, 4, 5])
                 | "InKeys" >> beam.Filter(lambda x, ks: x in ks, ks=beam.pvalue.AsList(keys))
                 | beam.Map(lambda x, b: x + b[0], b=beam.pvalue.AsList(both))
                 | "Regroup" >> beam.GroupBy(lambda x: x % 2))
        (first
         | "Again" >> beam.Map(lambda kv, ks: (kv[0], sorted(kv[1]), sum(ks)), ks=beam.pvalue.AsList(keys))
         | beam.Map(lambda t: Path(out).open("a").write(f"{t}\n")))
        both | "BothMain" >> beam.Map(lambda x: Path(out).open("a").write(f"main {x}\n"))

    runner.run_pipeline(build, ["--runner=DirectRunner"])
    assert sorted(out.read_text().splitlines()) == ["(0, [12, 14], 12)", "main 10"]
    assert not left
