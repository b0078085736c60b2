"""A stage's input handed to its worker in chunks, not as one more copy of the whole.

1. The data channel. Beam 2.77's in-process runner writes a stage's input into the
worker's data stream (`BundleManager._send_input_to_worker`) and closes it; the stream
flushes only when closed, so the whole input gathers in one buffer grown by doubling,
which is then copied into one message: at the close the round process's RSS rose by
92 MB in a 45 000-page round (a sampler of RSS and the main thread's stack, 20 ms apart),
the largest step of that round's post-fetch phase. Here the stream is offered a flush
after each piece of the input (whole elements: a buffer's chunks, a shuffle's chunks
below), which sends it on once it holds 10 MB (Beam's own threshold).

2. A shuffle's grouped output. The runner keeps a GroupByKey's input as decoded values
per key (`execution.GroupingBuffer`). When the stage that reads it runs, `partition`
encodes every key with its values into one output stream, copies that stream into one
bytes object and only then clears the table: for a moment the shuffle is held three times
(the table, the stream, grown by doubling, and its copy) before the data channel takes it.
URL-seen's join is the round's largest shuffle (~27 MB of packed candidate parts in a
45 000-page round). Here `partition` pops each key from the table as it encodes it and
closes a chunk every `CHUNK_BYTES`, so the shuffle is held about once while it is encoded.
The runner writes a partition's chunks one after another into the worker's data stream,
so the worker reads the same bytes as from one chunk. Only the global window's partition
(every shuffle here) is changed; others go to Beam's own. On its own this moved that
stage's rise above its trimmed baseline within the noise (254 -> 246 / 247 MB, `VmHWM`
per stage); the flush above is what the figures below show.

Both: a 45 000-page round's process peaked at 450 / 450 MB RSS against 510 / 529 MB
without them, tree PSS 499 / 499 against 559 / 578 MB (`benchmarks.round_memory`,
alternating); a 5 000-page round's process at 303 / 297 against 321 / 326 MB.

In-process runner only.
"""
from pipelines.patches import target, uses

NAME = "stage_inputs"
IN_PROCESS = True

CHUNK_BYTES = 1 << 20


def _chunked(original, windowed_values, new_stream):
    def partition(self, n):
        if self._grouped_output or not self._windowing.is_default():
            return original(self, n)
        in_window = windowed_values()
        coder_impl = self._post_grouped_coder.get_impl()
        key_coder_impl = self._key_coder.get_impl()
        chunks = [[] for _ in range(n)]
        streams = [new_stream() for _ in range(n)]
        table = self._table
        for idx, encoded_key in enumerate(list(table)):
            values = table.pop(encoded_key)
            stream = streams[idx % n]
            coder_impl.encode_to_stream(in_window((key_coder_impl.decode(encoded_key), values)), stream, True)
            if stream.size() >= CHUNK_BYTES:
                chunks[idx % n].append(stream.get())
                streams[idx % n] = new_stream()
        for ix, stream in enumerate(streams):
            if stream.size() or not chunks[ix]:
                chunks[ix].append(stream.get())
        self._grouped_output = chunks
        return chunks

    partition.__wrapped__ = original
    return partition


def _flushing(original):
    def _send_input_to_worker(self, process_bundle_id, read_transform_id, byte_streams):
        assert self._worker_handler is not None
        data_out = self._worker_handler.data_conn.output_stream(process_bundle_id, read_transform_id)
        for byte_stream in (byte_streams or []):
            data_out.write(byte_stream)
            data_out.maybe_flush()
        data_out.close()

    _send_input_to_worker.__wrapped__ = original
    return _send_input_to_worker


def replacements(context):
    """Input streams flushed as they fill, and a chunked, freeing `GroupingBuffer.partition`
    for global windows."""
    from apache_beam.coders.coder_impl import create_OutputStream
    from apache_beam.runners.portability.fn_api_runner import execution, fn_runner
    from apache_beam.transforms.window import GlobalWindow, GlobalWindows
    from apache_beam.utils.windowed_value import PaneInfo, PaneInfoTiming
    manager = fn_runner.BundleManager
    send = target(manager, "_send_input_to_worker")
    uses(send, "_worker_handler", "data_conn", "output_stream", "write", "close")
    buffer_cls = execution.GroupingBuffer
    partition = target(buffer_cls, "partition")
    uses(partition, "_table", "_grouped_output", "_post_grouped_coder", "_key_coder", "_windowing")

    def windowed_values():
        """What Beam's partition wraps each (key, values) in for the global window."""
        return GlobalWindows.windowed_value(
            None, timestamp=GlobalWindow().max_timestamp(),
            pane_info=PaneInfo(is_first=True, is_last=True, timing=PaneInfoTiming.ON_TIME,
                               index=0, nonspeculative_index=0)).with_value

    return [(manager, "_send_input_to_worker", _flushing(send)),
            (buffer_cls, "partition", _chunked(partition, windowed_values, create_OutputStream))]
