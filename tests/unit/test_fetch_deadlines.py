"""connection.Deadlines: one thread fires every request's deadline; cancelled ones never fire."""
import threading
import time

from transforms.fetch.deadlines import Deadlines, Watchdog


class _Probe:
    def __init__(self):
        self.at = None
        self.event = threading.Event()

    def fire(self):
        self.at = time.monotonic()
        self.event.set()


def test_deadlines_fire_in_time_order_and_cancelled_ones_never():
    d = Deadlines()
    now = time.monotonic()
    late, early, cancelled = _Probe(), _Probe(), _Probe()
    d.add(now + 0.30, late)
    d.add(now + 0.05, early)        # earlier than the one the thread sleeps on: it wakes
    d.cancel(d.add(now + 0.10, cancelled))
    assert early.event.wait(5) and late.event.wait(5)
    assert now + 0.05 <= early.at < late.at and late.at >= now + 0.30
    time.sleep(0.1)
    assert cancelled.at is None
    d.close()


def test_many_cancelled_deadlines_do_not_pile_up():
    """Cancelled entries behind a live one never surface; the periodic rebuild drops them."""
    d = Deadlines()
    far = time.monotonic() + 3600
    live = _Probe()
    d.add(far, live)
    for _ in range(5000):
        d.cancel(d.add(far + 1, _Probe()))
    deadline = time.monotonic() + 10
    while d._new and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert len(d._heap) <= Deadlines.REBUILD_EVERY + 1
    assert live.at is None
    d.close()


def test_a_deadline_added_after_close_still_fires():
    """`close` stops the thread; the next `add` starts one again (a factory reused)."""
    d = Deadlines()
    first = _Probe()
    d.add(time.monotonic() + 0.01, first)
    assert first.event.wait(5)
    d.close()
    again = _Probe()
    d.add(time.monotonic() + 0.01, again)
    assert again.event.wait(5)
    d.close()


def test_a_watchdog_on_the_shared_thread_shuts_its_connection():
    class Conn:
        sock = None
    d = Deadlines()
    wd = Watchdog(0.05, d)
    wd.attach(Conn())
    deadline = time.monotonic() + 5
    while not wd.fired and time.monotonic() < deadline:
        time.sleep(0.01)
    assert wd.fired
    kept = Watchdog(0.05, d)
    kept.cancel()
    time.sleep(0.2)
    assert not kept.fired
    d.close()
    assert threading.active_count() < 50
