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
    d = Deadlines()
    far = time.monotonic() + 3600
    for _ in range(5000):
        d.cancel(d.add(far, _Probe()))
    assert len(d._heap) < 2100       # rebuilt once cancelled entries dominate
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
