"""Masking of secrets in Spark properties, shared by the fetcher (before storing) and the web app."""

from __future__ import annotations

import re

REDACTED = "*********(redacted)"


def redact(name: str, value: str | None, pattern: re.Pattern[str] | str) -> str | None:
    """The value, or the mask when the key or the value matches the pattern, as Spark does."""
    if value is None:
        return None
    if isinstance(pattern, str):
        pattern = re.compile(pattern)
    if pattern.search(name) or pattern.search(value):
        return REDACTED
    return value
