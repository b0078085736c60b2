"""combined_side_input, CombinedView and CombinedValue: the value AsSingleton(CombineGlobally(fn))
and CombineGlobally(fn) give, empty input included, with no shuffle stage of their own."""
import apache_beam as beam
import numpy as np
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.unit.pipeline_graph import applied_transforms, transform_labels
from transforms.tableio.sideinput import (
    Accumulators,
    CombinedValue,
    CombinedView,
    accumulate,
    combine_fn,
    combined,
    combined_side_input,
)
from transforms.tableio.step import sum_dicts
from transforms.urls.fpsets import sorted_union


def _read(values, fn, show=repr):
    """What a consumer sees through each of ours and through Beam's own way."""
    with TestPipeline() as p:
        src = p | "Values" >> beam.Create(values, reshuffle=False)
        side = combined_side_input(src, "Combined", fn)
        view = CombinedView(accumulate(src, "Accumulated", fn), fn)
        value = beam.pvalue.AsSingleton(src | "AsValue" >> CombinedValue(fn))
        beams = beam.pvalue.AsSingleton(src | "Beams" >> beam.CombineGlobally(fn))
        got = (p | beam.Create([0])
               | beam.Map(lambda _, *sides: tuple(map(show, sides)), side, view, value, beams))
        assert_that(got, equal_to([(show(fn_of(values, fn)),) * 4]))


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


def _bundle(fn, elements):
    """What Accumulators gives for one bundle of `elements` (run by hand, no runner)."""
    dofn = Accumulators(combine_fn(fn))
    dofn.setup()
    dofn.start_bundle()
    for x in elements:
        dofn.process(x)
    out = [w.value for w in dofn.finish_bundle()]
    dofn.teardown()
    return out


def test_each_bundle_gives_one_accumulator_and_the_reader_merges_them():
    """A runner that splits the input (a cluster's workers) leaves several accumulators."""
    fn = combine_fn(sorted_union)
    accs = (_bundle(sorted_union, [np.array([7, 3], np.int64)])
            + _bundle(sorted_union, [])
            + _bundle(sorted_union, [np.array([3, 1], np.int64), np.array([9], np.int64)]))
    assert len(accs) == 2   # a bundle without input gives none
    assert combined(fn, accs).tolist() == [1, 3, 7, 9]
    assert combined(fn, []).tolist() == []
    assert combined(combine_fn(sum), _bundle(sum, [1, 2]) + _bundle(sum, [4])) == 7


def test_no_shuffle_and_no_default_injection():
    """CombineGlobally costs a stage for its shuffle, and one more to inject its default (which
    also holds the value a second time to the round's end); these cost none."""
    p = beam.Pipeline()
    src = p | beam.Create([np.array([1, 2], np.int64)])
    combined_side_input(src, "Keys", sorted_union)
    src | "Value" >> CombinedValue(sum_dicts)
    labels = transform_labels(p)
    assert any(label.startswith("Keys") for label in labels)
    assert any(label.startswith("Value") for label in labels)
    assert not [label for label in labels if "InjectDefault" in label or "DoOnce" in label]
    shuffles = [t.full_label for t in applied_transforms(p)
                if isinstance(t.transform, (beam.GroupByKey, beam.CombinePerKey, beam.CombineGlobally))]
    assert shuffles == []
