"""Elements in the global window, for DoFns that yield from `finish_bundle` (Beam plumbing the
stages share, kept in tableio as `sideinput` and `gather` are).

Beam wants a `WindowedValue` there. `GlobalWindow()` is a singleton, but its constructor
re-reads the window's end from a proto on every call: 2.5 us an element against 0.4 us with
the window made once (timeit), and a round wraps several outputs a page this way."""
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

_WINDOWS = (GlobalWindow(),)   # immutable: one window, shared by every element


def in_global_window(value) -> WindowedValue:
    """`value` as an element of the global window at the minimum timestamp."""
    return WindowedValue(value, MIN_TIMESTAMP, _WINDOWS)
