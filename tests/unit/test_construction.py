"""pipelines.construction memoises two Beam helpers; the results must be what Beam computes."""
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions, TypeOptions
from apache_beam.transforms import userstate
from apache_beam.transforms.userstate import BagStateSpec, TimerSpec, on_timer
from apache_beam.coders import VarIntCoder
from apache_beam.transforms.timeutil import TimeDomain

from pipelines import construction
from transforms.urlseen import step as seen


class _Stateful(beam.DoFn):
    BAG = BagStateSpec("bag", VarIntCoder())
    TIMER = TimerSpec("t", TimeDomain.WATERMARK)

    def process(self, kv, bag=beam.DoFn.StateParam(BAG), t=beam.DoFn.TimerParam(TIMER)):
        bag.add(kv[1])

    @on_timer(TIMER)
    def fire(self, bag=beam.DoFn.StateParam(BAG)):
        yield list(bag.read())


def test_cached_dofn_specs_equal_beams_own():
    construction.install()
    original = userstate.get_dofn_specs.__wrapped__
    for dofn in (_Stateful(), seen._MergeBucket(1, None), seen._ProbeSeen(),
                 beam.transforms.core.CallableWrapperDoFn(len)):
        for _ in range(2):   # the second call comes from the cache
            got = userstate.get_dofn_specs(dofn)
            want = original(dofn)
            assert ({s.name for s in got[0]}, {s.name for s in got[1]}) == \
                   ({s.name for s in want[0]}, {s.name for s in want[1]})


def test_callers_get_their_own_sets():
    construction.install()
    a = userstate.get_dofn_specs(_Stateful())
    a[0].clear()
    assert len(userstate.get_dofn_specs(_Stateful())[0]) == 1


def test_cached_views_see_every_change_to_the_options():
    construction.install()
    options = PipelineOptions(["--runner=DirectRunner"])
    assert options.view_as(StandardOptions).runner == "DirectRunner"
    options.view_as(StandardOptions).runner = "FnApiRunner"
    assert options.view_as(StandardOptions).runner == "FnApiRunner"
    assert options.view_as(TypeOptions) is options.view_as(TypeOptions)
    assert PipelineOptions([]).view_as(StandardOptions).runner is None


def test_install_is_idempotent():
    construction.install()
    fn = userstate.get_dofn_specs
    construction.install()
    assert userstate.get_dofn_specs is fn


class _Plain(beam.DoFn):
    def process(self, element, side=None, *rest, scale=2):
        yield element


class _Mixed(beam.DoFn):
    def process(self, element):
        if element:
            return [element]
        yield element


def test_cached_args_defaults_equal_beams_own():
    construction.install()
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
    construction.install()
    core = beam.transforms.core
    original = core._check_fn_use_yield_and_return.__wrapped__
    for f in (_Plain().process, _Mixed().process, _Mixed().process):
        assert core._check_fn_use_yield_and_return(f) == original(f)
    assert core._check_fn_use_yield_and_return(_Mixed().process) is True
