"""Senders: SMTP, Slack incoming webhooks, signed JSON webhooks; each send is one attempt.

:func:`send` renders an outbox message for its channel and delivers it once, returning an
:class:`SendOutcome`: ``sent``; ``retryable`` (connection refused or reset, timeout, 5xx, 408, 429
with its Retry-After, an SMTP 4xx, a secret not set yet); ``permanent`` (another 4xx, a
redirect, an SMTP 5xx, authentication failed, every recipient refused, TLS verification failed).
Nothing raises for a delivery problem, and no detail text holds a secret
(:mod:`sparkscope.notify.masking`). E-mail goes through :mod:`sparkscope.notify.smtp`.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import hashlib
import hmac
import json
import logging
from collections.abc import Mapping

import requests

from sparkscope.config.notifications.model import (
    Channel,
    EmailChannel,
    MissingSecret,
    SlackChannel,
    WebhookChannel,
)
from sparkscope.notify import httpsend, masking
from sparkscope.notify.events import Envelope
from sparkscope.notify.messages import document
from sparkscope.notify.outbox import SendOutcome
from sparkscope.notify.payload import webhook_body
from sparkscope.notify.render import email_message, slack_payload
from sparkscope.notify.smtp import send_email
from sparkscope.notify.text import one_line

log = logging.getLogger("sparkscope.notify.channels")

SIGNATURE_HEADER = "X-Sparkscope-Signature"
TIMESTAMP_HEADER = "X-Sparkscope-Timestamp"
EVENT_ID_HEADER = "X-Sparkscope-Event-Id"
RETRYABLE_HTTP = frozenset({408, 425, 429})
MAX_RETRY_AFTER_S = 24 * 3600.0


# ------------------------------------------------------------------------------------ signing


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 with the secret over ``"<timestamp>." + body``."""
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(
    secret: str, timestamp: str, signature: str, body: bytes, now: float, tolerance_s: float = 300
) -> bool:
    """What a receiver does: recompute, compare in constant time, refuse an old timestamp."""
    if not timestamp.isdigit() or abs(now - int(timestamp)) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, int(timestamp), body), signature)


# --------------------------------------------------------------------------------------- HTTP


def retry_after(value: str | None, now: dt.datetime) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP-date), capped at a day."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return min(float(text), MAX_RETRY_AFTER_S)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return min(max(0.0, (when - now).total_seconds()), MAX_RETRY_AFTER_S)


def _reason(exc: BaseException) -> str:
    """The root cause of a connection error in a few words, from the exception chain's types
    and OS error texts only (never its message, which holds the URL)."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        cur = todo.pop()
        if any(cur is x for x in seen):
            continue
        seen.append(cur)
        links = [getattr(cur, "reason", None), cur.__cause__, cur.__context__, *cur.args[:1]]
        todo.extend(x for x in links if isinstance(x, BaseException))
    for cur in seen:
        if isinstance(cur, OSError) and cur.strerror:
            return f"{cur.strerror} ({type(cur).__name__})"
    return type(seen[-1]).__name__


def _http_outcome(
    answer: httpsend.Answer, where: str, secrets: set[str], now: dt.datetime
) -> SendOutcome:
    status = answer.status
    text = one_line(masking.redact(answer.body[:300].decode("utf-8", "replace"), secrets), 200)
    said = f": {text}" if text and text != "–" else ""
    if 200 <= status < 300:
        return SendOutcome("sent", f"HTTP {status} from {where}")
    if 300 <= status < 400:
        return SendOutcome("permanent", f"HTTP {status} from {where}: redirects are not followed")
    wait = retry_after(answer.headers.get("Retry-After"), now)
    if status >= 500 or status in RETRYABLE_HTTP:
        return SendOutcome("retryable", f"HTTP {status} from {where}{said}", wait)
    return SendOutcome("permanent", f"HTTP {status} from {where}{said}")


def _post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    channel: SlackChannel | WebhookChannel,
    secrets: set[str],
    now: dt.datetime,
) -> SendOutcome:
    where = masking.shown_url(url)
    verify_tls: bool | str = True
    if isinstance(channel, WebhookChannel):
        verify_tls = (
            channel.ca_bundle if channel.verify_tls and channel.ca_bundle else channel.verify_tls
        )
    try:
        answer = httpsend.post(
            url,
            body,
            headers,
            connect_timeout_s=channel.connect_timeout_s,
            read_timeout_s=channel.read_timeout_s,
            deadline_s=channel.deadline_s,
            verify=verify_tls,
        )
    except httpsend.DeadlinePassed:
        return SendOutcome(
            "retryable", f"{where}: no complete answer within {channel.deadline_s:g} s"
        )
    except requests.exceptions.ConnectTimeout:
        return SendOutcome(
            "retryable", f"{where}: no connection within {channel.connect_timeout_s:g} s"
        )
    except requests.exceptions.ReadTimeout:
        return SendOutcome(
            "retryable", f"{where}: no answer within {channel.read_timeout_s:g} s (read timeout)"
        )
    except requests.exceptions.SSLError as exc:
        verify_failed = "CERTIFICATE_VERIFY_FAILED" in repr(exc.args)
        kind = "permanent" if verify_failed else "retryable"
        what = "certificate verification failed" if verify_failed else _reason(exc)
        return SendOutcome(kind, f"{where}: TLS: {what}")
    except requests.exceptions.ConnectionError as exc:
        return SendOutcome("retryable", f"{where}: cannot connect: {_reason(exc)}")
    except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema, ValueError):
        return SendOutcome("permanent", f"{where}: not a valid http(s) URL")
    except requests.exceptions.RequestException as exc:
        return SendOutcome("retryable", f"{where}: request failed: {type(exc).__name__}")
    return _http_outcome(answer, where, secrets, now)


def send_slack(
    channel: SlackChannel, payload: dict, environ: Mapping[str, str], now: dt.datetime
) -> SendOutcome:
    url = channel.webhook_url.value(environ)
    secrets = masking.variants(url)
    masking.register(secrets)
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json; charset=utf-8"}
    return _post(url, body, headers, channel, secrets, now)


def send_webhook(
    channel: WebhookChannel,
    body: bytes,
    event_id: str,
    environ: Mapping[str, str],
    now: dt.datetime,
) -> SendOutcome:
    secret = channel.secret.value(environ)
    url = channel.url_env.value(environ) if channel.url_env else channel.url
    assert url is not None
    secrets = masking.variants(secret) | (masking.variants(url) if channel.url_env else set())
    masking.register(secrets)
    timestamp = int(now.timestamp())
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        EVENT_ID_HEADER: event_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }
    return _post(url, body, headers, channel, secrets, now)


# ------------------------------------------------------------------------------------ dispatch


def send(
    channel: Channel,
    env: Envelope,
    environ: Mapping[str, str],
    now: dt.datetime | None = None,
) -> SendOutcome:
    """Render ``env`` for ``channel`` and deliver it once. Never raises for delivery problems."""
    now = now or dt.datetime.now(dt.UTC)
    try:
        if isinstance(channel, EmailChannel):
            msg = email_message(
                document(env),
                from_addr=channel.from_addr,
                to=channel.to,
                event_id=env.event_id,
                date=now,
            )
            return send_email(channel, msg, environ)
        if isinstance(channel, SlackChannel):
            return send_slack(channel, slack_payload(document(env)), environ, now)
        return send_webhook(channel, webhook_body(env), env.event_id, environ, now)
    except MissingSecret as exc:
        return SendOutcome("retryable", f"channel {channel.name}: {exc}")
