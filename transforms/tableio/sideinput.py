"""Combined values read as side inputs.

`combined_side_input` reads `CombineGlobally(fn).without_defaults()` through `side_input_of`:
the value Beam's own `AsSingleton(CombineGlobally(fn))` gives, `fn`'s empty result included,
without CombineGlobally's default-injection stage. That stage (#50: ~6 ms a round, not worth
it for time) holds the combined value a second time until the round ends: with the near
pass's own band-key set gone too, the in-process runner's live buffers at the end of a 45 207-page
round 32.8 -> 12.3 MB and that round's process peak 523-527 -> 463-477 MB (#53, RESULTS.md,
sixth sitting). `side_input_of` also reads a value some step already combined
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
    """What `AsSingleton(pcoll | label >> CombineGlobally(fn))` gives (`fn`'s empty result
    for an empty `pcoll`), without the default-injection stage that holds it twice."""
    return side_input_of(pcoll | label >> beam.CombineGlobally(fn).without_defaults(), fn)
