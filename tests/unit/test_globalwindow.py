"""`in_global_window`: the element DoFns yield from finish_bundle, one window made once."""
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms.tableio.globalwindow import in_global_window


def test_an_element_of_the_global_window_at_the_minimum_timestamp():
    v = in_global_window({"a": 1})
    assert isinstance(v, WindowedValue)
    assert v.value == {"a": 1} and v.timestamp == MIN_TIMESTAMP
    assert list(v.windows) == [GlobalWindow()]
    assert v == GlobalWindows.windowed_value({"a": 1})   # what Beam itself makes there


def test_elements_share_one_window_tuple():
    """The point of the module: no GlobalWindow() (a proto read) per element."""
    a, b = in_global_window(1), in_global_window(2)
    assert a.windows is b.windows and isinstance(a.windows, tuple)
