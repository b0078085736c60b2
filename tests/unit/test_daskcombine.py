"""Combines on our Dask runner are lifted (pipelines/daskcombine.py): each partition's values
are combined where they are, a CombineGlobally's result is one partition made by one task
(no shuffle), a keyed combine shuffles accumulators; a combine lifting cannot keep exact
runs as Beam's expansion. Checked on the translated dask graph (synchronous scheduler)."""
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import window

from pipelines import daskfix


def _translate(build, partitions=2):
    from apache_beam.runners.dask.overrides import dask_overrides
    p = beam.Pipeline(options=PipelineOptions([]))
    build(p)
    p.replace_all(dask_overrides())
    bags, leaves = daskfix.translate(p, {}, p.options, partitions=partitions)
    return bags, leaves


def _keys(bag):
    from distributed.utils import key_split
    return {key_split(k) for k in dict(bag.__dask_graph__())}


def _spread(p, n=10):
    """n (key, value) pairs over two partitions (a Flatten of ten Creates)."""
    return [p | f"C{i}" >> beam.Create([(i % 3, i)]) for i in range(n)] | beam.Flatten()


class _Sum(beam.CombineFn):
    def create_accumulator(self):
        return 0

    def add_input(self, acc, x):
        return acc + x

    def merge_accumulators(self, accs):
        return sum(accs)

    def extract_output(self, acc):
        return acc


def test_a_global_combine_is_one_task_and_one_partition_without_a_shuffle():
    bags, [out] = _translate(lambda p: _spread(p) | beam.Values() | beam.CombineGlobally(_Sum())
                             | beam.Map(lambda s: ("total", s)))
    assert out.npartitions == 1          # the steps after it run one task, not one per partition
    assert not any("shuffle" in k for k in _keys(out))
    assert "CombineGlobally._Sum.CombinePerKey.Merge" in _keys(out)
    assert out.compute(scheduler="sync") == [("total", 45)]


def test_a_keyed_combine_shuffles_partial_accumulators_and_gives_the_expansions_result():
    bags, [out] = _translate(lambda p: _spread(p) | beam.CombinePerKey(_Sum()))
    assert out.npartitions == 2
    assert any(k.endswith(".Partial") for k in _keys(out))      # combined in each partition before the shuffle
    assert sorted(out.compute(scheduler="sync")) == [(0, 18), (1, 12), (2, 15)]


def test_a_combine_given_a_callable_is_lifted_too():
    bags, [out] = _translate(lambda p: _spread(p) | beam.CombinePerKey(sum) | beam.Map(lambda kv: kv))
    assert any(k.endswith(".Partial") for k in _keys(out))
    assert sorted(out.compute(scheduler="sync")) == [(0, 18), (1, 12), (2, 15)]


def test_a_combine_with_an_extra_argument_runs_as_its_expansion():
    class _Plus(beam.CombineFn):
        def create_accumulator(self, extra):
            return 0

        def add_input(self, acc, x, extra):
            return acc + x

        def merge_accumulators(self, accs, extra):
            return sum(accs)

        def extract_output(self, acc, extra):
            return acc + extra
    bags, [out] = _translate(lambda p: _spread(p) | beam.CombinePerKey(_Plus(), 100))
    assert not any(k.endswith(".Partial") for k in _keys(out))
    assert sorted(out.compute(scheduler="sync")) == [(0, 118), (1, 112), (2, 115)]


def test_a_combine_over_windowed_input_runs_as_its_expansion():
    def build(p):
        return (_spread(p) | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1]))
                | beam.WindowInto(window.FixedWindows(5)) | beam.CombinePerKey(_Sum()))
    bags, [out] = _translate(build)
    assert not any(k.endswith(".Partial") for k in _keys(out))


class _Split(beam.DoFn):
    def process(self, x):
        yield x if x % 2 == 0 else beam.pvalue.TaggedOutput("odd", x)


def test_a_pardo_selects_a_tagged_output_inside_its_own_task_without_a_filter_task():
    """(pipelines/daskfix.py `_Select`: each output of a multi-output ParDo used to be a
    `filter` task, plus an `untag` one for a tagged output, between the ParDo and each of
    its consumers.)"""
    def build(p):
        out = _spread(p, 6) | beam.Values() | beam.ParDo(_Split()).with_outputs("odd", main="even")
        odd_sum = out.odd | "OddSum" >> beam.CombineGlobally(sum)
        (out.even | "Plus" >> beam.Map(lambda x, s: (x, s), beam.pvalue.AsSingleton(odd_sum))
         | "Keep" >> beam.Map(lambda kv: kv))
        out.odd | "Odd" >> beam.Map(lambda x: ("odd", x))
    bags, leaves = _translate(build)
    keys = set().union(*(_keys(leaf) for leaf in leaves))
    assert not {"filter", "untag", "filter-untag"} & keys
    got = sorted((str(x[0]), x[1]) for leaf in leaves for x in leaf.compute(scheduler="sync"))
    assert got == [("0", 9), ("2", 9), ("4", 9), ("odd", 1), ("odd", 3), ("odd", 5)]
