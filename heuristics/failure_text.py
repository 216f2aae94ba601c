"""Failure messages kept for a finding's details: whole, so the line that names the error (a
Python exception under PySpark's traceback, a Java ``Caused by:``) can be shown first, but
bounded, so a deep JVM trace does not bloat the stored results."""

from __future__ import annotations

import re

#: Longest message kept per details row.
MESSAGE_CHARS = 4000

_JVM_FRAME = re.compile(r"^\s+(?:at \S|\.\.\. \d+ more)")


def keep_message(message: str | None, limit: int = MESSAGE_CHARS) -> str | None:
    """``message`` stripped; when longer than ``limit``, without its JVM stack frames first (they
    never name the cause), then cut to ``limit``. None when empty."""
    text = (message or "").strip()
    if len(text) > limit:
        text = "\n".join(line for line in text.splitlines() if not _JVM_FRAME.match(line))
        if len(text) > limit:
            text = text[: limit - 1] + "…"
    return text or None
