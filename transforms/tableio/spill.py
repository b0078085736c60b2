"""Spill files: a round's large intermediate data on disk instead of in the runner's memory.

The in-process runner keeps every element that crosses a stage boundary in memory until the
next stage has read it all, so data that grows with the round (the link bundles of every
fetched page) would make a round's memory grow with its page count. `Spill` (tableio.step)
writes such elements to files of at most `--memory_mb`-derived bytes under the round's
`_spill/` directory as they are produced, lets only the file paths cross the boundary, and
reads the files back one at a time in the next stage. The directory is deleted before the
round commits (`discard`); a killed round's is deleted with the rest of its uncommitted
folder. All I/O goes through Beam's FileSystems, so any crawl-directory filesystem works.

Both ends stream: `SpillWriter` compresses each element into the file as it comes, and
`read_spill` decompresses one element at a time, so neither holds a file's worth of
elements (a writer that buffered a whole file held it twice, as elements and joined, at its
flush: ~70 MB at the end of a 16 000-page round's fetch stage).

A file: MAGIC, then one LZ4 stream of records (each: 4-byte little-endian length, then
that many bytes: one pickled element), ended by the length END and the 8-byte little-endian
count of elements, so a file cut short (a killed writer) reads as damaged, never as fewer
elements. LZ4, not zstd: the files live for one round, and the round's process writes them
while it is the fetch stage's bottleneck: 500 synthetic link bundles (3.9 MB) compress in 4.0
against 6.5 ms and decompress in 1.2 against 5.0 ms (files 1.7x larger); a 5 000-page round
alternating x3: CPU 3.67 / 3.98 / 4.20 -> 3.54 / 3.73 / 3.87 s.
"""
import pickle
import struct

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from transforms.tableio.files import delete_tree
from transforms.tableio.pickled import Pickled, encode

MAGIC = b"BCSPILL3"
DIRNAME = "_spill"
END = 0xFFFFFFFF
CODEC = "lz4"


class SpillReadError(Exception):
    """A spill file that is missing or damaged (the round fails; rerunning redoes it)."""


FLUSH_BYTES = 256 * 1024   # pickled elements gathered before one write into the compressed stream


class SpillWriter:
    """One spill file, written element by element through an LZ4 stream into the file.

    `add` returns the uncompressed bytes written so far (what a caller sizes files by);
    `close` ends the file and returns that total; `abort` closes it unfinished (it then
    reads as damaged; it lies in the round's spill directory, deleted with it).

    Elements are gathered up to FLUSH_BYTES and written to the stream together: each write
    releases the interpreter lock, and in the fetching process, where the threads reading
    the fetch processes' pages contend for it, two writes per element (length, then payload)
    cost more than pickling the element (py-spy of a 16 000-page round: 206 of the writer's
    304 samples)."""

    def __init__(self, path: str):
        self.path, self.raw_bytes, self.count = path, 0, 0
        self._pending, self._pending_bytes = [], 0
        handle = FileSystems.create(path)
        try:
            handle.write(MAGIC)
            self._stream = pa.CompressedOutputStream(handle, CODEC)
        except BaseException:
            handle.close()
            raise

    def add(self, element) -> int:
        payload = element if isinstance(element, Pickled) else encode(element)
        self._pending += (struct.pack("<I", len(payload)), payload)
        self._pending_bytes += 4 + len(payload)
        self.raw_bytes += 4 + len(payload)
        self.count += 1
        if self._pending_bytes >= FLUSH_BYTES:
            self._flush()
        return self.raw_bytes

    def _flush(self):
        self._stream.write(b"".join(self._pending))
        self._pending, self._pending_bytes = [], 0

    def close(self) -> int:
        self._pending.append(struct.pack("<IQ", END, self.count))
        self._flush()
        self._stream.close()
        return self.raw_bytes

    def abort(self):
        if not self._stream.closed:
            self._stream.close()


def _frames(stream):
    """Pickled elements of an open spill stream (after MAGIC), checked against its end."""
    seen = 0
    while True:
        head = stream.read(4)
        if len(head) < 4:
            raise ValueError("the file ends before its end marker (cut short)")
        (n,) = struct.unpack("<I", head)
        if n == END:
            (count,) = struct.unpack("<Q", stream.read(8))
            if count != seen:
                raise ValueError(f"it holds {seen} elements, its end marker says {count}")
            if stream.read(1):   # (and the compressed stream must end whole: a cut trailer raises)
                raise ValueError("data after its end marker")
            return
        payload = stream.read(n)
        if len(payload) < n:
            raise ValueError("the file ends inside an element (cut short)")
        seen += 1
        yield payload


def read_spill(path: str):
    """The elements of a spill file, in the order they were written, one at a time."""
    try:
        handle = FileSystems.open(path)
    except Exception as e:
        raise _damaged(path, e) from e
    with handle:
        try:
            if handle.read(len(MAGIC)) != MAGIC:
                raise ValueError("not a spill file")
            frames = _frames(pa.CompressedInputStream(handle, CODEC))
            for payload in frames:
                yield pickle.loads(payload)
        except Exception as e:
            raise _damaged(path, e) from e


def _damaged(path, e):
    return SpillReadError(f"{path}: cannot read this spill file ({type(e).__name__}: {e}); "
                          f"rerun the round (its uncommitted folder is redone).")


def discard(round_dir: str) -> bool:
    """Delete a round's spill directory (after its pipeline finished); True if there was one."""
    return delete_tree(round_dir.rstrip("/") + "/" + DIRNAME)
