"""Cheaper pipeline construction: memoise Beam helpers that a round calls thousands of times.

A round applies ~470 transforms (~240 ParDos). Beam 2.77 then calls
`userstate.get_dofn_specs` six times per ParDo (ParDo.__init__, to_runner_api, the
keyed-input check, and again when the bundle processor is built), and each call runs
`inspect.signature` on every bound method of the DoFn (~30), ~60 000 signatures in all;
and `PipelineOptions.view_as(TypeOptions)` ~3 times per apply, each building a new
argparse parser. Together that is about two thirds of a round's fixed cost.

Beyond those, every ParDo's `DoFnSignature` (built in ParDo.__init__, again in the bundle
processor) runs `core.get_function_args_defaults`, i.e. `inspect.signature`, on each of its
DoFn's ~8 methods (~26 000 calls over six small rounds, ~0.15 s per round), and
ParDo.__init__ reads the source of `process` (`inspect.getsourcelines`, tokenised) to warn
about a `process` that both yields and returns (~0.05 s per round).

All results are pure functions of their key, so memoising them changes no output:
  * the state/timer specs of a DoFn are the defaults of its methods' parameters, i.e. of
    its class, unless an instance carries its own bound method (then it is not cached);
  * a view shares its options' value dict, so one view per (options object, view class)
    behaves like a fresh one;
  * the arguments and defaults of a plain function, or of a method bound to anything, are
    those of its function object (the bound first argument is dropped either way), so they
    are kept per function object (weakly); other callables are not cached;
  * the yield-and-return check reads the source of the function `inspect` unwraps it to,
    which its code object names (file and first line): it is kept per code object, so the
    lambdas a new round makes again hit the cache (~1 200 checks over 7 small rounds,
    0.066 s);
  * an options view's option names are those of its namespace, listed again (`dir`,
    sorted) on every attribute read (~2 100 reads a round, ~12 ms, computed): kept while the
    namespace has the same attribute names.
Beam asks `is_in_ipython()` when the first transform is applied, which imports IPython
(when installed, as with the notebook tools of requirements-dev) just to learn that no
IPython shell runs: 0.20 s and ~4 MB of every process that builds a pipeline (a
`pipelines.round` run: once per round). A process that has not imported IPython is not in
an IPython shell, so the probe is asked only once IPython is imported.
Declared output types are kept with the type check off. A round runs without Beam's
construction-time type check (`runner.pipeline_options`), which in Beam 2.77 also drops every
element type, declared ones included: each `with_output_types(pa.Table)` then fell back to
pickling its tables (and to pickling each sampled element again to estimate its size),
instead of `tableio.ArrowTableCoder`. `_declared_types` lets Beam type a result when it is
cheap to: the transform declares its output type (`with_output_types`, explicitly: not
inferred from annotations, which nothing checks), or it is a shuffle or flatten whose type
follows from its input; every other result stays untyped, as before (no bytecode inference).
With `--pipeline_type_check` Beam's own inference runs unchanged.

Active in the launcher (`pipelines.patches.active`) on every runner. The memoisations leave
the pipeline proto unchanged; the kept types give those PCollections their declared coders,
which the proto carries to any runner (nothing on a distributed runner's workers depends on
the patch). Without it a round is slower, never different: its tables are pickled instead.
"""
import sys
import types
import weakref

from pipelines.patches import target, uses


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


def _cached_per_function(original, copy=None):
    """`original(f)` memoised per function object: one cache for plain functions, one for
    methods (keyed by their `__func__`: the bound first argument is never in the answer).
    Other callables (partials, builtins, callable objects) go to `original` every time."""
    plain, bound = weakref.WeakKeyDictionary(), weakref.WeakKeyDictionary()

    def cached(f):
        if type(f) is types.FunctionType:
            cache, key = plain, f
        elif type(f) is types.MethodType and type(f.__func__) is types.FunctionType:
            cache, key = bound, f.__func__
        else:
            return original(f)
        if key not in cache:
            cache[key] = original(f)
        return cache[key] if copy is None else copy(cache[key])

    cached.__wrapped__ = original
    return cached


def _own_lists(got):
    return list(got[0]), list(got[1])   # callers get their own lists, as before


