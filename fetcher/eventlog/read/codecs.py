"""Decompressing readers for the codecs Spark writes event logs with.

Spark picks the codec from the file extension (``EventLogFileReader.codecName``: the last
``.``-separated part of the name, ``.inprogress`` stripped) and uses its short names:

* ``zstd``   -- standard zstd frames (``ZStdCompressionCodec``); possibly several concatenated.
* ``lz4``    -- lz4-java's ``LZ4BlockOutputStream`` framing, *not* the LZ4 frame format: blocks of
  ``"LZ4Block"`` magic, a token byte (method | level), compressed length, original length and a
  checksum (little-endian int32s), then the block; an empty block ends a stream, and Spark reads
  on past it (concatenated streams, ``stopOnEmptyBlock = false``).
* ``snappy`` -- snappy-java's ``SnappyOutputStream`` format: a 16-byte header (``\\x82SNAPPY\\x00``,
  version, compatible version as big-endian int32s) then chunks of a big-endian int32 length and a
  raw snappy block; a header may appear again mid-stream (concatenated streams).
* ``lzf``    -- ning compress-lzf chunks (``ZV`` + type + lengths), for completeness.
* no extension -- uncompressed.

Every reader is a ``read(n) -> bytes`` object holding at most one block in memory. zstd needs the
optional ``zstandard`` package; lz4 and snappy use ``lz4`` / ``cramjam`` / ``python-snappy`` when
present and fall back to the pure-Python block decoders below.
"""

from __future__ import annotations

import io
import struct
from typing import BinaryIO

from fetcher.eventlog.read.blocks import (
    CodecError,
    TruncatedStream,
    _lz4_block_decoder,
    _lzf_decompress,
    _snappy_block_decoder,
)

KNOWN_CODECS = ("lz4", "lzf", "snappy", "zstd")

# ------------------------------------------------------------------------------------- streams


