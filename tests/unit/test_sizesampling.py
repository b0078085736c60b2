"""pipelines.patches.size_sampling: the in-process runner samples no element sizes; element counts
stay; an output whose counters type-check its elements keeps sampling."""
import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import monitoring_infos as mi
from apache_beam.runners.worker import opcounters
from apache_beam.utils import counters

from pipelines import patches, runner
from pipelines.patches import size_sampling as sizesampling


class _Receiver:
    def __init__(self, opcounter):
        self.opcounter = opcounter


class _Op:
    def __init__(self, *receivers):
        self.receivers = list(receivers)


def _counters(constraints=None, coder=PickleCoder()):
    return opcounters.OperationCounters(counters.CounterFactory(), "step", coder, 0,
                                        producer_type_hints=constraints)


def test_stop_sampling_leaves_type_checked_and_coderless_outputs():
    plain, checked, coderless = _counters(), _counters({"label": ("x", int)}), _counters(coder=None)
    assert sizesampling.stop_sampling([_Op(_Receiver(plain), _Receiver(checked)), _Op(_Receiver(coderless)), object()]) == 1
    assert plain.coder_impl is None
    assert checked.coder_impl is not None and checked.should_sample()
    assert not plain.should_sample()


def _sizes_and_counts(result):
    sampled, counted = {}, {}
    for info in result.monitoring_infos():
        pcoll = info.labels.get("PCOLLECTION")
        if info.urn == mi.SAMPLED_BYTE_SIZE_URN:
            sampled[pcoll] = mi.extract_distribution(info)[0]   # how many elements were measured
        elif info.urn == mi.ELEMENT_COUNT_URN:
            counted[pcoll] = mi.extract_counter_value(info)
    return sampled, counted


def _build(p):
    (p | beam.Create(list(range(300)))
     | "Rows" >> beam.Map(lambda x: {"n": x, "text": "x" * 100})
     | "Back" >> beam.Map(lambda row: row["n"]))


def test_a_round_on_the_in_process_runner_measures_no_element():
    result = runner.run_pipeline(_build, ["--runner=DirectRunner"])
    sampled, counted = _sizes_and_counts(result)
    assert sorted(counted.values()).count(300) >= 3   # Create's output, Rows, Back: all counted
    assert sampled and not any(sampled.values())


def test_without_the_patch_beam_measures_elements(monkeypatch):
    """The control: the same pipeline with the patch switched off samples sizes (so the test
    above can fail)."""
    monkeypatch.setenv(patches.OFF_VARIABLE, "size_sampling")
    sampled, counted = _sizes_and_counts(runner.run_pipeline(_build, ["--runner=DirectRunner"]))
    assert any(sampled.values()) and sorted(counted.values()).count(300) >= 3
