"""Strict parsing of configuration files: the error that names file and key, value parsers (each
returns the value or raises ValueError saying what was expected), and a mapping parsed key by key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


class ConfigError(Exception):
    """A configuration file is missing, unreadable or holds a wrong key or value."""

    def __init__(self, file: str | Path | None, key: str | None, message: str) -> None:
        self.file = str(file) if file is not None else None
        self.key = key
        self.message = message
        where = ": ".join(p for p in (self.file, key) if p)
        super().__init__(f"{where}: {message}" if where else message)


def boolean(value: Any) -> bool:
    """True or false (YAML booleans only, not "yes" strings)."""
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {value!r}")


def integer(value: Any) -> int:
    """An integer (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def positive_int(value: Any) -> int:
    """An integer >= 1."""
    n = integer(value)
    if n < 1:
        raise ValueError(f"expected an integer >= 1, got {value!r}")
    return n


def non_negative_int(value: Any) -> int:
    """An integer >= 0."""
    n = integer(value)
    if n < 0:
        raise ValueError(f"expected an integer >= 0, got {value!r}")
    return n


def non_negative_number(value: Any) -> float:
    """A number >= 0, as float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    if value < 0:
        raise ValueError(f"expected a number >= 0, got {value!r}")
    return float(value)


def optional_number(value: Any) -> float | None:
    """None or a number >= 0."""
    return None if value is None else non_negative_number(value)


def string(value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def optional_string(value: Any) -> str | None:
    """None or a non-empty string."""
    return None if value is None else string(value)


def regex(value: Any) -> str:
    """A string that compiles as a regular expression."""
    pattern = string(value)
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from exc
    return pattern


def server_url(value: Any) -> str:
    """An http(s):// or file:// URL or a folder, without a trailing slash."""
    url = string(value).rstrip("/")
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https", "file", ""):
        raise ValueError(f"expected an http(s):// or file:// URL or a folder, got {value!r}")
    return url


def event_log_location(value: Any) -> str:
    """A folder, ``file://`` URL or any other URL of event logs (an fsspec URL such as s3://,
    gs://, abfs://, hdfs://; its driver is checked when the logs are read)."""
    url = string(value).strip()
    if url.rstrip("/") == "":
        raise ValueError(f"expected a folder or a URL of event logs, got {value!r}")
    return url.rstrip("/") if "://" not in url or url.split("://", 1)[1].strip("/") else url


def parse_keys(
    raw: Mapping[str, Any], parsers: Mapping[str, Any], path: str, file: str | None
) -> dict[str, Any]:
    """Each key of ``raw`` through its parser; an unknown key or bad value names ``path.key``."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        parser = parsers.get(key)
        if parser is None:
            raise ConfigError(file, f"{path}.{key}", f"unknown key (known: {', '.join(parsers)})")
        try:
            out[key] = parser(value)
        except ValueError as exc:
            raise ConfigError(file, f"{path}.{key}", str(exc)) from None
    return out
