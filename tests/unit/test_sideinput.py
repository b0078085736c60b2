"""side_input_of and combined_side_input: the value AsSingleton(CombineGlobally(fn)) gives,
empty input included, without CombineGlobally's default-injection stage."""
import apache_beam as beam
import numpy as np
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.unit.pipeline_graph import transform_labels
from transforms.tableio.sideinput import combined_side_input, side_input_of
from transforms.tableio.step import sum_dicts
from transforms.urls.fpsets import sorted_union


def _read(values, fn, show=repr):
    """What a consumer sees through side_input_of and through Beam's own way."""
    with TestPipeline() as p:
        src = p | "Values" >> beam.Create(values, reshuffle=False)
        ours = side_input_of(src | "Ours" >> beam.CombineGlobally(fn).without_defaults(), fn)
        combined = combined_side_input(src, "Combined", fn)
        beams = beam.pvalue.AsSingleton(src | "Beams" >> beam.CombineGlobally(fn))
        got = (p | beam.Create([0])
               | beam.Map(lambda _, *sides: tuple(map(show, sides)), ours, combined, beams))
        assert_that(got, equal_to([(show(fn_of(values, fn)),) * 3]))


def fn_of(values, fn):
    c = beam.CombineFn.maybe_from_callable(fn)
    return c.extract_output(c.add_inputs(c.create_accumulator(), values))


def _arr(a):
    return (str(np.asarray(a).dtype), np.asarray(a).tolist())


def test_sums_and_counts_with_and_without_input():
    for values in ([3, 4], []):
        _read(values, sum)
        _read(values, beam.combiners.CountCombineFn())
    for values in ([{"a": 1}, {"a": 2, "b": 1}], []):
        _read(values, sum_dicts, lambda d: sorted(d.items()))


def test_a_numpy_key_set_and_its_empty_default():
    # Beam's own AsSingleton cannot take an array default (it compares it with !=)
    for values in ([np.array([5, 1], np.int64), np.array([1, 9], np.int64)], []):
        _read(values, sorted_union, _arr)
    assert _arr(fn_of([], sorted_union)) == ("int64", [])


def test_a_combined_side_input_has_no_default_injection():
    """CombineGlobally's default injection holds the combined value a second time to the
    round's end (a key set of a 45 000-page round: tens of MB)."""
    p = beam.Pipeline()
    src = p | beam.Create([np.array([1, 2], np.int64)])
    combined_side_input(src, "Keys", sorted_union)
    labels = transform_labels(p)
    assert any(label.startswith("Keys") for label in labels)
    assert not [label for label in labels if "InjectDefault" in label or "DoOnce" in label]
