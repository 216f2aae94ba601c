"""The webhook payload, version 1 (docs/notifications.md documents every field): structured
data for machines, and the exact bytes sent and signed."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from sparkscope.notify.events import AlertEvent, Digest, Envelope, FoldedAlerts, Link
from sparkscope.notify.messages import document
from sparkscope.notify.text import safe_url
from sparkscope.present.display import severity_name

PAYLOAD_VERSION = 1


def _iso(t: dt.datetime | None) -> str | None:
    return None if t is None else t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _links(links: tuple[Link, ...]) -> list[dict[str, str]]:
    return [{"label": x.label, "url": u} for x in links if (u := safe_url(x.url))]


def _alert_json(e: AlertEvent, reason: str | None) -> dict[str, Any]:
    return {
        "occurrence_id": e.occurrence_id,
        "kind": e.kind,
        "severity": severity_name(e.severity),
        "severity_level": e.severity,
        "title": e.title,
        "reason": reason,
        "heuristic": e.heuristic,
        "occurred_at": _iso(e.occurred_at),
        "application": {
            "app_id": e.app_id,
            "attempt_id": e.attempt_id,
            "name": e.app_name,
            "user": e.user,
            "queue": e.queue,
            "server": e.server,
            "recurring_key": e.recurring_key,
        },
        "cost": {
            "core_hours": e.cost_core_hours,
            "wall_ms": e.wall_ms,
            "money": e.cost_money,
            "currency": e.currency if e.cost_money is not None else None,
            "baseline_core_hours": e.baseline_core_hours,
        },
        "duration_ms": e.duration_ms,
        "forecast": e.forecast,
        "cause": e.cause,
        "fix": e.fix,
        "settings": [{"key": k, "value": v} for k, v in e.settings],
        "links": _links(e.links),
    }


def _counts(counts: Mapping[int, int]) -> dict[str, int]:
    return {severity_name(lvl): int(counts.get(lvl, 0)) for lvl in (1, 2, 3, 4)}


def _digest_json(d: Digest) -> dict[str, Any]:
    pct = None
    if d.core_hours is not None and d.previous_core_hours:
        pct = round((d.core_hours - d.previous_core_hours) / d.previous_core_hours * 100, 2)
    return {
        "name": d.name,
        "scope": d.scope_text,
        "period": {
            "start": _iso(d.period_start),
            "end": _iso(d.period_end),
            "timezone": d.timezone,
        },
        "apps_total": d.apps_total,
        "counts": _counts(d.counts),
        "worst": [
            {
                "app_id": a.app_id,
                "name": a.name,
                "server": a.server,
                "user": a.user,
                "severity": severity_name(a.severity),
                "impact_core_hours": a.impact_core_hours,
                "impact_wall_ms": a.impact_wall_ms,
                "top_fix": a.top_fix,
                "settings": [{"key": k, "value": v} for k, v in a.settings],
                "url": safe_url(a.url),
            }
            for a in d.worst
        ],
        "regressions": [
            {
                "app_id": r.app_id,
                "name": r.name,
                "server": r.server,
                "duration_ms": r.duration_ms,
                "expected_ms": r.expected_ms,
                "causes": list(r.causes),
                "url": safe_url(r.url),
            }
            for r in d.regressions
        ],
        "failures": [
            {
                "app_id": x.app_id,
                "name": x.name,
                "server": x.server,
                "user": x.user,
                "root_cause": x.root_cause,
                "url": safe_url(x.url),
            }
            for x in d.failures
        ],
        "cost": {
            "core_hours": d.core_hours,
            "previous_core_hours": d.previous_core_hours,
            "change_pct": pct,
            "money": d.money,
            "previous_money": d.previous_money,
            "currency": d.currency if d.money is not None else None,
        },
        "links": _links(d.links),
    }


def webhook_payload(env: Envelope) -> dict[str, Any]:
    """The documented JSON payload (WEBHOOK.md), version 1."""
    body = env.body
    out: dict[str, Any] = {
        "version": PAYLOAD_VERSION,
        "event_id": env.event_id,
        "type": "digest" if isinstance(body, Digest) else "alert",
        "created_at": _iso(env.created_at),
        "channel": env.channel,
        "rule": env.rule,
        "digest": env.digest,
        "summary": document(env).subject,
        "alert": None,
        "folded": None,
        "digest_report": None,
    }
    if isinstance(body, AlertEvent):
        out["alert"] = _alert_json(body, env.reason)
    elif isinstance(body, FoldedAlerts):
        out["folded"] = {
            "count": body.count,
            "max_per_hour": body.max_per_hour,
            "window_start": _iso(body.window_start),
            "window_end": _iso(body.window_end),
            "counts": _counts(body.by_severity),
            "top": [_alert_json(e, None) for e in body.top],
            "occurrence_ids": list(body.occurrence_ids),
        }
    else:
        out["digest_report"] = _digest_json(body)
    return out


def webhook_body(env: Envelope) -> bytes:
    """The exact bytes sent and signed: compact UTF-8 JSON with sorted keys, ``<``, ``>`` and ``&``
    written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (the same JSON, inert if pasted into HTML)."""
    text = json.dumps(
        webhook_payload(env), ensure_ascii=False, sort_keys=True, separators=(",", ":")
    )
    for char, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, escaped)
    return text.encode("utf-8")
