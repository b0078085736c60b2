"""pipelines.patches.stage_inputs: a shuffle's grouped output in chunks, byte for byte Beam's own."""
import apache_beam as beam
import pytest
from apache_beam.coders import BytesCoder, IterableCoder, TupleCoder, VarIntCoder
from apache_beam.coders.coders import WindowedValueCoder
from apache_beam.runners.portability.fn_api_runner import execution
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.core import Windowing
from apache_beam.transforms.window import FixedWindows, GlobalWindows
from apache_beam.utils.windowed_value import WindowedValue

from pipelines import patches
from pipelines.patches import stage_inputs as stageinputs

KV = TupleCoder([VarIntCoder(), BytesCoder()])
GROUPED = TupleCoder([VarIntCoder(), IterableCoder(BytesCoder())])


def _buffer(elements, windowing=None):
    window_coder = GlobalWindows().get_window_coder()
    buf = execution.GroupingBuffer(WindowedValueCoder(KV, window_coder), WindowedValueCoder(GROUPED, window_coder),
                                   windowing or Windowing(GlobalWindows()))
    coder = WindowedValueCoder(KV, window_coder).get_impl()
    for part in (elements[:len(elements) // 2], elements[len(elements) // 2:]):   # two appends
        buf.append(b"".join(coder.encode_nested(WindowedValue(kv, 0, [beam.transforms.window.GlobalWindow()]))
                            for kv in part))
    return buf


@pytest.fixture(autouse=True)
def stage_inputs_patch():
    with patches.active(patches.Context(in_process=True), environ={}, only=("stage_inputs",)) as on:
        assert on == ["stage_inputs"]
        yield


ELEMENTS = [(k % 37, bytes([k % 251]) * (k % 700)) for k in range(3000)]


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("chunk", [1, 5000, 1 << 20])
def test_chunks_join_to_beams_own_partition(monkeypatch, n, chunk):
    partition = execution.GroupingBuffer.partition
    ours = _buffer(ELEMENTS)
    theirs = _buffer(ELEMENTS)
    monkeypatch.setattr(stageinputs, "CHUNK_BYTES", chunk)
    got = partition(ours, n)
    want = partition.__wrapped__(theirs, n)
    assert [b"".join(part) for part in got] == [b"".join(part) for part in want]
    if chunk == 1:   # a chunk per key: 37 keys over n partitions
        assert sum(len(part) for part in got) == 37
    assert not ours._table                                  # the table was freed as it went
    assert partition(ours, n) is got                        # a second read: the same output


def test_other_windows_go_to_beams_own(monkeypatch):
    monkeypatch.setattr(stageinputs, "CHUNK_BYTES", 1)
    windowing = Windowing(FixedWindows(10))
    got = execution.GroupingBuffer.partition(_buffer(ELEMENTS[:50], windowing), 1)
    want = execution.GroupingBuffer.partition.__wrapped__(_buffer(ELEMENTS[:50], windowing), 1)
    assert got == want and len(got[0]) == 1   # one chunk, however small the chunk size


def test_a_pipeline_groups_the_same():
    with TestPipeline("DirectRunner") as p:
        grouped = (p | beam.Create(ELEMENTS) | beam.GroupByKey()
                   | beam.MapTuple(lambda k, vs: (k, len(list(vs)), sum(map(len, vs)))))
        want = {}
        for k, v in ELEMENTS:
            n, size = want.get(k, (0, 0))
            want[k] = (n + 1, size + len(v))
        assert_that(grouped, equal_to([(k, n, size) for k, (n, size) in want.items()]))


def test_a_stage_input_is_sent_on_as_it_fills():
    """The worker's data stream is flushed at Beam's 10 MB between the input's pieces, not
    only once at its close: the same bytes arrive, in several messages."""
    from types import SimpleNamespace
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.worker import data_plane
    channel = data_plane.InMemoryDataChannel()
    manager = SimpleNamespace(_worker_handler=SimpleNamespace(data_conn=channel))
    pieces = [bytes([i]) * (6 << 20) for i in range(3)]
    fn_runner.BundleManager._send_input_to_worker(manager, "bundle", "read", pieces)
    sent = [m.data for m in channel.inverse()._inputs]
    assert b"".join(sent) == b"".join(pieces)
    assert [len(d) for d in sent] == [12 << 20, 6 << 20]   # flushed past 10 MB, then the rest at the close
