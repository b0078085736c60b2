"""pipelines.patches.construction memoises Beam helpers; the results must be what Beam computes."""
import functools
import subprocess
import sys
import types
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions, TypeOptions
from apache_beam.transforms import userstate
from apache_beam.transforms.userstate import BagStateSpec, TimerSpec, on_timer
from apache_beam.coders import VarIntCoder
from apache_beam.transforms.timeutil import TimeDomain

from pipelines import patches
from pipelines.patches import construction
from transforms.urlseen import step as seen


@pytest.fixture(autouse=True)
def construction_patch():
    """Each test runs with the construction patch active, as a round is built."""
    with patches.active(patches.Context(in_process=False), environ={}, only=("construction",)) as on:
        assert on == ["construction"]
        yield


class _Stateful(beam.DoFn):
    BAG = BagStateSpec("bag", VarIntCoder())
    TIMER = TimerSpec("t", TimeDomain.WATERMARK)

    def process(self, kv, bag=beam.DoFn.StateParam(BAG), t=beam.DoFn.TimerParam(TIMER)):
        bag.add(kv[1])

    @on_timer(TIMER)
    def fire(self, bag=beam.DoFn.StateParam(BAG)):
        yield list(bag.read())


def test_cached_dofn_specs_equal_beams_own():
    original = userstate.get_dofn_specs.__wrapped__
    for dofn in (_Stateful(), seen._MergeBucket(1, None), seen._ProbeSeen(),
                 beam.transforms.core.CallableWrapperDoFn(len)):
        for _ in range(2):   # the second call comes from the cache
            got = userstate.get_dofn_specs(dofn)
            want = original(dofn)
            assert ({s.name for s in got[0]}, {s.name for s in got[1]}) == \
                   ({s.name for s in want[0]}, {s.name for s in want[1]})


def test_callers_get_their_own_sets():
    a = userstate.get_dofn_specs(_Stateful())
    a[0].clear()
    assert len(userstate.get_dofn_specs(_Stateful())[0]) == 1


def test_cached_views_see_every_change_to_the_options():
    options = PipelineOptions(["--runner=DirectRunner"])
    assert options.view_as(StandardOptions).runner == "DirectRunner"
    options.view_as(StandardOptions).runner = "FnApiRunner"
    assert options.view_as(StandardOptions).runner == "FnApiRunner"
    assert options.view_as(TypeOptions) is options.view_as(TypeOptions)
    assert PipelineOptions([]).view_as(StandardOptions).runner is None


class _Plain(beam.DoFn):
    def process(self, element, side=None, *rest, scale=2):
        yield element


class _Mixed(beam.DoFn):
    def process(self, element):
        if element:
            return [element]
        yield element


def test_cached_args_defaults_equal_beams_own():
    core = beam.transforms.core
    original = core.get_function_args_defaults.__wrapped__

    def free(a, b=1, *args, c=3, **kw):
        return a

    for f in (free, _Plain().process, _Plain.process, _Mixed().process, len, str.strip,
              lambda x, y=beam.DoFn.ElementParam: x):
        for _ in range(2):   # the second call comes from the cache
            assert core.get_function_args_defaults(f) == original(f)
    # a function and a method bound to it differ by the bound argument: not one cache entry
    assert core.get_function_args_defaults(_Plain.process)[0][0] == "self"
    assert core.get_function_args_defaults(_Plain().process)[0][0] == "element"
    got = core.get_function_args_defaults(free)
    got[0].clear()
    assert core.get_function_args_defaults(free)[0] == ["a", "b"]


def test_cached_yield_and_return_check_equal_beams_own():
    core = beam.transforms.core
    original = core._check_fn_use_yield_and_return.__wrapped__
    for f in (_Plain().process, _Mixed().process, _Mixed().process):
        assert core._check_fn_use_yield_and_return(f) == original(f)
    assert core._check_fn_use_yield_and_return(_Mixed().process) is True


def _decorated(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@_decorated
def _yields(x):
    yield x


@_decorated
def _yields_and_returns(x):
    if x:
        return [x]
    yield x


def _make_lambda():
    return lambda x: x + 1


def test_yield_and_return_check_is_kept_per_unwrapped_code():
    """The wrappers share one code object; the answer follows what they wrap."""
    core = beam.transforms.core
    original = core._check_fn_use_yield_and_return.__wrapped__
    assert _yields.__code__ is _yields_and_returns.__code__
    for f in (_yields, _yields_and_returns, _yields, _Mixed().process, _make_lambda(), _make_lambda()):
        assert core._check_fn_use_yield_and_return(f) == original(f)
    assert core._check_fn_use_yield_and_return(_yields_and_returns) is True
    assert core._check_fn_use_yield_and_return(_yields) is False
    calls = []
    cached = construction._cached_per_code(lambda f: calls.append(f) or len(calls))
    first, second = _make_lambda(), _make_lambda()   # new function objects, one code object
    assert cached(first) == cached(second) == 1 and calls == [first]
    assert cached(len) == 2 and cached(len) == 3     # builtins: never kept


def test_option_names_are_listed_again_when_the_namespace_changes():
    options = PipelineOptions(["--no_pipeline_type_check"]).view_as(TypeOptions)
    original = PipelineOptions._visible_option_list.__wrapped__
    assert options._visible_option_list() == original(options)
    assert options.pipeline_type_check is False
    got = options._visible_option_list()
    got.clear()   # callers get their own list
    assert "pipeline_type_check" in options._visible_option_list()
    options._visible_options.brand_new = 1    # a name added: listed again
    assert "brand_new" in options._visible_option_list()
    assert options._visible_option_list() == original(options)
    calls = []
    listed = construction._cached_option_list(lambda view: calls.append(1) or sorted(vars(view._visible_options)))
    import argparse
    import types as pytypes
    view = pytypes.SimpleNamespace(_visible_options=argparse.Namespace(a=1, b=2))
    assert listed(view) == listed(view) == ["a", "b"] and len(calls) == 1   # kept
    other = pytypes.SimpleNamespace(_visible_options=argparse.Namespace(a=1, b=2))   # equal, not same
    assert listed(other) == ["a", "b"] and len(calls) == 2


def test_building_a_pipeline_does_not_import_ipython():
    import IPython  # noqa: F401 - installed with ipykernel (requirements-dev.txt); else nothing could import it
    # a fresh interpreter: this test process may have imported IPython already
    code = ("import sys, apache_beam as beam\n"
            "from pipelines import patches\n"
            "with patches.active(patches.Context(in_process=False), only=('construction',)):\n"
            "    p = beam.Pipeline()\n"
            "    _ = p | beam.Create([1]) | 'Twice' >> beam.Map(lambda x: 2 * x)\n"
            "print('IPython' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.split()[-1] == "False"


def test_an_ipython_shell_is_still_recognised(monkeypatch):
    from apache_beam import pipeline
    from apache_beam.utils import interactive_utils
    shell = types.ModuleType("IPython")
    shell.get_ipython = lambda: object()   # a running shell
    monkeypatch.setitem(sys.modules, "IPython", shell)
    assert interactive_utils.is_in_ipython() and pipeline.is_in_ipython()
    shell.get_ipython = lambda: None       # IPython imported, no shell
    assert not interactive_utils.is_in_ipython() and not pipeline.is_in_ipython()
