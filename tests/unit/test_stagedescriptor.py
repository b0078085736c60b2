"""pipelines.patches.stage_descriptor: each stage's descriptor names only its transforms' PCollections,
and pipelines that need side inputs, combines, shuffles and flattens still run right."""
from pathlib import Path

import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner import execution

from pipelines import patches, runner
from pipelines.patches import stage_descriptor as stagedescriptor


class _PC:
    def __init__(self, inputs, outputs):
        self.inputs, self.outputs = inputs, outputs


def test_stage_pcollections_keeps_what_transforms_read_or_write():
    pcolls = {"a": 1, "b": 2, "c": 3, "d": 4}
    transforms = [_PC({"in": "a"}, {"out": "b"}), _PC({"in": "b", "side": "c"}, {}), _PC({}, {"x": "zz"})]
    assert stagedescriptor.stage_pcollections(transforms, pcolls) == {"a": 1, "b": 2, "c": 3}


def test_descriptors_are_narrowed_and_results_hold(tmp_path, monkeypatch):
    built = []
    [(owner, name, patched)] = stagedescriptor.replacements(patches.Context(in_process=True))
    assert (owner, name) == (execution.BundleContextManager, "_build_process_bundle_descriptor")

    def recording(self):
        descriptor = patched(self)
        built.append((descriptor, len(self.execution_context.pipeline_components.pcollections)))
        return descriptor

    monkeypatch.setenv(patches.OFF_VARIABLE, "stage_descriptor")   # the recording one instead
    monkeypatch.setattr(execution.BundleContextManager, "_build_process_bundle_descriptor", recording)
    out = tmp_path / "out"

    def build(p):
        side = p | "Side" >> beam.Create([10])
        a = p | "A" >> beam.Create([("x", 1), ("y", 2), ("x", 3)])
        b = p | "B" >> beam.Create([("y", 4)])
        ((a, b) | beam.Flatten()
         | beam.CombinePerKey(sum)
         | beam.Map(lambda kv, s: (kv[0], kv[1] + s), s=beam.pvalue.AsSingleton(side))
         | beam.GroupByKey()
         | beam.Map(lambda kv: Path(out).open("a").write(f"{kv[0]}={sorted(kv[1])}\n")))

    runner.run_pipeline(build, ["--runner=DirectRunner"])
    assert sorted(out.read_text().split()) == ["x=[14]", "y=[16]"]
    assert len(built) > 3
    for descriptor, total in built:
        used = {pc for t in descriptor.transforms.values() for pc in (*t.inputs.values(), *t.outputs.values())}
        assert set(descriptor.pcollections) == used
        assert descriptor.coders and descriptor.windowing_strategies   # kept whole
    assert sum(len(d.pcollections) for d, _ in built) < sum(total for _, total in built)
