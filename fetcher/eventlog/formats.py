"""Value formatting exactly as the History Server's JSON and Spark's UI helpers do it."""

from __future__ import annotations

import math
import struct
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def shs_date(ms: int) -> str:
    """Epoch ms -> ``2026-11-29T10:00:00.000GMT`` (JacksonMessageWriter's date format, GMT)."""
    dt = _EPOCH + timedelta(milliseconds=ms)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}GMT"


# ------------------------------------------------------------------------ java-style %.Nf


def _java_fixed(value: float, digits: int) -> str:
    """Java ``String.format("%.Nf", double)``: HALF_UP on the double's shortest decimal digits."""
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    d = Decimal(repr(value))
    return str(d.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def ms_duration(ms: int) -> str:
    """Spark ``Utils.msDurationToString`` (float arithmetic, as in Scala's ``t.toFloat / unit``)."""
    second, minute, hour = 1000, 60_000, 3_600_000
    if ms < second:
        return f"{ms} ms"
    if ms < minute:
        return _java_fixed(_f32(_f32(float(ms)) / second), 1) + " s"
    if ms < hour:
        return _java_fixed(_f32(_f32(float(ms)) / minute), 1) + " m"
    return _java_fixed(_f32(_f32(float(ms)) / hour), 2) + " h"


_DEC128 = Context(prec=34, rounding=ROUND_HALF_EVEN)
_UNITS = [
    (1 << 60, "EiB"),
    (1 << 50, "PiB"),
    (1 << 40, "TiB"),
    (1 << 30, "GiB"),
    (1 << 20, "MiB"),
    (1 << 10, "KiB"),
]


def bytes_string(size: int) -> str:
    """Spark ``Utils.bytesToString``: 2 units or more switch to the unit, one decimal, HALF_UP."""
    if size >= (1 << 11) * (1 << 60):
        d = _DEC128.create_decimal(size)
        return format(Context(prec=3, rounding=ROUND_HALF_UP).create_decimal(d), "E") + " B"
    for unit, name in _UNITS:
        if size >= 2 * unit:
            value = _DEC128.divide(Decimal(size), Decimal(unit))
            return f"{value.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)} {name}"
    return f"{Decimal(size).quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)} B"


def java_integer(value: int) -> str:
    """``NumberFormat.getIntegerInstance(Locale.US).format(long)``: grouped digits."""
    return f"{value:,}"


def java_number(value: float) -> str:
    """``NumberFormat.getNumberInstance(Locale.US).format(double)``: <= 3 decimals, HALF_EVEN."""
    d = Decimal(repr(value)).quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN)
    sign = "-" if d < 0 else ""
    d = abs(d)
    whole = int(d)
    frac = str(d - whole)[2:].rstrip("0") if d != whole else ""
    return f"{sign}{whole:,}" + (f".{frac}" if frac else "")
