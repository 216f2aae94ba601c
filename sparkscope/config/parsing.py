"""Strict parsing of configuration values: the error that names file and key, and the validators
of the settings table (each parses one value or raises ValueError saying, in one line, what was
expected; each also says so for the configuration reference)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sparkscope.saferegex import compile_safe


class ConfigError(Exception):
    """A configuration file is missing, unreadable or holds a wrong key or value."""

    def __init__(self, file: str | Path | None, key: str | None, message: str) -> None:
        self.file = str(file) if file is not None else None
        self.key = key
        self.message = message
        where = ": ".join(p for p in (self.file, key) if p)
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True)
class Validator:
    """One kind of value: its parser and the words the configuration reference shows for it."""

    allowed: str
    parse: Callable[[Any], Any]

    def __call__(self, value: Any) -> Any:
        return self.parse(value)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _shown(value: Any) -> str:
    """A refused value as an error shows it: repr, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {_shown(value)}")


BOOLEAN = Validator("true or false", _boolean)


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {_shown(value)}")
    return value


def integer(lo: int, hi: int) -> Validator:
    """An integer (not a boolean, not 4.0) within [lo, hi]."""

    def parse(value: Any) -> int:
        n = _integer(value)
        if n < lo:
            raise ValueError(f"expected an integer >= {lo}, got {_shown(value)}")
        if n > hi:
            raise ValueError(f"expected an integer >= {lo} and <= {hi}, got {_shown(value)}")
        return n

    return Validator(f"integer {lo:,}..{hi:,}", parse)


def number(lo: float, hi: float, *, above: bool = False) -> Validator:
    """A finite number within [lo, hi] (``above``: greater than lo), as float."""
    low = f"> {lo:g}" if above else f">= {lo:g}"

    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a number, got {_shown(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value!r}")
        x = float(value)
        if x < lo or (above and x == lo):
            raise ValueError(f"expected a number {low}, got {_shown(value)}")
        if x > hi:
            raise ValueError(f"expected a number {low} and <= {hi:g}, got {_shown(value)}")
        return x

    return Validator(f"number {low}, <= {hi:g}", parse)


def optional(inner: Validator) -> Validator:
    """Unset (null) or ``inner``."""
    return Validator(f"unset or {inner.allowed}", lambda v: None if v is None else inner.parse(v))


def string(max_len: int = 4096) -> Validator:
    """A non-empty string of at most ``max_len`` characters, without control characters."""

    def parse(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected a non-empty string, got {_shown(value)}")
        if len(value) > max_len:
            raise ValueError(f"expected at most {max_len} characters, got {len(value)}")
        if _CONTROL.search(value):
            raise ValueError("control characters (newline, tab, escape) are not allowed")
        return value

    return Validator(f"text, 1..{max_len} characters", parse)


_HOST = re.compile(r"[A-Za-z0-9._:\-\[\]%]{1,255}")


def _host(value: Any) -> str:
    text = string(255).parse(value)
    if not _HOST.fullmatch(text):
        raise ValueError(f"expected a host name or address, got {_shown(value)}")
    return text


HOST = Validator("host name or IP address", _host)


def regex(max_unbounded: int) -> Validator:
    """A regular expression admitted by :func:`sparkscope.saferegex.compile_safe`."""
    return Validator(
        "regular expression with bounded backtracking",
        lambda v: compile_safe(v, max_unbounded).pattern,
    )


def regex_list(max_items: int, max_unbounded: int) -> Validator:
    """A list of admitted regular expressions (an error names the item: ``key[1]``)."""
    one = regex(max_unbounded)

    def parse(value: Any) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise ValueError(f"expected a list of regular expressions, got {_shown(value)}")
        if len(value) > max_items:
            raise ValueError(f"at most {max_items} patterns, got {len(value)}")
        out = []
        for i, item in enumerate(value):
            try:
                out.append(one.parse(item))
            except ValueError as exc:
                raise ItemError(i, str(exc)) from None
        return tuple(out)

    return Validator(f"list of up to {max_items} regular expressions", parse)


class ItemError(ValueError):
    """A bad item of a list value; :func:`parse_keys` names it as ``key[index]``."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def _url_problem(url: str) -> str | None:
    """What is wrong with an http(s) URL's shape, or None."""
    if any(c.isspace() for c in url):
        return "a URL may not contain a space"
    if _CONTROL.search(url):
        return "a URL may not contain control characters"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"bad port ({exc})"
    if not parts.hostname:
        return "expected a host name, as in http://shs.example:18080"
    if port == 0:
        return "bad port (Port out of range 1-65535)"
    if parts.query or parts.fragment:
        return "a server URL takes no query or fragment"
    return None


def _server_url(value: Any) -> str:
    url = string(2000).parse(value).rstrip("/")
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https", "file", ""):
        raise ValueError(f"expected an http(s):// or file:// URL or a folder, got {_shown(value)}")
    if scheme in ("http", "https"):
        problem = _url_problem(url)
        if problem:
            raise ValueError(problem)
    return url


SERVER_URL = Validator("http(s):// URL, file:// URL or folder", _server_url)


def event_log_location(value: Any) -> str:
    """A folder, ``file://`` URL or any other URL of event logs (an fsspec URL such as s3://,
    gs://, abfs://, hdfs://; its driver is checked when the logs are read)."""
    url = string(4000).parse(value).strip()
    if url.rstrip("/") == "":
        raise ValueError(f"expected a folder or a URL of event logs, got {_shown(value)}")
    return url.rstrip("/") if "://" not in url or url.split("://", 1)[1].strip("/") else url


EVENT_LOGS = Validator("folder or fsspec URL of event logs", event_log_location)

#: The databases Sparkscope runs on: the backend part of a SQLAlchemy URL's scheme (``postgres``
#: is the short form Heroku and others print; sparkscope.db connects every form with psycopg 3).
DATABASE_BACKENDS = ("postgresql", "postgres", "sqlite")


def _database_url(value: Any) -> str:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    text = string(2000).parse(value)
    try:
        url = make_url(text)
        port = url.port
    except (ArgumentError, ValueError):
        # never echo the text: it may hold a password
        raise ValueError(
            "not a database URL (expected postgresql://user@host:5432/db or sqlite:///path)"
        ) from None
    backend = url.drivername.partition("+")[0]
    if backend not in DATABASE_BACKENDS:
        raise ValueError(
            f"unsupported database {backend!r}: expected a postgresql:// or sqlite:/// URL"
        )
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"bad port {port} (expected 1..65535)")
    return text


DATABASE_URL = Validator("postgresql:// or sqlite:/// SQLAlchemy URL", _database_url)


def parse_keys(
    raw: Mapping[str, Any], parsers: Mapping[str, Validator], path: str, file: str | None
) -> dict[str, Any]:
    """Each key of ``raw`` through its parser; an unknown key or bad value names ``path.key``."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        parser = parsers.get(key)
        if parser is None:
            raise ConfigError(file, f"{path}.{key}", f"unknown key (known: {', '.join(parsers)})")
        try:
            out[key] = parser(value)
        except ItemError as exc:
            raise ConfigError(file, f"{path}.{key}[{exc.index}]", str(exc)) from None
        except ValueError as exc:
            raise ConfigError(file, f"{path}.{key}", str(exc)) from None
    return out
