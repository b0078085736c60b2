"""Bounded, incremental decoding of HTTP bodies (Content-Encoding gzip, deflate, br).

A 10 KiB gzip "bomb" can inflate to gigabytes. `BoundedDecoder` is fed raw bytes as they
arrive and never produces more than `limit` decoded bytes in total, nor holds more than
`CHUNK` bytes of any intermediate stage at a time; once the limit is reached `full` is
True and the caller stops reading (the body is flagged truncated).

`decompress_bounded(data, encodings, limit)` is the one-shot form (sitemaps use it).
"""
from __future__ import annotations

import zlib
from typing import Iterator

try:
    import brotli
except ImportError:  # pragma: no cover - brotli is a declared dependency
    brotli = None

CHUNK = 64 * 1024


class DecodeError(Exception):
    """The body is not valid for its declared Content-Encoding."""


class UnsupportedEncoding(DecodeError):
    pass


def supported_encodings() -> tuple[str, ...]:
    return ("gzip", "deflate", "br") if brotli is not None else ("gzip", "deflate")


def accept_encoding() -> str:
    return ", ".join(supported_encodings())


def parse_content_encoding(header: str | None) -> list[str]:
    """'gzip, br' -> ['gzip', 'br'] (in the order applied by the server); identity dropped."""
    if not header:
        return []
    out = []
    for token in header.split(","):
        token = token.strip().lower()
        if token in ("", "identity"):
            continue
        if token == "x-gzip":
            token = "gzip"
        out.append(token)
    return out


class _ZlibStage:
    def __init__(self, gzip: bool):
        self._gzip = gzip
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzip else None
        self._head = b""
        self.done = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._d is None:                      # deflate: zlib-wrapped or raw? sniff 2 bytes
            self._head += data
            if len(self._head) < 2:
                return
            b0, b1 = self._head[0], self._head[1]
            wrapped = (b0 & 0x0F) == 8 and (b0 * 256 + b1) % 31 == 0
            self._d = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
            data, self._head = self._head, b""
        buf = data
        while True:
            if self.done:
                return                           # trailing garbage after the stream: ignored
            try:
                out = self._d.decompress(buf, CHUNK)
            except zlib.error as e:
                raise DecodeError(str(e)) from None
            buf = self._d.unconsumed_tail
            if out:
                yield out
            if self._d.eof:
                rest = self._d.unused_data
                if self._gzip and rest.lstrip(b"\0")[:2] == b"\x1f\x8b":   # next gzip member
                    self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    buf = rest.lstrip(b"\0")
                    continue
                self.done = True
                return
            if len(out) < CHUNK and not buf:
                return

    def finish(self) -> Iterator[bytes]:
        if self._d is None and self._head:
            yield from self.feed(b"")
        return


class _BrotliStage:
    def __init__(self):
        if brotli is None:
            raise UnsupportedEncoding("br")
        self._d = brotli.Decompressor()
        self.done = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.done:
            return
        try:
            out = self._d.process(data, output_buffer_limit=CHUNK)
            if out:
                yield out
            while not self._d.can_accept_more_data():
                out = self._d.process(b"", output_buffer_limit=CHUNK)
                if not out:
                    break
                yield out
        except brotli.error as e:
            raise DecodeError(f"brotli: {e}") from None
        if self._d.is_finished():
            self.done = True

    def finish(self) -> Iterator[bytes]:
        return iter(())


def _stage(encoding: str):
    if encoding == "gzip":
        return _ZlibStage(gzip=True)
    if encoding == "deflate":
        return _ZlibStage(gzip=False)
    if encoding == "br":
        return _BrotliStage()
    raise UnsupportedEncoding(encoding)


class BoundedDecoder:
    """Decode a body as it streams in, producing at most `limit` bytes in total.

    `encodings` are Content-Encoding tokens in the order the server applied them
    (decoding runs in reverse). Raises UnsupportedEncoding for an unknown token at
    construction and DecodeError on corrupt input.
    """

    def __init__(self, encodings: list[str], limit: int):
        self._stages = [_stage(e) for e in reversed(encodings)]
        self.limit = limit
        self._parts: list[bytes] = []
        self.size = 0
        self.full = False      # output went past the limit: what was kept is truncated

    def _push(self, chunks: Iterator[bytes], i: int) -> None:
        for chunk in chunks:
            if self.full:
                return
            if i == len(self._stages):
                room = self.limit - self.size
                if len(chunk) > room:
                    chunk = chunk[:room]
                    self.full = True
                self._parts.append(chunk)
                self.size += len(chunk)
            else:
                self._push(self._stages[i].feed(chunk), i + 1)

    def feed(self, data: bytes) -> None:
        if data and not self.full:
            self._push(iter((data,)), 0)

    def finish(self) -> None:
        for i, st in enumerate(self._stages):
            if self.full:
                return
            self._push(st.finish(), i + 1)

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def decompress_bounded(data: bytes, encodings: list[str], limit: int) -> tuple[bytes, bool]:
    """Decode `data` in one go -> (at most `limit` bytes, truncated?). Raises DecodeError."""
    dec = BoundedDecoder(encodings, limit)
    for i in range(0, len(data), CHUNK):
        dec.feed(data[i:i + CHUNK])
        if dec.full:
            break
    dec.finish()
    return dec.getvalue(), dec.full
