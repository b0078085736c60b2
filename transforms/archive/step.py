"""Archive: the Beam side of writing a round's WARC files and their CDXJ index.

`WriteWarc(warc_dir, round_no, max_bytes)` takes the archived captures of the page step
(transforms.page.fate: `PageFate.archived`) and writes, through Beam's FileSystems:

    warc_dir/beamcrawl-RRRRRR-<bundle id>-SSSSS.warc.gz   records of one bundle, rotated
                                                         once a file reaches max_bytes
    warc_dir/index.cdxj                                  the round's CDXJ, sorted
    warc_dir/files.json                                  the files whose bundles committed

A bundle writes its own files under a name no other bundle, worker or round can take
(round number + a random bundle id + a sequence number), and only emits their names and
index lines when it finishes. A bundle the runner retries leaves files nobody lists; the
round's commit (pipelines.crawldir) lists in `_COMMITTED` only the files in files.json and
deletes the others. A killed round has no `_COMMITTED`; its rerun discards the folder.
"""
import json
import uuid

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.archive.warc import WarcFile, sort_index
from transforms.tableio.gather import GatherAll
from transforms.tableio.globalwindow import in_global_window

INDEX = "index.cdxj"
FILES = "files.json"


def warc_name(round_no: int, bundle_id: str, seq: int) -> str:
    return f"beamcrawl-{round_no:06d}-{bundle_id}-{seq:05d}.warc.gz"


class _WriteWarcFiles(beam.DoFn):
    """captures -> CDXJ lines (main) and {"name", "bytes", "records"} per file (tag `files`)."""

    def __init__(self, warc_dir, round_no, max_bytes, info):
        self.warc_dir, self.round_no, self.max_bytes, self.info = warc_dir, round_no, max_bytes, info

    def start_bundle(self):
        self._bundle = uuid.uuid4().hex[:12]
        self._seq, self._handle, self._file = 0, None, None
        self._lines, self._done = [], []

    def _close(self):
        if self._handle is not None:
            self._handle.close()
            self._done.append({"name": self._file.filename, "bytes": self._file.size,
                               "records": self._file.records})
            self._handle = self._file = None

    def _open(self):
        name = warc_name(self.round_no, self._bundle, self._seq)
        self._seq += 1
        # UNCOMPRESSED: the records are gzip members already (AUTO would gzip the .gz again)
        self._handle = FileSystems.create(FileSystems.join(self.warc_dir, name), mime_type="application/warc",
                                          compression_type=CompressionTypes.UNCOMPRESSED)
        self._file = WarcFile(self._handle, name, self.info)

    def process(self, capture):
        if self._file is not None and self._file.size >= self.max_bytes:
            self._close()
        if self._file is None:
            self._open()
        self._lines.append(self._file.add(capture))

    def finish_bundle(self):
        self._close()
        for line in self._lines:     # emitted only once every file of the bundle is closed
            yield in_global_window(line)
        for f in self._done:
            yield beam.pvalue.TaggedOutput("files", in_global_window(f))
        self._lines, self._done = [], []


class _WriteIndex(beam.DoFn):
    def __init__(self, warc_dir):
        self.warc_dir = warc_dir

    def process(self, lines, files):
        with FileSystems.create(FileSystems.join(self.warc_dir, INDEX)) as f:
            for line in sort_index(lines):
                f.write(line.encode("utf-8") + b"\n")
        listing = sorted(files, key=lambda f: f["name"])
        with FileSystems.create(FileSystems.join(self.warc_dir, FILES)) as f:
            f.write(json.dumps(listing, indent=1).encode("utf-8"))
        yield {"warc_files": len(listing), "warc_bytes": sum(f["bytes"] for f in listing),
               "warc_captures": len(lines)}


class WriteWarc(beam.PTransform):
    """Archived captures -> WARC files, index.cdxj and files.json under `warc_dir`; outputs
    one counter dict (warc_files, warc_bytes, warc_captures) for the round's report."""

    def __init__(self, warc_dir, round_no, max_bytes, info=None):
        super().__init__()
        self.warc_dir, self.round_no, self.max_bytes, self.info = warc_dir, round_no, max_bytes, info

    def expand(self, captures):
        lines, files = (captures
                        | "WriteWarcFiles" >> beam.ParDo(_WriteWarcFiles(
                            self.warc_dir, self.round_no, self.max_bytes, self.info))
                        .with_outputs("files", main="index"))
        all_lines = lines | "AllIndexLines" >> GatherAll()
        return all_lines | "WriteIndex" >> beam.ParDo(
            _WriteIndex(self.warc_dir), beam.pvalue.AsList(files))