class _BlockReader(io.RawIOBase):
    """Base for block-framed streams: subclasses return the next block's bytes, b"" at the end."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self._buf = b""
        self._pos = 0
        self._eof = False

    def readable(self) -> bool:
        return True

    def _next_block(self) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    def _read_exact(self, n: int, what: str) -> bytes | None:
        """n bytes, None at a clean end of input; CodecError (truncated) for a partial read."""
        data = self.raw.read(n)
        if not data:
            return None
        while len(data) < n:
            more = self.raw.read(n - len(data))
            if not more:
                raise TruncatedStream(f"{what}: stream ends inside a block")
            data += more
        return data

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            chunks = [self._buf[self._pos :]]
            self._buf, self._pos = b"", 0
            while not self._eof:
                blk = self._next_block()
                if not blk:
                    self._eof = True
                else:
                    chunks.append(blk)
            return b"".join(chunks)
        while self._pos >= len(self._buf):
            if self._eof:
                return b""
            blk = self._next_block()  # empty blocks are skipped inside: b"" means the end
            if not blk:
                self._eof = True
                return b""
            self._buf, self._pos = blk, 0
        out = self._buf[self._pos : self._pos + n]
        self._pos += len(out)
        return out

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


class LZ4BlockReader(_BlockReader):
    """lz4-java ``LZ4BlockInputStream`` framing, concatenated streams allowed."""

    MAGIC = b"LZ4Block"
    RAW, LZ4 = 0x10, 0x20

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__(raw)
        self._decode = _lz4_block_decoder()

    def _next_block(self) -> bytes:
        while True:
            header = self._read_exact(21, "lz4")
            if header is None:
                return b""
            if header[:8] != self.MAGIC:
                raise CodecError("lz4: bad block magic (not an LZ4BlockOutputStream)")
            token = header[8]
            method = token & 0xF0
            clen, olen, _check = struct.unpack_from("<iii", header, 9)
            if olen < 0 or clen < 0 or (olen and not clen):
                raise CodecError("lz4: bad block lengths")
            if olen == 0:
                continue  # end-of-stream marker; Spark reads on (concatenated streams)
            body = self._read_exact(clen, "lz4")
            if body is None:
                raise TruncatedStream("lz4: stream ends after a block header")
            if method == self.RAW:
                if clen != olen:
                    raise CodecError("lz4: raw block with mismatched lengths")
                return body
            if method != self.LZ4:
                raise CodecError(f"lz4: unknown compression method {method:#x}")
            return self._decode(body, olen)


class SnappyStreamReader(_BlockReader):
    """snappy-java ``SnappyInputStream`` format (header + length-prefixed raw blocks)."""

    MAGIC = b"\x82SNAPPY\x00"

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__(raw)
        self._decode = _snappy_block_decoder()
        self._header_seen = False

    def _next_block(self) -> bytes:
        while True:
            first = self._read_exact(4, "snappy")
            if first is None:
                return b""
            if first == self.MAGIC[:4]:
                rest = self._read_exact(12, "snappy")
                if rest is None or first + rest[:4] != self.MAGIC:
                    raise CodecError("snappy: bad stream header")
                self._header_seen = True
                continue
            if not self._header_seen:
                raise CodecError("snappy: missing snappy-java stream header")
            (clen,) = struct.unpack(">i", first)
            if clen < 0:
                raise CodecError("snappy: bad chunk length")
            if clen == 0:
                continue
            body = self._read_exact(clen, "snappy")
            if body is None:
                raise TruncatedStream("snappy: stream ends after a chunk length")
            return self._decode(body)


class LZFReader(_BlockReader):
    """ning compress-lzf chunk format (``ZV``, type 0 = stored, 1 = compressed)."""

    def _next_block(self) -> bytes:
        head = self._read_exact(5, "lzf")
        if head is None:
            return b""
        if head[:2] != b"ZV":
            raise CodecError("lzf: bad chunk magic")
        kind, ln = head[2], int.from_bytes(head[3:5], "big")
        if kind == 0:
            body = self._read_exact(ln, "lzf")
            if body is None:
                raise TruncatedStream("lzf: stream ends after a chunk header")
            return body
        if kind != 1:
            raise CodecError("lzf: bad chunk type")
        ulen_b = self._read_exact(2, "lzf")
        body = self._read_exact(ln, "lzf")
        if ulen_b is None or body is None:
            raise TruncatedStream("lzf: stream ends after a chunk header")
        return _lzf_decompress(body, int.from_bytes(ulen_b, "big"))


def zstd_frames_complete(raw: BinaryIO) -> bool:
    """Walk the zstd frames of a seekable file (headers only): False if the last one is cut."""
    raw.seek(0, io.SEEK_END)
    size = raw.tell()
    pos = 0
    while pos < size:
        raw.seek(pos)
        head = raw.read(4)
        if len(head) < 4:
            return False
        magic = int.from_bytes(head, "little")
        if 0x184D2A50 <= magic <= 0x184D2A5F:  # skippable frame
            ln = raw.read(4)
            if len(ln) < 4:
                return False
            pos += 8 + int.from_bytes(ln, "little")
            continue
        if magic != 0xFD2FB528:
            return True  # not ours to judge; the decoder reports corruption
        fhd_b = raw.read(1)
        if not fhd_b:
            return False
        fhd = fhd_b[0]
        single = bool(fhd & 0x20)
        fcs = {0: 1 if single else 0, 1: 2, 2: 4, 3: 8}[fhd >> 6]
        hdr = 1 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + fcs
        pos += 4 + hdr
        while True:
            raw.seek(pos)
            bh = raw.read(3)
            if len(bh) < 3:
                return False
            v = int.from_bytes(bh, "little")
            last, kind, bsize = v & 1, (v >> 1) & 3, v >> 3
            pos += 3 + (1 if kind == 1 else bsize)
            if last:
                break
        if fhd & 0x04:
            pos += 4
        if pos > size:
            return False
    return pos == size


class _ZstdReader(io.RawIOBase):
    """zstd frames via the ``zstandard`` package (bounded output per read); a last frame that is
    cut (a log being written) raises :class:`TruncatedStream` once its decodable part is out."""

    def __init__(self, raw: BinaryIO) -> None:
        try:
            import zstandard  # type: ignore[import-not-found]
        except ImportError:
            raise CodecError(
                "zstd event logs need the 'zstandard' package (pip install zstandard)"
            ) from None
        self._zstd = zstandard
        self.raw = raw
        self._reader = zstandard.ZstdDecompressor().stream_reader(
            raw, read_across_frames=True, closefd=False
        )
        self._checked = False

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._reader.read(n)
        except self._zstd.ZstdError as exc:
            raise CodecError(f"zstd: {exc}") from None
        if not data and not self._checked:
            self._checked = True
            seekable = getattr(self.raw, "seekable", lambda: False)()
            if seekable and not zstd_frames_complete(self.raw):
                raise TruncatedStream("zstd: stream ends inside a frame")
        return data

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._reader.close()
        self.raw.close()
        super().close()


def open_decompressed(raw: BinaryIO, codec: str | None) -> BinaryIO:
    """A ``read(n)`` stream of the decompressed bytes of ``raw`` for a Spark codec short name."""
    if codec is None:
        return raw
    if codec == "zstd":
        return _ZstdReader(raw)  # type: ignore[return-value]
    if codec == "lz4":
        return LZ4BlockReader(raw)  # type: ignore[return-value]
    if codec == "snappy":
        return SnappyStreamReader(raw)  # type: ignore[return-value]
    if codec == "lzf":
        return LZFReader(raw)  # type: ignore[return-value]
    raise CodecError(f"unknown event log codec {codec!r} (Spark knows {', '.join(KNOWN_CODECS)})")
