"""Decode SHS bodies refusing numbers that JSON or the database cannot hold.

Python's ``json`` reads ``NaN`` and ``Infinity``, turns ``1e400`` into infinity and any integer into
an unbounded ``int``; none of these can be stored (a PostgreSQL ``bigint`` holds 64 bits, ``jsonb``
has no infinity) and a real History Server never sends them. :func:`loads` raises
:class:`HostileNumber` for them; :func:`loads_marking` puts a :class:`Hostile` marker in their place
instead, so that one bad entry of a listing fails only its own application.

Checking every number costs a Python call per number, so only two kinds of body get it. A body
where a byte scan finds a run of 19 digits (an integer that may not fit in 64 bits, which orjson
would read as an unbounded integer or a float) is decoded by ``json`` with every number checked.
Any other body is decoded by orjson, which refuses the constants (``NaN``, ``Infinity``) and any
number that overflows a double (``1e400``) by itself; a body orjson refuses for these or for
another reason (a lone surrogate escape, another encoding than UTF-8) is decoded again by the
checked ``json``, whose result or error is then the answer, so the two decoders differ only in
speed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import orjson

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Every digit becomes "0": one substring search then finds any run of 19 digits, ten times faster
# than a regular expression.
_FOLD = bytes(ord("0") if c in b"0123456789" else c for c in range(256))
_LONG_RUN = b"0" * 19


def _suspect(body: bytes) -> bool:
    return _LONG_RUN in body.translate(_FOLD)


class HostileNumber(ValueError):
    """A number in a body that JSON or the database cannot hold."""

    def __init__(self, text: str) -> None:
        self.text = text[:40]
        super().__init__(f"number out of range: {self.text}")


class Hostile:
    """Stands in for a hostile number in :func:`loads_marking` output."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text[:40]

    def __repr__(self) -> str:
        return f"Hostile({self.text!r})"


def _raise(text: str) -> Any:
    raise HostileNumber(text)


def _checked(on_bad: Callable[[str], Any]) -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    def parse_int(text: str) -> Any:
        value = int(text)
        return value if INT64_MIN <= value <= INT64_MAX else on_bad(text)

    def parse_float(text: str) -> Any:
        value = float(text)
        return value if math.isfinite(value) else on_bad(text)

    return parse_int, parse_float


_STRICT = _checked(_raise)
_MARKING = _checked(Hostile)


def loads(body: bytes) -> Any:
    """``json.loads`` that raises HostileNumber for NaN, infinities and integers over 64 bits."""
    if not _suspect(body):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body, parse_constant=_raise, parse_int=_STRICT[0], parse_float=_STRICT[1])


def loads_marking(body: bytes) -> Any:
    """``json.loads`` that replaces each hostile number with a :class:`Hostile` marker."""
    if not _suspect(body):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body, parse_constant=Hostile, parse_int=_MARKING[0], parse_float=_MARKING[1])


def without_members(body: bytes, names: Sequence[str]) -> bytes:
    """``body`` with the named array members of its top-level object emptied (``[ ]``), where
    they are written as the History Server writes them (Jackson's pretty printer: a top-level
    member starts a line with two spaces of indent, ``"name" : [``, and an array ends on the
    line it starts on, as a JSON string holds no line break); left as they are in any other
    form. What the named members held is then neither decoded nor checked.

    A member written otherwise cannot be emptied wrongly: cut at the end of its first line, the
    rest of a longer array is no JSON, and :func:`loads_unread` then decodes the body whole."""
    for name in names:
        head = b'\n  "' + name.encode() + b'" : ['
        start = body.find(head)
        if start < 0:
            continue
        start += len(head)
        end = body.find(b"\n", start)
        if end < 0:
            continue
        body = body[:start] + (b" ]," if body[end - 1 : end] == b"," else b" ]") + body[end:]
    return body


def loads_unread(body: bytes, names: Sequence[str]) -> Any:
    """:func:`loads` of the body :func:`without_members` ``names`` (their values emptied), or of
    the whole body when that is not valid JSON."""
    if names:
        trimmed = without_members(body, names)
        if trimmed is not body:
            try:
                return loads(trimmed)
            except ValueError:
                pass
    return loads(body)


def find_hostile(value: Any) -> str | None:
    """The text of the first hostile number marked anywhere in ``value``, or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Hostile):
            return item.text
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
