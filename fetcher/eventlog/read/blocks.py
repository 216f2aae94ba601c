"""Raw block decoders for the codecs of Spark's event logs: LZ4 blocks, snappy blocks and LZF
chunks in pure Python (the fallbacks), and the faster libraries' decoders when installed."""

from __future__ import annotations

from collections.abc import Callable


class CodecError(ValueError):
    """The compressed stream is corrupt or its codec is not available."""


class TruncatedStream(CodecError):
    """The compressed input stops in the middle of a block (a log still being written)."""


# --------------------------------------------------------------------------------- block decoders


def lz4_block_decompress_py(src: bytes, size: int) -> bytes:
    """Decode one raw LZ4 block whose decompressed size is ``size`` (pure Python)."""
    out = bytearray()
    i, n = 0, len(src)
    while i < n:
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        out += src[i : i + lit]
        i += lit
        if i >= n:
            break  # last sequence has literals only
        offset = src[i] | (src[i + 1] << 8)
        i += 2
        if offset == 0 or offset > len(out):
            raise CodecError("lz4: bad match offset")
        mlen = token & 15
        if mlen == 15:
            while True:
                b = src[i]
                i += 1
                mlen += b
                if b != 255:
                    break
        mlen += 4
        start = len(out) - offset
        if mlen <= offset:
            out += out[start : start + mlen]
        else:  # overlapping copy
            for k in range(mlen):
                out.append(out[start + k])
    if len(out) != size:
        raise CodecError(f"lz4: block decoded to {len(out)} bytes, header says {size}")
    return bytes(out)


def snappy_raw_decompress_py(src: bytes) -> bytes:
    """Decode one raw snappy block (pure Python)."""
    i, n = 0, len(src)
    size = shift = 0
    while True:  # varint uncompressed length
        b = src[i]
        i += 1
        size |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    out = bytearray()
    while i < n:
        tag = src[i]
        i += 1
        kind = tag & 3
        if kind == 0:  # literal
            ln = tag >> 2
            if ln >= 60:
                extra = ln - 59
                ln = int.from_bytes(src[i : i + extra], "little")
                i += extra
            ln += 1
            out += src[i : i + ln]
            i += ln
            continue
        if kind == 1:
            ln = ((tag >> 2) & 7) + 4
            off = ((tag >> 5) << 8) | src[i]
            i += 1
        elif kind == 2:
            ln = (tag >> 2) + 1
            off = src[i] | (src[i + 1] << 8)
            i += 2
        else:
            ln = (tag >> 2) + 1
            off = int.from_bytes(src[i : i + 4], "little")
            i += 4
        if off == 0 or off > len(out):
            raise CodecError("snappy: bad copy offset")
        start = len(out) - off
        if ln <= off:
            out += out[start : start + ln]
        else:
            for k in range(ln):
                out.append(out[start + k])
    if len(out) != size:
        raise CodecError(f"snappy: block decoded to {len(out)} bytes, header says {size}")
    return bytes(out)


def _lz4_block_decoder() -> Callable[[bytes, int], bytes]:
    try:
        import lz4.block as lz4block  # type: ignore[import-not-found]
    except ImportError:
        return lz4_block_decompress_py

    def decode(src: bytes, size: int) -> bytes:
        try:
            return lz4block.decompress(src, uncompressed_size=size)
        except Exception as exc:  # noqa: BLE001 - lz4.block.LZ4BlockError and friends
            raise CodecError(f"lz4: {exc}") from None

    return decode


def _snappy_block_decoder() -> Callable[[bytes], bytes]:
    try:
        import cramjam  # type: ignore[import-not-found]

        def decode_cj(src: bytes) -> bytes:
            try:
                return bytes(cramjam.snappy.decompress_raw(src))
            except Exception as exc:  # noqa: BLE001 - the library's own error types
                raise CodecError(f"snappy: {exc}") from None

        return decode_cj
    except ImportError:
        pass
    try:
        import snappy  # type: ignore[import-not-found]

        def decode_ps(src: bytes) -> bytes:
            try:
                return snappy.uncompress(src)
            except Exception as exc:  # noqa: BLE001 - the library's own error types
                raise CodecError(f"snappy: {exc}") from None

        return decode_ps
    except ImportError:
        return snappy_raw_decompress_py


def _lzf_decompress(src: bytes, size: int) -> bytes:
    out = bytearray()
    i, n = 0, len(src)
    while i < n:
        ctrl = src[i]
        i += 1
        if ctrl < 32:
            ln = ctrl + 1
            out += src[i : i + ln]
            i += ln
            continue
        ln = ctrl >> 5
        ref = len(out) - ((ctrl & 0x1F) << 8) - 1
        if ln == 7:
            ln += src[i]
            i += 1
        ref -= src[i]
        i += 1
        ln += 2
        if ref < 0:
            raise CodecError("lzf: bad back reference")
        for k in range(ln):
            out.append(out[ref + k])
    if len(out) != size:
        raise CodecError("lzf: chunk decoded to the wrong size")
    return bytes(out)
