"""Cheaper pipeline construction: memoise two Beam helpers that a round calls thousands of times.

A round applies ~470 transforms (~240 ParDos). Beam 2.77 then calls
`userstate.get_dofn_specs` six times per ParDo (ParDo.__init__, to_runner_api, the
keyed-input check, and again when the bundle processor is built), and each call runs
`inspect.signature` on every bound method of the DoFn (~30), ~60 000 signatures in all;
and `PipelineOptions.view_as(TypeOptions)` ~3 times per apply, each building a new
argparse parser. Together that is about two thirds of a round's fixed cost.

Both results are pure functions of their key, so memoising them changes no output:
  * the state/timer specs of a DoFn are the defaults of its methods' parameters, i.e. of
    its class, unless an instance carries its own bound method (then it is not cached);
  * a view shares its options' value dict, so one view per (options object, view class)
    behaves like a fresh one.
`install()` patches the Beam modules of this (launcher) process only: the pipeline proto
sent to any runner is unchanged, so nothing depends on it on Flink/Dataflow workers. It
is idempotent, and does nothing if Beam's internals no longer look as expected.
"""
import types
import weakref

_installed = False


def _cached_dofn_specs(original):
    cache = {}

    def get_dofn_specs(dofn):
        if any(isinstance(v, types.MethodType) for v in vars(dofn).values()):
            return original(dofn)
        key = type(dofn)
        specs = cache.get(key)
        if specs is None:
            specs = cache[key] = original(dofn)
        return set(specs[0]), set(specs[1])   # callers get their own sets, as before

    get_dofn_specs.__wrapped__ = original
    return get_dofn_specs


def _cached_view_as(original):
    views = weakref.WeakKeyDictionary()

    def view_as(self, cls):
        per_options = views.setdefault(self, {})
        view = per_options.get(cls)
        if view is None or view._all_options is not self._all_options or view._flags is not self._flags:
            view = per_options[cls] = original(self, cls)
        return view

    view_as.__wrapped__ = original
    return view_as


def install():
    """Memoise userstate.get_dofn_specs and PipelineOptions.view_as (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    from apache_beam.options import pipeline_options
    from apache_beam.transforms import userstate
    original = getattr(userstate, "get_dofn_specs", None)
    if callable(original) and not hasattr(original, "__wrapped__"):
        # every caller (core, runners.common, worker.operations, userstate itself) looks it
        # up as userstate.get_dofn_specs at call time
        userstate.get_dofn_specs = _cached_dofn_specs(original)
    view_as = pipeline_options.PipelineOptions.__dict__.get("view_as")
    if callable(view_as) and not hasattr(view_as, "__wrapped__"):
        pipeline_options.PipelineOptions.view_as = _cached_view_as(view_as)
