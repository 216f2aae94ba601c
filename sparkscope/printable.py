"""Text from other people's jobs made safe for one log or terminal line.

Application ids, names and error texts come from the History Server. A carriage return or line
feed in one would start a new, forged log line; an escape sequence would rewrite the terminal. Each
control character is written as its Python escape instead (``\\r``, ``\\n``, ``\\x1b``), so the line
stays one line and the value stays readable.
"""

from __future__ import annotations

import logging
import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    c = match.group(0)
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``str(text)`` with every control character (line breaks included) escaped."""
    return _CONTROL.sub(_escape, str(text))


class PrintableFormatter(logging.Formatter):
    """A log formatter that keeps each record on one line: the message's control characters are
    escaped; a traceback keeps its line breaks but loses every other control character."""

    def format(self, record: logging.LogRecord) -> str:
        saved = record.msg, record.args
        record.msg, record.args = printable(record.getMessage()), None
        try:
            return super().format(record)
        finally:
            record.msg, record.args = saved

    def formatException(self, ei: object) -> str:  # noqa: N802 - logging's name
        text = super().formatException(ei)  # type: ignore[arg-type]
        return _CONTROL_BUT_NEWLINE.sub(_escape, text)
