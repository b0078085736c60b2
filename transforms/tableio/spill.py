"""Spill files: a round's large intermediate data on disk instead of in the runner's memory.

The in-process runner keeps every element that crosses a stage boundary in memory until the
next stage has read it all, so data that grows with the round (the link bundles of every
fetched page) would make a round's memory grow with its page count. `Spill` (tableio.step)
writes such elements to files of at most `--memory_mb`-derived bytes under the round's
`_spill/` directory as they are produced, lets only the file paths cross the boundary, and
reads the files back one at a time in the next stage. The directory is deleted before the
round commits (`discard`); a killed round's is deleted with the rest of its uncommitted
folder. All I/O goes through Beam's FileSystems, so any crawl-directory filesystem works.

A file: MAGIC, the uncompressed size (8 bytes, little-endian), then zstd of the frames
(each: 4-byte little-endian length, then that many bytes: one pickled element).
"""
import pickle
import struct

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

MAGIC = b"BCSPILL1"
DIRNAME = "_spill"


class SpillReadError(Exception):
    """A spill file that is missing or damaged (the round fails; rerunning redoes it)."""


def encode(element) -> bytes:
    return pickle.dumps(element, protocol=pickle.HIGHEST_PROTOCOL)


def write_spill(path: str, payloads: list) -> int:
    """Write `payloads` (bytes, one per element) to `path`; return the file's size."""
    raw = b"".join(struct.pack("<I", len(p)) + p for p in payloads)
    body = pa.compress(raw, codec="zstd", asbytes=True)
    with FileSystems.create(path) as f:
        f.write(MAGIC + struct.pack("<Q", len(raw)) + body)
    return len(MAGIC) + 8 + len(body)


def read_spill(path: str):
    """The elements of a spill file, in the order they were written."""
    try:
        with FileSystems.open(path) as f:
            data = f.read()
        if data[:len(MAGIC)] != MAGIC:
            raise ValueError("not a spill file")
        (size,) = struct.unpack_from("<Q", data, len(MAGIC))
        raw = pa.decompress(data[len(MAGIC) + 8:], decompressed_size=size, codec="zstd", asbytes=True)
    except Exception as e:
        raise SpillReadError(f"{path}: cannot read this spill file ({type(e).__name__}: {e}); "
                             f"rerun the round (its uncommitted folder is redone).") from e
    del data
    view, pos = memoryview(raw), 0
    while pos < len(raw):
        (n,) = struct.unpack_from("<I", raw, pos)
        yield pickle.loads(view[pos + 4:pos + 4 + n])
        pos += 4 + n


def discard(round_dir: str) -> bool:
    """Delete a round's spill directory (after its pipeline finished); True if there was one."""
    d = round_dir.rstrip("/") + "/" + DIRNAME
    if not FileSystems.exists(d):
        return False
    FileSystems.delete([d])
    return True
