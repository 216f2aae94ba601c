"""``/applications``: the listing of several replayed logs, filtered as the SHS filters it."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from fetcher.eventlog.app import ReplayedApp
from fetcher.eventlog.params import BadRequest


def listing(
    apps: list[ReplayedApp], params: list[tuple[str, str]] | None = None
) -> list[dict[str, Any]]:
    """``/applications``: attempts grouped by app id, newest end time first, SHS filters applied.

    Filters: ``status`` (completed/running), ``minDate``/``maxDate`` (start),
    ``minEndDate``/``maxEndDate`` (end), ``limit``.
    """
    groups: dict[str, list[ReplayedApp]] = {}
    for a in apps:
        groups.setdefault(a.app_id, []).append(a)
    entries: list[dict[str, Any]] = []
    for app_id, group in groups.items():
        group.sort(key=lambda a: a.status.app.start_time or 0, reverse=True)
        entries.append(
            {
                "id": app_id,
                "name": group[0].status.app.name,
                "attempts": [a.attempt_info() for a in group],
            }
        )
    entries.sort(key=lambda e: (e["attempts"][0]["endTimeEpoch"], e["id"]), reverse=True)
    p = params or []
    status = [v.lower() for k, v in p if k == "status"]
    out = []
    bounds = {
        k: _parse_date(v) for k, v in p if k in ("minDate", "maxDate", "minEndDate", "maxEndDate")
    }
    for e in entries:
        atts = e["attempts"]
        if status:
            want_completed = "completed" in status
            want_running = "running" in status
            if not (
                (want_completed and all(a["completed"] for a in atts))
                or (want_running and not all(a["completed"] for a in atts))
            ):
                continue
        ok = any(
            a["startTimeEpoch"] >= bounds.get("minDate", -(2**62))
            and a["startTimeEpoch"] <= bounds.get("maxDate", 2**62)
            and (
                a["endTimeEpoch"] >= bounds.get("minEndDate", -(2**62))
                or "minEndDate" not in bounds
            )
            and (a["endTimeEpoch"] <= bounds.get("maxEndDate", 2**62) or "maxEndDate" not in bounds)
            for a in atts
        )
        if ok:
            out.append(e)
    limit = dict(p).get("limit")
    return out[: int(limit)] if limit is not None else out


def _parse_date(text: str) -> int:
    from datetime import datetime

    text = text.strip()
    for fmt in ("%Y-%m-%dT%H:%M:%S.%fGMT", "%Y-%m-%d"):
        try:
            dt = datetime.strptime(text, fmt).replace(tzinfo=UTC)
            return int(dt.timestamp() * 1000)
        except ValueError:
            continue
    raise BadRequest(f"Couldn't parse date: {text}")
