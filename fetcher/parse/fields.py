"""Shared field coercion for SHS responses: tolerant numbers, bounded strings, shape checks."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any


class ParseError(ValueError):
    """A response body does not have the shape the SHS API documents."""


# ------------------------------------------------------------------------------------- helpers


#: The form every SHS writes (Jackson's, in UTC): ``YYYY-MM-DDTHH:MM:SS.mmmGMT``. A text has that
#: form when its ASCII bytes, each digit made a 0, are :data:`_SHS_FORM` (one C pass: a regular
#: expression costs twice as much); ``datetime.fromisoformat`` then reads it, in C (strptime
#: costs ten times more). Any other text goes through strptime below.
_SHS_FORM = b"0000-00-00T00:00:00.000GMT"
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_from_iso = datetime.fromisoformat
_EPOCH = datetime(1970, 1, 1)


def parse_time_ms(value: Any) -> int | None:
    """An SHS timestamp (``2026-11-29T17:09:08.478GMT``) or epoch number -> epoch ms."""
    if value is None or value == "":
        return None
    if (
        type(value) is str
        and len(value) == 26
        and value.isascii()
        and value.encode().translate(_DIGITS_AS_ZERO) == _SHS_FORM
    ):
        # "YYYY-MM-DDTHH:MM:SS.mmm" in UTC, read as a naive datetime: its distance from the epoch
        # is the one the aware datetime strptime gives has, so the seconds are the same float
        # as its timestamp(); fromisoformat refuses what strptime refuses (no such date or time).
        try:
            since = _from_iso(value[:23]) - _EPOCH
        except ValueError:
            return None
        return int(since.total_seconds() * 1000)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _int(value) if value > 0 else None
    if not isinstance(value, str):
        return None
    text = value.strip().replace("GMT", "+0000").replace("Z", "+0000")
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S%z"):
        try:
            return int(datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    return None


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int(value: Any) -> int:
    """A number for a 64-bit column; ParseError for one the database cannot hold."""
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:  # nearly every value
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
        raise ParseError(f"number out of range: {str(value)[:40]}")
    if isinstance(value, float):
        if -9.2e18 < value < 9.2e18:  # NaN fails both
            return int(value)
        raise ParseError(f"number out of range: {value!r}")
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return 0
        return _int(number)
    return 0


def _opt_int(value: Any) -> int | None:
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:  # nearly every value: one call
        return value
    return None if value is None else _int(value)


def _str(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text[:limit]


def _need_list(data: Any, what: str) -> list[Any]:
    if not isinstance(data, list):
        raise ParseError(f"{what}: expected a JSON list, got {type(data).__name__}")
    return data


def _need_dict(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ParseError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def _sub(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}
