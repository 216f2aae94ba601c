"""The application listing: one entry per application, reduced to its latest attempt."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fetcher.parse.fields import (
    ParseError,
    _int,
    _need_dict,
    _need_list,
    _opt_int,
    _str,
    parse_time_ms,
)


@dataclass(frozen=True)
class AppEntry:
    """One application as listed, reduced to its latest attempt."""

    app_id: str
    attempt_id: str | None
    name: str
    user: str | None
    start_time_ms: int | None
    end_time_ms: int | None
    duration_ms: int | None
    last_updated_ms: int | None
    completed: bool
    spark_version: str | None
    raw: dict[str, Any] = field(compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str]:
        """Natural key within one server: (app id, attempt id or '')."""
        return (self.app_id, self.attempt_id or "")


def _attempt_start(attempt: Mapping[str, Any]) -> int:
    return _int(attempt.get("startTimeEpoch")) or (parse_time_ms(attempt.get("startTime")) or 0)


def parse_app_entry(item: Any) -> AppEntry:
    """One listing entry (or ``/applications/{id}``) -> its latest attempt."""
    item = _need_dict(item, "application")
    app_id = item.get("id")
    if not isinstance(app_id, str) or not app_id:
        raise ParseError("application: missing id")
    attempts = [a for a in item.get("attempts") or [] if isinstance(a, dict)]
    latest = max(attempts, key=_attempt_start) if attempts else {}
    start = _int(latest.get("startTimeEpoch")) or parse_time_ms(latest.get("startTime"))
    end = _int(latest.get("endTimeEpoch")) or parse_time_ms(latest.get("endTime"))
    updated = _int(latest.get("lastUpdatedEpoch")) or parse_time_ms(latest.get("lastUpdated"))
    duration = _opt_int(latest.get("duration"))
    if duration is None and start and end:
        duration = end - start
    attempt_id = latest.get("attemptId")
    return AppEntry(
        app_id=app_id[:255],
        attempt_id=str(attempt_id)[:64] if attempt_id not in (None, "") else None,
        name=_str(item.get("name"), 1000) or "",
        user=_str(latest.get("sparkUser"), 255),
        start_time_ms=start or None,
        end_time_ms=end or None,
        duration_ms=duration,
        last_updated_ms=updated or None,
        completed=bool(latest.get("completed", False)),
        spark_version=_str(latest.get("appSparkVersion"), 64),
        raw={"id": app_id, "name": item.get("name"), "attempt": latest},
    )


def parse_listing(data: Any) -> list[AppEntry]:
    """The ``/applications`` listing -> entries (bad entries are skipped, not fatal)."""
    entries = []
    for item in _need_list(data, "applications"):
        try:
            entries.append(parse_app_entry(item))
        except ParseError:
            continue
    return entries
