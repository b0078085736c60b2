"""procs.Channel: a helper's pipe moved by the parent's own thread, without blocking it,
framed as multiprocessing.Connection frames messages (the helper keeps plain recv/send)."""
import multiprocessing
import pickle
import signal
import struct
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.procs import Channel, wait_any


def _echo(conn, count):
    for _ in range(count):
        conn.send(conn.recv())
    conn.close()


def _until(channel, want, seconds=30):
    got, deadline = [], time.monotonic() + seconds
    while len(got) < want and time.monotonic() < deadline:
        got += channel.take()
        if len(got) < want:
            wait_any([channel], 0.05)
    return got


def test_messages_go_both_ways_in_order_whatever_their_size():
    parent, child = multiprocessing.Pipe()
    messages = [("small", 1), b"x" * (12 << 20), list(range(1000)), None]
    helper = threading.Thread(target=_echo, args=(child, len(messages)))
    helper.start()
    channel = Channel(parent)
    for m in messages:
        channel.put(m)
    assert _until(channel, len(messages)) == messages
    helper.join(timeout=10)


def test_put_returns_at_once_when_nobody_reads():
    parent, child = multiprocessing.Pipe()
    channel = Channel(parent)
    putter = threading.Thread(target=lambda: [channel.put(b"y" * (4 << 20)) for _ in range(8)])
    putter.start()   # 32 MB: far beyond what the socket holds; a blocking put would never end
    putter.join(timeout=30)
    assert not putter.is_alive()
    assert channel.pending_output()
    got = []
    reader = threading.Thread(target=lambda: got.extend(child.recv() for _ in range(8)))
    reader.start()
    deadline = time.monotonic() + 30
    while channel.pending_output() and time.monotonic() < deadline:
        channel.take()
        wait_any([channel], 0.05)
    reader.join(timeout=30)
    assert got == [b"y" * (4 << 20)] * 8


def test_what_came_before_the_end_is_handed_out_then_the_end():
    parent, child = multiprocessing.Pipe()
    child.send("one")
    child.send("two")
    child.close()
    channel = Channel(parent)
    assert _until(channel, 2) == ["one", "two"]
    try:
        channel.take()
    except EOFError:
        pass
    else:
        raise AssertionError("a closed pipe must raise EOFError once its messages are out")


def _frame(obj, big=False):
    data = pickle.dumps(obj)
    head = struct.pack("!i", -1) + struct.pack("!Q", len(data)) if big else struct.pack("!i", len(data))
    return head + data


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.binary(max_size=300), st.text(max_size=50), st.integers()), st.booleans()),
                max_size=8),
       st.lists(st.integers(min_value=1, max_value=97), max_size=40))
def test_frames_cut_anywhere_decode_to_the_same_messages(items, cuts):
    """The 4-byte and the 4+8-byte (over 2 GiB) headers, fed in arbitrary pieces."""
    wire = b"".join(_frame(obj, big) for obj, big in items)
    parent, _child = multiprocessing.Pipe()
    channel = Channel(parent)
    got, pos = [], 0
    for cut in cuts + [len(wire)]:
        channel._in += wire[pos:pos + cut]
        pos += cut
        got += channel._messages()
    assert got == [obj for obj, _ in items]
    assert not channel._in


def _gc_frozen(conn):
    import gc
    conn.send(gc.get_freeze_count())
    conn.close()


def test_a_helper_leaves_what_it_inherited_out_of_full_collections():
    """start_helper's helpers freeze the fork server's objects first (procs._helper_main)."""
    from transforms.procs import start_helper, stop_helper
    conn, proc = start_helper(_gc_frozen, name="test-gc-frozen")
    try:
        assert conn.poll(30)
        assert conn.recv() > 1000   # the inherited modules' objects, frozen
    finally:
        stop_helper(conn, proc)


def _until_none(conn):
    conn.send("up")
    while conn.recv() is not None:
        pass


class _SlowSender:
    """A pipe end that lingers after each send: the helper has time to read a None and end."""

    def __init__(self, conn):
        self.conn = conn

    def send(self, obj):
        self.conn.send(obj)
        time.sleep(1.0)

    def close(self):
        self.conn.close()


@pytest.mark.parametrize("kill, exitcode", [(True, -signal.SIGKILL), (False, 0)])
def test_a_helper_stopped_with_kill_is_killed_not_asked_to_end(kill, exitcode):
    """With `kill` nothing is sent first: a None sent before the kill could end the helper
    cleanly in between (CI once saw a fleet child exit 0 instead of being killed)."""
    from transforms.procs import start_helper, stop_helper
    conn, proc = start_helper(_until_none, name="test-until-none")
    try:
        assert conn.poll(30) and conn.recv() == "up"
    finally:
        stop_helper(_SlowSender(conn), proc, kill=kill)
    assert proc.exitcode == exitcode


def _own_name(conn):
    with open("/proc/self/comm") as f:
        conn.send(f.read().strip())
    conn.close()


def test_a_helper_takes_its_name_in_the_os():
    """ps and top tell a helper from the fork server and its siblings (one command line)."""
    from transforms.procs import start_helper, stop_helper
    conn, proc = start_helper(_own_name, name="beamcrawl-sign-and-more")
    try:
        assert conn.poll(30)
        assert conn.recv() == "beamcrawl-sign-"   # the OS keeps 15 bytes
    finally:
        stop_helper(conn, proc)


def _has_modules(conn, names):
    import sys
    conn.send([name in sys.modules for name in names])
    conn.close()


def test_helpers_inherit_the_parsers_the_page_step_imports_on_first_use():
    """The fork server preloads them (transforms.page.preload): a page worker does not import
    pypdf and the others again each round."""
    from transforms.page.preload import LIBRARIES
    from transforms.procs import start_helper, stop_helper
    conn, proc = start_helper(_has_modules, list(LIBRARIES), name="test-preload")
    try:
        assert conn.poll(30)
        assert conn.recv() == [True] * len(LIBRARIES)
    finally:
        stop_helper(conn, proc)


def test_the_fork_server_can_be_started_ahead_of_the_first_helper():
    """warm_fork_server starts it in the background (here in a fresh process, where none ran)."""
    import subprocess
    import sys
    from pathlib import Path
    code = ("import psutil\n"
            "from transforms.procs import warm_fork_server\n"
            "warm_fork_server().join(60)\n"
            "kids = psutil.Process().children()\n"
            "print(any('forkserver' in ' '.join(k.cmdline()) for k in kids))\n")
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr[-2000:]


def test_a_take_with_max_bytes_leaves_the_rest_in_the_pipe():
    """`take(max_bytes)` reads at most that many bytes: it hands out the messages complete
    within them and leaves the rest in the pipe for later takes, in order."""
    parent, child = multiprocessing.Pipe()
    messages = [bytes([i]) * 20_000 for i in range(6)]   # 120 KB: all fit in the socket
    for m in messages:
        child.send(m)
    channel = Channel(parent)
    first = channel.take(max_bytes=50_000)
    assert len(first) == 2   # two whole frames in the first 50 000 bytes
    assert first + _until(channel, len(messages) - len(first)) == messages
