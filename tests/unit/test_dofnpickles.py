"""pipelines.patches.dofn_pickles: a stage's ParDo gets its windowing without its DoFn pickled again,
and every load still gets fresh objects equal to Beam's."""
from pathlib import Path

import apache_beam as beam
from apache_beam.internal import pickler
from apache_beam.transforms import window
from apache_beam.transforms.core import Windowing

from pipelines import runner
from pipelines.patches import dofn_pickles as dofnpickles


class _CountsPickling(beam.DoFn):
    """A DoFn that counts how often it is pickled (class-wide)."""
    pickled = 0

    def __init__(self, tag):
        self.tag = tag

    def __getstate__(self):
        type(self).pickled += 1
        return self.__dict__

    def process(self, x):
        yield x


def _payload(fn):
    return pickler.dumps((fn, ("a",), {"k": 1}, None, None))


def test_a_loaded_tuple_with_windowing_added_is_not_pickled_again():
    wrapped = dofnpickles.PicklerWithWindowing(pickler, Windowing)
    payload = _payload(_CountsPickling("x"))
    data = wrapped.loads(payload)
    windowing = Windowing(window.FixedWindows(10))
    before = _CountsPickling.pickled
    again = wrapped.dumps(data[:-1] + (windowing,))
    assert _CountsPickling.pickled == before
    first, second = wrapped.loads(again), wrapped.loads(again)
    for got in (first, second):
        assert got[0].tag == "x" and got[1:4] == (("a",), {"k": 1}, None)
        assert got[4] == windowing and got[4] is not windowing
    assert first[0] is not second[0] and first[0] is not data[0]   # fresh objects, as before


def test_other_tuples_and_calls_go_to_beams_pickler():
    wrapped = dofnpickles.PicklerWithWindowing(pickler, Windowing)
    windowing = Windowing(window.GlobalWindows())
    data = wrapped.loads(_payload(_CountsPickling("y")))
    before = _CountsPickling.pickled
    other = (_CountsPickling("z"),) + data[1:4] + (windowing,)   # not the loaded DoFn
    assert wrapped.loads(wrapped.dumps(other))[0].tag == "z"
    assert _CountsPickling.pickled == before + 1
    wrapped.loads(_payload(_CountsPickling("w")))
    wrapped.dumps("something else")           # a dumps in between forgets the load
    data = wrapped.loads(_payload(_CountsPickling("v")))
    before = _CountsPickling.pickled
    wrapped.dumps(data[:-1] + (None,))         # no windowing added: Beam pickles it
    assert _CountsPickling.pickled == before + 1
    assert wrapped.roundtrip is pickler.roundtrip   # the rest of the module as it is


class _Windowed(beam.DoFn):
    def process(self, x, w=beam.DoFn.WindowParam, side=()):
        yield f"{x}@{int(w.start)}:{','.join(map(str, sorted(side)))}"


def test_a_windowed_pipeline_runs_through_the_patch(tmp_path, monkeypatch):
    rebuilt = []
    original = dofnpickles._WithWindowing.__reduce__

    def counting(self):
        rebuilt.append(1)
        return original(self)

    monkeypatch.setattr(dofnpickles._WithWindowing, "__reduce__", counting)
    out = tmp_path / "out"

    def build(p):
        side = p | "Side" >> beam.Create([7, 8])
        (p | beam.Create([1, 12, 25])
         | beam.Map(lambda x: window.TimestampedValue(x, x))
         | beam.WindowInto(window.FixedWindows(10))
         | beam.ParDo(_Windowed(), side=beam.pvalue.AsList(side))
         | beam.Map(lambda s: Path(out).open("a").write(s + "\n")))

    runner.run_pipeline(build, ["--runner=DirectRunner"])
    assert sorted(out.read_text().split()) == ["12@10:7,8", "1@0:7,8", "25@20:7,8"]
    assert rebuilt   # the stages' ParDos were built from the small payloads
    from apache_beam.runners.worker import bundle_processor
    assert bundle_processor.pickler is pickler   # put back after the round
