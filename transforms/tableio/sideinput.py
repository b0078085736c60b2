"""Global combines without a stage of their own: their accumulators read as a side input.

Beam runs `CombineGlobally(fn)` as accumulators made where the input is (one per bundle), a
shuffle, a stage that merges them, and (without `.without_defaults()`) one more that puts
`fn`'s empty result in when there was no input. Here the accumulators are the side input
itself and its reader merges them (`CombinedView`): no stage runs between the producer and
the consumer. A stage of the in-process runner costs ~4 ms, plus ~2 ms between two stages,
however little it holds (#53, RESULTS.md), and a round used ten such combines for its key
sets, counts and counters: tens of milliseconds a round, most of a tail round of a few URLs.

- `accumulate(pcoll, label, fn)`: the accumulators (`Accumulators`: one per bundle with input);
- `CombinedView(accumulators, fn)`: the side input of their combined value (`fn`'s empty
  result when there are none), what `AsSingleton(pcoll | CombineGlobally(fn))` gives;
- `combined_side_input(pcoll, label, fn)`: both at once;
- `CombinedValue(fn)`: a PCollection of that one value, for steps that take it as their input
  (`CombineGlobally(fn)` with its default), in the stage of a one-element `Create`.

A consumer that runs in several bundles merges once in each (as Beam decodes any side input
in each bundle); the merge is `fn`'s own. The default-injection stage of `CombineGlobally`
also held the combined value a second time until the round ended (#53, sixth sitting: the
in-process runner's live buffers at the end of a 45 207-page round 32.8 -> 12.3 MB without it).
"""
import apache_beam as beam

from transforms.tableio.globalwindow import in_global_window


class Accumulators(beam.DoFn):
    """Elements -> `fn`'s accumulator of each bundle's elements (compacted; none for a bundle
    without elements), as Beam's lifted combine makes them before its shuffle."""

    def __init__(self, fn):
        self.fn = fn

    def setup(self):
        self.fn.setup()

    def start_bundle(self):
        self._acc = None

    def process(self, element):
        if self._acc is None:
            self._acc = self.fn.create_accumulator()
        self._acc = self.fn.add_input(self._acc, element)

    def finish_bundle(self):
        acc, self._acc = self._acc, None
        if acc is not None:
            yield in_global_window(self.fn.compact(acc))

    def teardown(self):
        self.fn.teardown()


def combine_fn(fn) -> beam.CombineFn:
    """`fn` as a CombineFn (a callable such as `sum` is wrapped as Beam wraps it)."""
    return beam.CombineFn.maybe_from_callable(fn)


def accumulate(pcoll, label, fn):
    """`pcoll` -> `fn`'s accumulators of it (read them with `CombinedView`)."""
    return pcoll | label >> beam.ParDo(Accumulators(combine_fn(fn)))


def combined(fn, accumulators):
    """`fn`'s result over `accumulators` (its empty result for none)."""
    accumulators = list(accumulators)
    acc = fn.merge_accumulators(accumulators) if accumulators else fn.create_accumulator()
    return fn.extract_output(acc)


class CombinedView(beam.pvalue.AsSideInput):
    """Side input of `accumulate(..., fn)`'s output: `fn`'s result over all of it, merged by
    the reader."""

    def __init__(self, accumulators, fn):
        super().__init__(accumulators)
        self.fn = combine_fn(fn)

    def _view_options(self):
        return dict(super()._view_options(), combine_fn=self.fn)

    @staticmethod
    def _from_runtime_iterable(it, options):
        return combined(options["combine_fn"], it)


def combined_side_input(pcoll, label, fn):
    """What `AsSingleton(pcoll | label >> CombineGlobally(fn))` gives (`fn`'s empty result
    for an empty `pcoll`), with no stage between `pcoll`'s and its reader's."""
    return CombinedView(accumulate(pcoll, label, fn), fn)


class CombinedValue(beam.PTransform):
    """`pcoll` -> a PCollection of one element, `fn`'s result over it (what
    `CombineGlobally(fn)` gives, empty input included), made in the stage that reads it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = combine_fn(fn)

    def expand(self, pcoll):
        view = CombinedView(accumulate(pcoll, "Accumulate", self.fn), self.fn)
        return (pcoll.pipeline | "Once" >> beam.Create([None], reshuffle=False)
                | "Value" >> beam.Map(_value, view))


def _value(_, value):
    return value
