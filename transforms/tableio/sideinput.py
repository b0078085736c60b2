"""Combined values read as side inputs.

`combined_side_input` is Beam's own `AsSingleton(CombineGlobally(fn))` under one name the
stages share. A hand-made variant that skipped CombineGlobally's default-injection stage
(~6 ms a round) was measured against it in #50 and removed: it did not pay on a 100-page
round (-2.5 %, within the noise). `side_input_of` reads a value some step already combined
`.without_defaults()` (a planned-URL count the fetch and page steps share, URL-seen's probe
set), supplying `fn`'s empty result when the input was empty.
"""
import apache_beam as beam


class SingletonOr(beam.pvalue.AsSingleton):
    """`AsSingleton` whose default may be any value: Beam tests the default with `!=`,
    which a numpy array (a key set) cannot answer."""

    def _view_options(self):
        base = super(beam.pvalue.AsSingleton, self)._view_options()
        if self.default_value is beam.pvalue.AsSingleton._NO_DEFAULT:
            return base
        return dict(base, default=self.default_value)


def side_input_of(combined, fn):
    """The side input of `combined`, a `CombineGlobally(fn).without_defaults()` output: its
    one value, or `fn`'s empty result when it has none (what `CombineGlobally(fn)` gives)."""
    combine_fn = beam.CombineFn.maybe_from_callable(fn)
    return SingletonOr(combined, combine_fn.extract_output(combine_fn.create_accumulator()))


def combined_side_input(pcoll, label, fn):
    """`AsSingleton(pcoll | label >> CombineGlobally(fn))`: `fn`'s empty result for an
    empty `pcoll`."""
    return beam.pvalue.AsSingleton(pcoll | label >> beam.CombineGlobally(fn))
