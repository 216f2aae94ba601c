"""Strict value parsers for the ``notifications:`` section.

Each parser returns the value or raises ValueError saying in one line what was expected (the
loader turns it into a :class:`~sparkscope.config.parsing.ConfigError` naming file and key).
Values that may be secrets are never echoed in an error.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from heuristics.thresholds import LEVELS
from sparkscope.config.parsing import ConfigError

Parser = Callable[[Any], Any]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def boolean(value: Any) -> bool:
    """true or false (YAML booleans only)."""
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {_show(value)}")


def integer_in(lo: int, hi: int | None = None) -> Parser:
    """An integer lo..hi (not a boolean)."""
    span = f"{lo}..{hi}" if hi is not None else f">= {lo}"

    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer {span}, got {_show(value)}")
        if value < lo or (hi is not None and value > hi):
            raise ValueError(f"expected an integer {span}, got {value}")
        return value

    return parse


def positive_number(value: Any) -> float:
    """A finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"expected a number > 0, got {_show(value)}")
    if value != value or value == float("inf"):
        raise ValueError("expected a finite number")
    return float(value)


def string(value: Any) -> str:
    """A non-empty single-line string."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {_show(value)}")
    if any(c in value for c in "\r\n\x00"):
        raise ValueError("expected a single line (no CR, LF or NUL)")
    return value


def name(value: Any) -> str:
    """A short identifier used in idempotency keys and logs."""
    text = string(value)
    if not NAME_RE.match(text):
        raise ValueError(
            f"expected a name of letters, digits, '_', '.', '-' (at most 64), got {_show(value)}"
        )
    return text


def env_name(value: Any) -> str:
    """The NAME of an environment variable; the value of a bad one is never shown (it may be the
    secret itself, pasted in by mistake)."""
    if not isinstance(value, str) or not ENV_NAME_RE.match(value):
        raise ValueError(
            "expected the name of an environment variable (letters, digits, '_'); the secret "
            "itself never goes in the file"
        )
    return value


def http_url(value: Any) -> str:
    """An http(s) URL without a trailing slash (a base for links)."""
    return endpoint_url(value).rstrip("/")


def endpoint_url(value: Any) -> str:
    """An http(s) URL, kept exactly as written (a receiver may tell /hook from /hook/)."""
    url = string(value)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected an http(s):// URL, got {_show(value)}")
    return url


def duration_ms(value: Any) -> int:
    """``90s``, ``30m``, ``2h``, ``1d`` or ``45000ms`` -> milliseconds (> 0)."""
    m = _DURATION.match(value) if isinstance(value, str) else None
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"expected a duration such as 90s, 30m, 2h, got {_show(value)}")
    return int(float(m.group(1)) * _UNIT_MS[m.group(2).lower()])


def clock_time(value: Any) -> dt.time:
    """``"07:00"`` (24-hour, quoted: YAML reads an unquoted 12:30 as the number 750)."""
    if isinstance(value, str) and (m := _TIME.match(value.strip())):
        return dt.time(int(m.group(1)), int(m.group(2)))
    hint = " (quote it: YAML reads unquoted 12:30 as a number)" if isinstance(value, int) else ""
    raise ValueError(f'expected a time "HH:MM", got {_show(value)}{hint}')


def timezone(value: Any) -> ZoneInfo:
    """An IANA time zone name."""
    text = string(value)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {_show(value)} (use an IANA name such as Europe/Prague or UTC)"
        ) from None


def weekday(value: Any) -> int:
    """A weekday name -> 0 (Monday) .. 6."""
    if isinstance(value, str) and value.strip().lower() in WEEKDAYS:
        return WEEKDAYS.index(value.strip().lower())
    raise ValueError(f"expected a weekday ({', '.join(WEEKDAYS)}), got {_show(value)}")


def severity(value: Any) -> int:
    """A severity name from low to critical -> its level (1..4)."""
    if isinstance(value, str) and value.strip().lower() in LEVELS:
        return LEVELS.index(value.strip().lower()) + 1
    raise ValueError(f"expected one of {', '.join(LEVELS)}, got {_show(value)}")


def one_of(*choices: str) -> Parser:
    """One of the given words."""

    def parse(value: Any) -> str:
        if value in choices:
            return str(value)
        raise ValueError(f"expected one of {', '.join(choices)}, got {_show(value)}")

    return parse


def string_set(value: Any) -> frozenset[str]:
    """A string or a non-empty list of strings."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ValueError(f"expected a string or a non-empty list of strings, got {_show(value)}")
    return frozenset(string(v) for v in items)


def optional(parser: Parser) -> Parser:
    """``null`` means "not set" (for scope keys: any)."""
    return lambda value: None if value is None else parser(value)


def until(value: Any, tz: dt.tzinfo) -> dt.datetime:
    """A date (muted through its end in ``tz``) or an ISO date-time with an offset -> UTC."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = (
                dt.date.fromisoformat(text)
                if len(text) == 10
                else dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            )
        except ValueError:
            raise ValueError(f"expected a date YYYY-MM-DD, got {_show(text)}") from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise ValueError("a date-time needs an offset (e.g. 2027-01-31T18:00:00+01:00)")
        return value.astimezone(dt.UTC)
    if isinstance(value, dt.date):
        next_day = dt.datetime.combine(value + dt.timedelta(days=1), dt.time(), tzinfo=tz)
        return next_day.astimezone(dt.UTC)
    raise ValueError(f"expected a date YYYY-MM-DD, got {_show(value)}")


def mapping(raw: Any, path: str, file: str | None, what: str = "a mapping") -> Mapping[str, Any]:
    """``raw`` if it is a mapping, else a ConfigError naming ``path``."""
    if not isinstance(raw, Mapping):
        raise ConfigError(file, path, f"expected {what}")
    return raw


def items(raw: Any, path: str, file: str | None) -> list[Any]:
    """A list (None: empty), else a ConfigError naming ``path``."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(file, path, "expected a list")
    return raw


def parse_keys(
    raw: Mapping[str, Any],
    parsers: Mapping[str, Parser],
    path: str,
    file: str | None,
    required: tuple[str, ...] = (),
    hints: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Each key through its parser; unknown or missing keys and bad values name ``path.key``."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        parser = parsers.get(key)
        if parser is None:
            hint = (hints or {}).get(str(key), "")
            known = ", ".join(parsers)
            raise ConfigError(file, f"{path}.{key}", f"unknown key{hint} (known: {known})")
        try:
            out[key] = parser(value)
        except ValueError as exc:
            raise ConfigError(file, f"{path}.{key}", str(exc)) from None
    for key in required:
        if key not in out or out[key] is None:
            raise ConfigError(file, f"{path}.{key}", "missing")
    return out
