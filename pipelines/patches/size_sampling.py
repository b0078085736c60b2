"""No element-size sampling in the in-process runner.

Beam's workers estimate the mean byte size of every PCollection (the "sampled byte size"
a runner's UI shows) by encoding sampled elements with the PCollection's coder: every one
of an operation's first ~10 elements, then ~7 per doubling (`OperationCounters`). Most of
a round's elements are dicts, lists of rows or pickled bundles, whose coder is pickle, so
each sample is pickled once more just to be measured: 66–94 pickles per output of 5 000
elements (Beam's own `should_sample` over 20 seeds, median 81.5), and every one of a stage's
few batch elements (a list of up to 2 000 rows, a visited row ~20 KB) pickled whole. py-spy
(native frames) of a 5 000-page round's process put 4.7 % of its samples there (3 203 of
68 286); without it that round's stages after the fetch took ~0.1 s less (README, "Where a
round's time goes") and the round's process peaked 25–28 MB lower (README, "Memory
budget"). In-process nobody reads those sizes.

The patch lets Beam build and set up each stage's operations and then takes the coder off
each output's counters, so they count elements (the element counts and user metrics are
unchanged) and sample none. An output whose counters type-check elements
(`--performance_runtime_type_check`, which checks sampled elements) is left as it is, and
so is a counter that no longer has the attribute (it keeps sampling: Beam's behaviour).
"""
from pipelines.patches import target

NAME = "size_sampling"
IN_PROCESS = True


def stop_sampling(ops) -> int:
    """Take the coder off the output counters of `ops` (a stage's operations) that
    type-check nothing; how many were changed."""
    changed = 0
    for op in ops:
        for receiver in getattr(op, "receivers", None) or ():
            counters = getattr(receiver, "opcounter", None)
            if getattr(counters, "coder_impl", None) is None or getattr(counters, "output_type_constraints", True):
                continue
            try:
                counters.coder_impl = None
            except AttributeError:   # not settable in some other Beam: left sampling
                continue
            changed += 1
    return changed


def _unsampled(original):
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)   # builds the stage's operations and sets them up
        stop_sampling(getattr(self, "ops", {}).values())

    __init__.__wrapped__ = original
    return __init__


def replacements(context):
    """Stages built while active sample no element sizes."""
    from apache_beam.runners.worker import bundle_processor
    cls = bundle_processor.BundleProcessor
    return [(cls, "__init__", _unsampled(target(cls, "__init__")))]