def _cached_per_code(original):
    """`original(f)` memoised per code object of the function `inspect.unwrap(f)` gives (of a
    method's function): what reads only that function's source. Anything else (builtins,
    partials, callable objects) goes to `original` every time."""
    import inspect
    cache = weakref.WeakKeyDictionary()

    def cached(f):
        try:
            unwrapped = inspect.unwrap(f) if type(f) in (types.FunctionType, types.MethodType) else None
        except ValueError:   # a __wrapped__ cycle: Beam's own answer (or error)
            unwrapped = None
        if type(unwrapped) is types.MethodType:
            unwrapped = unwrapped.__func__
        if type(unwrapped) is not types.FunctionType:
            return original(f)
        code = unwrapped.__code__
        if code not in cache:
            cache[code] = original(f)
        return cache[code]

    cached.__wrapped__ = original
    return cached


def _cached_option_list(original):
    """PipelineOptions._visible_option_list kept per namespace of visible options (by
    identity: namespaces compare by value and do not hash), while that namespace's attribute
    names stay the same; callers get their own list."""
    kept = {}   # id(namespace) -> (weak reference to it, its attribute names, the list)

    def visible_option_list(self):
        namespace = self._visible_options
        try:
            names = tuple(vars(namespace))
        except TypeError:   # a namespace without attributes: not kept
            return original(self)
        got = kept.get(id(namespace))
        if got is None or got[0]() is not namespace or got[1] != names:
            try:
                ref = weakref.ref(namespace, lambda _, key=id(namespace): kept.pop(key, None))
            except TypeError:   # no weak references: not kept
                return original(self)
            got = kept[id(namespace)] = (ref, names, original(self))
        return list(got[2])

    visible_option_list.__wrapped__ = original
    return visible_option_list


def _declared_types(original, cheap_kinds, type_options):
    """Pipeline._infer_result_type that types a result with the type check off when its
    transform declares its output type or is one of `cheap_kinds` (module docstring)."""

    def infer(self, transform, inputs, result_pcollection):
        options = self._options.view_as(type_options)
        declared = getattr(getattr(transform, "_type_hints", None), "output_types", None)
        if options.pipeline_type_check or not (declared or isinstance(transform, cheap_kinds)):
            return original(self, transform, inputs, result_pcollection)
        options.pipeline_type_check = True        # Beam's own typing, for this result only
        try:
            return original(self, transform, inputs, result_pcollection)
        finally:
            options.pipeline_type_check = False

    infer.__wrapped__ = original
    return infer


def _ipython_only_if_imported(original):
    def is_in_ipython():
        return "IPython" in sys.modules and original()
    is_in_ipython.__wrapped__ = original
    return is_in_ipython


NAME = "construction"
IN_PROCESS = False   # the launcher builds the pipeline on every runner


def replacements(context):
    """Memoised userstate.get_dofn_specs, PipelineOptions.view_as and _visible_option_list,
    and core's two per-function helpers, declared output types kept, and the IPython probe
    skipped outside IPython."""
    from apache_beam import pipeline
    from apache_beam.options import pipeline_options
    from apache_beam.transforms import core, userstate
    from apache_beam.utils import interactive_utils
    options = pipeline_options.PipelineOptions
    infer = target(pipeline.Pipeline, "_infer_result_type")
    uses(infer, "pipeline_type_check")   # the flag `_declared_types` turns on for one result

    def wrap(owner, name, make, *args):
        return owner, name, make(target(owner, name), *args)
    # every caller (core, runners.common, worker.operations, userstate itself) looks it up
    # as userstate.get_dofn_specs at call time
    return [wrap(userstate, "get_dofn_specs", _cached_dofn_specs),
            wrap(options, "view_as", _cached_view_as),
            wrap(options, "_visible_option_list", _cached_option_list),
            wrap(pipeline.Pipeline, "_infer_result_type", _declared_types,
                 (core.GroupByKey, core.Flatten, core.Impulse), pipeline_options.TypeOptions),
            # both are looked up as core.<name> at call time (get_function_arguments,
            # ParDo.__init__, CallableWrapperDoFn, MapTuple, FlatMapTuple)
            wrap(core, "get_function_args_defaults", _cached_per_function, _own_lists),
            wrap(core, "_check_fn_use_yield_and_return", _cached_per_code),
            # pipeline.py calls its own imported name; alter_label_if_ipython the module's
            wrap(interactive_utils, "is_in_ipython", _ipython_only_if_imported),
            wrap(pipeline, "is_in_ipython", _ipython_only_if_imported)]
