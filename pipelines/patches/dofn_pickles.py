"""Cheaper stage set-up: a ParDo's DoFn is not pickled again to add its windowing.

Beam 2.77 builds each ParDo's operation of a stage (`bundle_processor._create_pardo_operation`)
by unpickling the DoFn data the pipeline carries (fn, args, kwargs, side-input tags, and no
windowing), then pickling the whole tuple again with the input's windowing added, for the
operation to unpickle (twice). The second pickling runs cloudpickle over the DoFn and every
lambda it holds, by value, for each of a round's ~170 ParDos: the bundle processor's
pickling took 0.196 / 0.217 s over `bench_fixed_cost`'s seven pipelines, 0.09 s with this
patch (~17 ms a round, computed).

Here the bundle processor's `pickler` is wrapped: when `dumps` is handed exactly that tuple
(the objects the thread's last `loads` returned, their windowing slot filled with a
`Windowing`), it returns Beam's payload of a small object that holds the original payload
and the windowing's own payload and rebuilds the tuple from them when unpickled. So every
`loads` still gets fresh objects, as before; only the re-pickling of the DoFn is skipped.
Every other call goes to Beam's pickler unchanged.

`install()` patches the Beam modules of this process only (the in-process runner builds its
stages here); the payloads it makes are read only by the operations of the same bundle
processor. Idempotent; does nothing if Beam's internals no longer look as expected.
"""
import threading

from pipelines.patches import Missing, target

NAME = "dofn_pickles"
IN_PROCESS = True

_WINDOWING_SLOT = 4   # (fn, args, kwargs, side input tags and types, windowing)


def _with_windowing(payload, windowing_payload):
    """The DoFn data tuple of `payload` with the windowing of `windowing_payload` added."""
    from apache_beam.internal import pickler
    data = pickler.loads(payload)
    return data[:_WINDOWING_SLOT] + (pickler.loads(windowing_payload),)


class _WithWindowing:
    """Pickles as a call of `_with_windowing` on two payloads (no DoFn pickled again)."""

    def __init__(self, payload, windowing_payload):
        self.payload, self.windowing_payload = payload, windowing_payload

    def __reduce__(self):
        return _with_windowing, (self.payload, self.windowing_payload)


class PicklerWithWindowing:
    """Beam's `pickler` module as the bundle processor uses it, with `dumps` of a just-loaded
    DoFn tuple plus its windowing answered by a `_WithWindowing` payload."""

    def __init__(self, pickler, windowing_cls):
        self._pickler, self._windowing_cls = pickler, windowing_cls
        self._local = threading.local()   # per thread: the last load, the last windowing

    def __getattr__(self, name):
        return getattr(self._pickler, name)

    def loads(self, encoded, *args, **kwargs):
        data = self._pickler.loads(encoded, *args, **kwargs)
        loaded = (type(data) is tuple and len(data) == _WINDOWING_SLOT + 1
                  and data[_WINDOWING_SLOT] is None and isinstance(encoded, bytes))
        self._local.last = (encoded, data) if loaded else None
        return data

    def dumps(self, o, *args, **kwargs):
        last, self._local.last = getattr(self._local, "last", None), None
        if last is not None and not args and not kwargs and self._adds_windowing(last[1], o):
            return self._pickler.dumps(_WithWindowing(last[0], self._windowing_payload(o[_WINDOWING_SLOT])))
        return self._pickler.dumps(o, *args, **kwargs)

    def _adds_windowing(self, loaded, o):
        return (type(o) is tuple and len(o) == len(loaded)
                and isinstance(o[_WINDOWING_SLOT], self._windowing_cls)
                and all(a is b for a, b in zip(o[:_WINDOWING_SLOT], loaded[:_WINDOWING_SLOT])))

    def _windowing_payload(self, windowing):
        """Beam's payload of `windowing`; the thread's last one again if equal (a stage's
        ParDos mostly share one windowing)."""
        kept = getattr(self._local, "windowing", None)
        if kept is None or not kept[0] == windowing:
            kept = self._local.windowing = (windowing, self._pickler.dumps(windowing))
        return kept[1]


def replacements(context):
    """The bundle processor's pickler wrapped."""
    from apache_beam.internal import pickler
    from apache_beam.runners.worker import bundle_processor
    from apache_beam.transforms.core import Windowing
    target(bundle_processor, "_create_pardo_operation")   # the call site
    if target(bundle_processor, "pickler") is not pickler:
        raise Missing("bundle_processor.pickler as the pickler module")
    return [(bundle_processor, "pickler", PicklerWithWindowing(pickler, Windowing))]
