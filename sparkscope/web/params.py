"""Strict parsing of query parameters: a bad value raises BadRequest naming the parameter."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping

from werkzeug.exceptions import BadRequest

from sparkscope.present.catalogs import SORT_KEYS
from sparkscope.present.display import SEVERITY_NAMES, severity_level
from sparkscope.queries.search import COUNT_CAP, PAGE_SIZE, SearchFilters

# ASCII digits only: str.isdigit() and int() also take '²', '①' or '٣', which no URL means.
_ASCII_INT = re.compile(r"[0-9]{1,18}")

#: Quick time ranges of the search page, by the value of its `since` parameter.
#: Prediction verdicts the search can filter on (`verdict=regression`).
VERDICTS = ("regression", "improvement", "normal", "insufficient_history")
SINCE_MS = {"1h": 3_600_000, "1d": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000}

#: How search's `severity` reads: the worst severity at least it (the default) or exactly it
#: (`severity_mode=exactly`, which also takes `severity=unknown`: not analysed yet).
SEVERITY_MODES = ("at_least", "exactly")

SEARCH_PARAMS = (
    "app_id",
    "name",
    "user",
    "queue",
    "server",
    "start_from",
    "start_to",
    "end_from",
    "end_to",
    "since",
    "severity",
    "severity_mode",
    "heuristic",
    "verdict",
    "sort",
    "order",
    "page",
)


def bad(param: str, message: str) -> BadRequest:
    """A 400 whose message names the parameter."""
    return BadRequest(f"invalid parameter {param!r}: {message}")


def text(args: Mapping[str, str], name: str, max_len: int = 1000) -> str | None:
    """A trimmed text parameter, None when empty."""
    value = (args.get(name) or "").strip()
    if len(value) > max_len:
        raise bad(name, f"longer than {max_len} characters")
    if "\x00" in value:
        # PostgreSQL cannot store or compare a NUL character; no stored value holds one.
        raise bad(name, "contains a NUL character")
    return value or None


def parse_time_ms(args: Mapping[str, str], name: str, end_of_day: bool = False) -> int | None:
    """An ISO date or date-time (UTC unless an offset is given) as epoch ms."""
    value = text(args, name, 64)
    if value is None:
        return None
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value)
            stamp = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
            if end_of_day:
                stamp += dt.timedelta(days=1, milliseconds=-1)
        else:
            stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if stamp.tzinfo is None:
                stamp = stamp.replace(tzinfo=dt.UTC)
    except ValueError:
        raise bad(name, f"{value!r} is not a date (YYYY-MM-DD) or date-time") from None
    return int(stamp.timestamp() * 1000)


def parse_int(args: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    """An integer within [lo, hi]."""
    value = text(args, name, 20)
    if value is None:
        return default
    if not _ASCII_INT.fullmatch(value):
        raise bad(name, f"{value!r} is not a whole number (digits 0-9)")
    number = int(value)
    if not lo <= number <= hi:
        raise bad(name, f"must be between {lo} and {hi}")
    return number


def parse_severity(args: Mapping[str, str], name: str = "severity") -> int | None:
    """A severity by name (none..critical) or level (0-4)."""
    value = text(args, name, 20)
    if value is None:
        return None
    level = severity_level(value)
    if level is not None:
        return level
    if _ASCII_INT.fullmatch(value) and int(value) < len(SEVERITY_NAMES):
        return int(value)
    raise bad(name, f"{value!r} is not one of {', '.join(SEVERITY_NAMES)}")


def parse_choice(args: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    """One of a fixed set of words."""
    value = text(args, name, 64)
    if value is None:
        return default
    if value not in choices:
        raise bad(name, f"{value!r} is not one of {', '.join(choices)}")
    return value


def parse_search(
    args: Mapping[str, str],
    now_ms: int,
    heuristics: tuple[str, ...] | None = None,
    per_page: int = PAGE_SIZE,
) -> SearchFilters:
    """Search filters from the query string of /search or /api/apps (pages of ``per_page``: a
    page is one of those of the matches search counts, `COUNT_CAP`; a deeper one would make the
    database skip millions of rows, and no link leads there)."""
    start_from = parse_time_ms(args, "start_from")
    since = text(args, "since", 8)
    if since is not None:
        if since not in SINCE_MS:
            raise bad("since", f"{since!r} is not one of {', '.join(SINCE_MS)}")
        start_from = now_ms - SINCE_MS[since]
    exactly = parse_choice(args, "severity_mode", SEVERITY_MODES, "at_least") == "exactly"
    if exactly and text(args, "severity", 20) == "unknown":
        severity: int | None = -1  # not analysed yet
    else:
        severity = parse_severity(args)
    heuristic = text(args, "heuristic", 64)
    if heuristic is not None and heuristics is not None and heuristic not in heuristics:
        raise bad("heuristic", f"{heuristic!r} is not a known heuristic")
    return SearchFilters(
        app_id=text(args, "app_id", 255),
        name=text(args, "name"),
        user=text(args, "user", 255),
        queue=text(args, "queue", 255),
        server=text(args, "server", 200),
        start_from_ms=start_from,
        start_to_ms=parse_time_ms(args, "start_to", end_of_day=True),
        end_from_ms=parse_time_ms(args, "end_from"),
        end_to_ms=parse_time_ms(args, "end_to", end_of_day=True),
        min_severity=None if exactly else severity,
        exact_severity=severity if exactly else None,
        heuristic=heuristic,
        verdict=parse_choice(args, "verdict", VERDICTS, "") or None,
        sort=parse_choice(args, "sort", SORT_KEYS, "start"),
        descending=parse_choice(args, "order", ("desc", "asc"), "desc") == "desc",
        page=parse_int(args, "page", 1, 1, COUNT_CAP // max(1, per_page) + 1),
    )
