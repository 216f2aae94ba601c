"""Notifications: the rules, digests and mutes in force, each channel's health, what was sent
when, and a preview of a digest (any configured one, or any scope) as it stands now.

The page and ``GET /api/notifications`` only read: nothing here writes to the outbox or sends.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Blueprint, Response, abort, current_app, jsonify, render_template, request

from sparkscope.config.notifications.model import NotificationSettings, Scope
from sparkscope.notify.digests import DigestContext
from sparkscope.notify.events import Digest, Envelope
from sparkscope.notify.messages import Doc, digest_doc
from sparkscope.notify.outbox import ChannelHealth, OutboxRecord
from sparkscope.notify.payload import webhook_payload
from sparkscope.notify.periods import scope_text
from sparkscope.notify.status import (
    channel_target,
    digest_status,
    health,
    preview,
    recent,
    triggers_text,
)
from sparkscope.saferegex import compile_safe
from sparkscope.web.params import bad, parse_int, text
from sparkscope.web.request import get_session, prices

bp = Blueprint("notifications", __name__)


def _settings() -> NotificationSettings | None:
    settings: NotificationSettings | None = current_app.config["SPARKSCOPE"].notifications
    return settings


def _iso(t: dt.datetime | None) -> str | None:
    return None if t is None else t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _scope_param() -> Scope | None:
    """A scope from ?user=&queue=&server=&name= (None when none is given)."""
    values = {k: text(request.args, k, 255) for k in ("user", "queue", "server", "name")}
    if not any(values.values()):
        return None
    name = None
    if values["name"]:
        try:
            name = compile_safe(values["name"])
        except ValueError as exc:
            raise bad("name", str(exc)) from None

    def one(key: str) -> frozenset[str] | None:
        value = values[key]
        return frozenset({value}) if value else None

    return Scope(user=one("user"), queue=one("queue"), name=name, server=one("server"))


def _preview(settings: NotificationSettings, now: dt.datetime) -> tuple[Digest | None, str]:
    """The digest asked for (?digest=NAME or a scope), or the first configured one."""
    ctx = DigestContext(settings.base_url, prices().core_hour, prices().currency)
    wanted = text(request.args, "digest", 64)
    scope = _scope_param()
    session = get_session()
    if scope is not None:
        return preview(session, now, ctx, scope=scope), "custom"
    if wanted is not None:
        spec = next((d for d in settings.digests if d.name == wanted), None)
        if spec is None:
            abort(404, description=f"no digest named {wanted!r}")
        return preview(session, now, ctx, spec=spec), spec.name
    if settings.digests:
        return preview(session, now, ctx, spec=settings.digests[0]), settings.digests[0].name
    return preview(session, now, ctx, scope=Scope()), "custom"


def _health_json(h: ChannelHealth) -> dict[str, Any]:
    return {
        "failing": h.failing,
        "pending": h.pending,
        "failed": h.failed,
        "dead": h.dead,
        "last_error": h.last_error,
        "last_sent_at": _iso(h.last_sent_at),
    }


def _message_json(r: OutboxRecord) -> dict[str, Any]:
    return {
        "event_id": r.event_id,
        "kind": r.kind,
        "rule": r.rule,
        "digest": r.digest,
        "channel": r.channel,
        "state": r.state,
        "attempts": r.attempts,
        "summary": r.summary,
        "created_at": _iso(r.created_at),
        "next_attempt_at": _iso(r.next_attempt_at),
        "sent_at": _iso(r.sent_at),
        "last_error": r.last_error,
    }


def _state(limit: int) -> dict[str, Any] | None:
    settings = _settings()
    if settings is None:
        return None
    now = dt.datetime.now(dt.UTC)
    session = get_session()
    healths = {h.channel: h for h in health(session, [c.name for c in settings.channels])}
    return {
        "settings": settings,
        "now": now,
        "channels": [(c, channel_target(c), healths[c.name]) for c in settings.channels],
        "rules": [(r, scope_text(r.scope), triggers_text(r)) for r in settings.rules],
        "digests": [digest_status(session, d, now) for d in settings.digests],
        "messages": recent(session, limit),
    }


@bp.route("/notifications")
def notifications_page() -> str:
    """Rules, digests, mutes, channels and messages, and a digest preview."""
    state = _state(parse_int(request.args, "limit", 50, 1, 1000))
    doc: Doc | None = None
    chosen = None
    if state is not None:
        digest, chosen = _preview(state["settings"], state["now"])
        doc = digest_doc(digest) if digest is not None else None
    return render_template(
        "notifications/index.html",
        s=state,
        doc=doc,
        chosen=chosen,
        scope={k: request.args.get(k, "") for k in ("user", "queue", "server", "name")},
    )


@bp.route("/api/notifications")
def notifications_api() -> Response:
    """The same as JSON; the preview as the webhook payload's ``digest_report``."""
    state = _state(parse_int(request.args, "limit", 50, 1, 1000))
    if state is None:
        return jsonify(enabled=False, channels=[], rules=[], digests=[], mutes=[], messages=[])
    settings: NotificationSettings = state["settings"]
    digest, chosen = _preview(settings, state["now"])
    report = None
    if digest is not None:
        report = webhook_payload(Envelope("preview", state["now"], "-", digest))["digest_report"]
    return jsonify(
        enabled=True,
        base_url=settings.base_url,
        channels=[
            {"name": c.name, "type": c.type, "target": target, **_health_json(h)}
            for c, target, h in state["channels"]
        ],
        rules=[
            {
                "name": r.name,
                "scope": scope,
                "triggers": triggers,
                "channels": list(r.channels),
                "max_per_hour": r.max_per_hour,
            }
            for r, scope, triggers in state["rules"]
        ],
        digests=[
            {
                "name": d.spec.name,
                "scope": d.scope,
                "schedule": d.schedule,
                "channels": list(d.spec.channels),
                "next_at": _iso(d.next_at),
                "last_period_start": _iso(d.last_period_start),
            }
            for d in state["digests"]
        ],
        mutes=[
            {
                "label": m.label,
                "name": m.name.pattern if m.name else None,
                "heuristics": sorted(m.heuristics) if m.heuristics else None,
                "app_id": sorted(m.app_id) if m.app_id else None,
                "server": sorted(m.server) if m.server else None,
                "until": _iso(m.until),
                "in_force": m.until > state["now"],
                "reason": m.reason,
            }
            for m in settings.mutes
        ],
        messages=[_message_json(r) for r in state["messages"]],
        preview={"digest": chosen, "report": report},
    )
