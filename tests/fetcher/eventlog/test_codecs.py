"""Codec framing: Spark's lz4 (LZ4BlockOutputStream), snappy (snappy-java stream), lzf, zstd."""

import io
import os
import random
import struct

import pytest

from fetcher.eventlog.read import codecs
from fetcher.eventlog.read.blocks import (
    CodecError,
    TruncatedStream,
    lz4_block_decompress_py,
    snappy_raw_decompress_py,
)
from fetcher.eventlog.read.codecs import LZ4BlockReader, SnappyStreamReader, open_decompressed

lz4block = pytest.importorskip("lz4.block")
cramjam = pytest.importorskip("cramjam")


def _sample(n: int, seed: int = 1) -> bytes:
    rnd = random.Random(seed)
    words = [b"Event", b"Task", b"Stage", b"SparkListenerTaskEnd", b'"ID":', b"12345", b"\n"]
    return b"".join(rnd.choice(words) for _ in range(n)) + os.urandom(64)


def lz4_stream(data: bytes, block: int = 1 << 16, end: bool = True) -> bytes:
    """What LZ4BlockOutputStream writes (checksums are not checked by the reader)."""
    out = bytearray()
    for i in range(0, len(data), block):
        chunk = data[i : i + block]
        comp = lz4block.compress(chunk, store_size=False)
        method = 0x20
        if len(comp) >= len(chunk):
            comp, method = chunk, 0x10
        out += b"LZ4Block" + bytes([method | 6]) + struct.pack("<iii", len(comp), len(chunk), 0)
        out += comp
    if end:
        out += b"LZ4Block" + bytes([0x10 | 6]) + struct.pack("<iii", 0, 0, 0)
    return bytes(out)


def snappy_stream(data: bytes, block: int = 1 << 15) -> bytes:
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), block):
        comp = bytes(cramjam.snappy.compress_raw(data[i : i + block]))
        out += struct.pack(">i", len(comp)) + comp
    return bytes(out)


def test_pure_python_lz4_block_decoder_matches_the_library():
    data = _sample(5000)
    comp = lz4block.compress(data, store_size=False)
    assert lz4_block_decompress_py(comp, len(data)) == data


def test_pure_python_snappy_decoder_matches_the_library():
    data = _sample(5000, seed=2) + b"a" * 3000  # long runs: overlapping copies
    comp = bytes(cramjam.snappy.compress_raw(data))
    assert snappy_raw_decompress_py(comp) == data


def test_lz4_block_stream_with_concatenated_streams_reads_on_past_the_end_mark():
    a, b = _sample(3000, 3), _sample(4000, 4)
    stream = lz4_stream(a, block=1000) + lz4_stream(b, block=777)
    assert LZ4BlockReader(io.BytesIO(stream)).read() == a + b


def test_lz4_reader_uses_pure_python_fallback(monkeypatch):
    data = _sample(2000, 5)
    monkeypatch.setattr(codecs, "_lz4_block_decoder", lambda: lz4_block_decompress_py)
    assert LZ4BlockReader(io.BytesIO(lz4_stream(data, block=512))).read() == data


def test_lz4_frame_format_is_refused():
    lz4frame = pytest.importorskip("lz4.frame")
    with pytest.raises(CodecError, match="magic"):
        LZ4BlockReader(io.BytesIO(lz4frame.compress(b"x" * 100))).read()


def test_lz4_truncated_block_is_reported_as_truncation():
    stream = lz4_stream(_sample(3000, 6), block=1000, end=False)
    reader = LZ4BlockReader(io.BytesIO(stream[:-10]))
    with pytest.raises(TruncatedStream):
        reader.read()


def test_snappy_java_stream_and_concatenation():
    a, b = _sample(3000, 7), _sample(2000, 8)
    assert SnappyStreamReader(io.BytesIO(snappy_stream(a) + snappy_stream(b))).read() == a + b


def test_snappy_without_header_is_refused():
    comp = bytes(cramjam.snappy.compress_raw(b"hello world" * 10))
    with pytest.raises(CodecError):
        SnappyStreamReader(io.BytesIO(struct.pack(">i", len(comp)) + comp)).read()


def test_snappy_framing_format_is_refused():
    framed = bytes(cramjam.snappy.compress(b"hello world" * 10))  # Google framing format
    with pytest.raises(CodecError):
        SnappyStreamReader(io.BytesIO(framed)).read()


def test_reads_in_small_pieces_give_the_same_bytes():
    data = _sample(4000, 9)
    reader = LZ4BlockReader(io.BytesIO(lz4_stream(data, block=300)))
    got = bytearray()
    while True:
        piece = reader.read(97)
        if not piece:
            break
        got += piece
    assert bytes(got) == data


def test_zstd_multi_frame():
    zstandard = pytest.importorskip("zstandard")
    c = zstandard.ZstdCompressor()
    a, b = _sample(1000, 10), _sample(1000, 11)
    assert open_decompressed(io.BytesIO(c.compress(a) + c.compress(b)), "zstd").read() == a + b


def test_unknown_codec():
    with pytest.raises(CodecError, match="unknown"):
        open_decompressed(io.BytesIO(b""), "brotli")


def test_zstd_cut_inside_a_frame_gives_the_decodable_part_then_truncation():
    zstandard = pytest.importorskip("zstandard")
    data = b"".join(b"line %d\n" % i for i in range(200_000))
    buf = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(buf, closefd=False) as w:
        w.write(data)
    cut = buf.getvalue()[: len(buf.getvalue()) // 2]
    reader = open_decompressed(io.BytesIO(cut), "zstd")
    got = bytearray()
    with pytest.raises(TruncatedStream):
        while True:
            piece = reader.read(1 << 16)
            if not piece:
                break
            got += piece
    assert 0 < len(got) < len(data) and data.startswith(bytes(got))


def test_zstd_frame_walk_accepts_complete_files():
    zstandard = pytest.importorskip("zstandard")
    c = zstandard.ZstdCompressor(write_checksum=True)
    whole = c.compress(b"a" * 100_000) + c.compress(b"b" * 10)
    assert codecs.zstd_frames_complete(io.BytesIO(whole))
    assert not codecs.zstd_frames_complete(io.BytesIO(whole[:-2]))
