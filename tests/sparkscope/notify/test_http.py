"""Slack and webhook senders against real HTTP receivers on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import time

import pytest

from sparkscope.config.notifications.model import Delivery, SecretRef, SlackChannel, WebhookChannel
from sparkscope.notify import outbox
from sparkscope.notify.channels import (
    EVENT_ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    retry_after,
    send,
    verify,
)
from sparkscope.notify.messages import document
from sparkscope.notify.render import slack_payload
from tests.sparkscope.notify.conftest import Receiver, Reply
from tests.sparkscope.notify.samples import envelope, hostile

TOKEN = "T0001/B0002/XyZsecretTOKEN42"
HOOK_SECRET = "whsec-0123456789abcdef"
NOW = dt.datetime(2026, 3, 29, 5, 0, tzinfo=dt.UTC)


def slack(r: Receiver, **kw: object) -> tuple[SlackChannel, dict[str, str]]:
    values: dict = dict(name="slack", webhook_url=SecretRef("SLACK_URL"), connect_timeout_s=2.0,
                        read_timeout_s=1.0, deadline_s=3.0)  # fmt: skip
    values.update(kw)
    return SlackChannel(**values), {"SLACK_URL": r.url(f"/services/{TOKEN}")}


def hook(r: Receiver, **kw: object) -> tuple[WebhookChannel, dict[str, str]]:
    values: dict = dict(name="hook", secret=SecretRef("HOOK_SECRET"), url=r.url("/spark"),
                        connect_timeout_s=2.0, read_timeout_s=1.0, deadline_s=3.0)  # fmt: skip
    values.update(kw)
    return WebhookChannel(**values), {"HOOK_SECRET": HOOK_SECRET}


def assert_no_secrets(*texts: str) -> None:
    for text in texts:
        for secret in (TOKEN, "XyZsecretTOKEN42", HOOK_SECRET):
            assert secret not in text, text


def test_slack_posts_the_blocks(receiver: Receiver) -> None:
    ch, env = slack(receiver)
    e = envelope(hostile(), channel="slack")
    outcome = send(ch, e, env)
    assert (outcome.status, outcome.detail) == (
        "sent",
        f"HTTP 200 from http://127.0.0.1:{receiver.port}/…",
    )
    (req,) = receiver.received
    assert req.path == f"/services/{TOKEN}"
    assert req.headers["Content-Type"] == "application/json; charset=utf-8"
    assert json.loads(req.body) == slack_payload(document(e))


def test_webhook_is_signed_and_the_receiver_verifies_it(receiver: Receiver) -> None:
    ch, env = hook(receiver)
    e = envelope(hostile(), channel="hook")
    assert send(ch, e, env, now=NOW).ok
    (req,) = receiver.received
    body = req.body
    assert req.headers[EVENT_ID_HEADER] == e.event_id == json.loads(body)["event_id"]
    assert req.headers[TIMESTAMP_HEADER] == str(int(NOW.timestamp()))
    assert req.headers[SIGNATURE_HEADER].startswith("sha256=")
    ts, sig = req.headers[TIMESTAMP_HEADER], req.headers[SIGNATURE_HEADER]
    assert verify(HOOK_SECRET, ts, sig, body, now=NOW.timestamp())
    assert not verify(HOOK_SECRET, ts, sig, body + b" ", now=NOW.timestamp())  # body changed
    assert not verify("other-secret", ts, sig, body, now=NOW.timestamp())
    assert not verify(HOOK_SECRET, ts, sig, body, now=NOW.timestamp() + 3600)  # replayed later
    assert HOOK_SECRET not in str(req.headers) and HOOK_SECRET.encode() not in body


def test_500_then_recovery_through_the_outbox(receiver: Receiver) -> None:
    receiver.replies = [Reply(500, b"upstream broke"), Reply(200, b"ok")]
    ch, env = hook(receiver)
    policy = Delivery(backoff_base_s=60)
    rec = outbox.OutboxRecord("k", "alert", "hook", {}, "s", NOW, NOW, state="sending", attempts=1)
    first = send(ch, envelope(channel="hook"), env)
    assert (first.status, first.detail) == (
        "retryable", f"HTTP 500 from http://127.0.0.1:{receiver.port}/…: upstream broke")  # fmt: skip
    failed = outbox.settle(rec, first, NOW, policy, 0.5)
    assert failed.state == outbox.FAILED and failed.next_attempt_at == NOW + dt.timedelta(
        seconds=45
    )
    second = send(ch, envelope(channel="hook"), env)
    assert outbox.settle(rec, second, NOW, policy, 0.5).state == outbox.SENT
    a, b = receiver.received
    assert a.headers[EVENT_ID_HEADER] == b.headers[EVENT_ID_HEADER]  # the same event id


def test_a_timeout_then_recovery_through_the_outbox(receiver: Receiver) -> None:
    """A receiver that hangs is retried after the backoff, and the retry that goes through
    carries the same event id and a body signed anew."""
    receiver.replies = [Reply(delay_s=2.0), Reply(200, b"ok")]
    ch, env = hook(receiver, read_timeout_s=0.5)
    policy = Delivery(backoff_base_s=60)
    rec = outbox.OutboxRecord("k", "alert", "hook", {}, "s", NOW, NOW, state="sending", attempts=1)
    first = send(ch, envelope(channel="hook"), env)
    assert (first.status, first.detail) == (
        "retryable", f"http://127.0.0.1:{receiver.port}/…: no answer within 0.5 s (read timeout)")  # fmt: skip
    failed = outbox.settle(rec, first, NOW, policy, 0.0)
    assert failed.state == outbox.FAILED and failed.last_error == first.detail
    assert failed.next_attempt_at == NOW + dt.timedelta(seconds=30)
    retry = dataclasses.replace(failed, state=outbox.SENDING, attempts=2)
    second = send(ch, envelope(channel="hook"), env, now=NOW + dt.timedelta(seconds=31))
    done = outbox.settle(retry, second, NOW + dt.timedelta(seconds=31), policy, 0.0)
    assert (done.state, done.last_error) == (outbox.SENT, None)
    a, b = receiver.received
    assert a.headers[EVENT_ID_HEADER] == b.headers[EVENT_ID_HEADER] and a.body == b.body
    assert a.headers[SIGNATURE_HEADER] != b.headers[SIGNATURE_HEADER]  # a new timestamp


def test_a_slow_receiver_times_out_as_retryable(receiver: Receiver) -> None:
    receiver.replies = [Reply(delay_s=2.5)]
    ch, env = slack(receiver, read_timeout_s=0.5)
    start = time.monotonic()
    outcome = send(ch, envelope(), env)
    assert time.monotonic() - start < 2.0
    assert (outcome.status, outcome.detail) == (
        "retryable", f"http://127.0.0.1:{receiver.port}/…: no answer within 0.5 s (read timeout)")  # fmt: skip


def test_a_dripping_receiver_hits_the_deadline(receiver: Receiver) -> None:
    receiver.replies = [Reply(drip_s=0.3)]  # every byte within the read timeout, never done
    ch, env = hook(receiver, read_timeout_s=1.0, deadline_s=1.5)
    start = time.monotonic()
    outcome = send(ch, envelope(), env)
    assert time.monotonic() - start < 3.0
    assert (outcome.status, outcome.detail) == (
        "retryable", f"http://127.0.0.1:{receiver.port}/…: no complete answer within 1.5 s")  # fmt: skip


def test_429_honours_retry_after(receiver: Receiver) -> None:
    receiver.replies = [Reply(429, b"rate_limited", {"Retry-After": "600"})]
    ch, env = slack(receiver)
    outcome = send(ch, envelope(), env)
    assert (outcome.status, outcome.retry_after_s) == ("retryable", 600.0)
    rec = outbox.OutboxRecord("k", "alert", "slack", {}, "s", NOW, NOW, state="sending", attempts=1)
    rec = outbox.settle(rec, outcome, NOW, Delivery(), 0.0)
    assert rec.next_attempt_at == NOW + dt.timedelta(seconds=600)  # not the 30 s backoff
    assert retry_after("Sun, 29 Mar 2026 05:02:00 GMT", NOW) == 120.0
    assert retry_after("999999", NOW) == 86400.0 and retry_after("soon", NOW) is None


@pytest.mark.parametrize(
    ("reply", "status", "detail"),
    [
        (Reply(404, b"no_service"), "permanent", "HTTP 404 from {w}: no_service"),
        (Reply(403, b"invalid_token"), "permanent", "HTTP 403 from {w}: invalid_token"),
        (Reply(410, b"channel_is_archived"), "permanent", "HTTP 410 from {w}: channel_is_archived"),
        (Reply(503, b""), "retryable", "HTTP 503 from {w}"),
        (Reply(302, b"", {"Location": "https://elsewhere.example/"}), "permanent",
         "HTTP 302 from {w}: redirects are not followed"),
    ],
)  # fmt: skip
def test_answers_are_classified(receiver: Receiver, reply: Reply, status: str, detail: str) -> None:
    receiver.replies = [reply]
    ch, env = slack(receiver)
    outcome = send(ch, envelope(), env)
    where = f"http://127.0.0.1:{receiver.port}/…"
    assert (outcome.status, outcome.detail) == (status, detail.format(w=where))
    assert len(receiver.received) == 1  # one attempt, no redirect followed, no retry


def test_closed_port_is_retryable(closed_port: int) -> None:
    ch = SlackChannel("slack", SecretRef("SLACK_URL"), 1.0, 1.0, 2.0)
    env = {"SLACK_URL": f"http://127.0.0.1:{closed_port}/services/{TOKEN}"}
    outcome = send(ch, envelope(), env)
    assert (outcome.status, outcome.detail) == (
        "retryable",
        f"http://127.0.0.1:{closed_port}/…: cannot connect: Connection refused (ConnectionRefusedError)",
    )


def test_an_echoing_receiver_cannot_leak_the_url(receiver: Receiver) -> None:
    receiver.replies = [Reply(400, f"bad request to /services/{TOKEN}".encode())]
    ch, env = slack(receiver)
    outcome = send(ch, envelope(), env)
    assert outcome.detail == f"HTTP 400 from http://127.0.0.1:{receiver.port}/…: bad request to ***"


def test_missing_variables_are_errors_not_crashes(receiver: Receiver) -> None:
    ch, _ = slack(receiver)
    assert (
        send(ch, envelope(), {}).detail
        == "channel slack: environment variable SLACK_URL is not set"
    )
    ch2, _ = hook(receiver)
    assert send(ch2, envelope(), {}).status == "retryable"
    assert receiver.received == []
    bad = send(ch, envelope(), {"SLACK_URL": "not a url"})
    assert bad.status == "permanent" and "not a url" not in bad.detail


def test_no_secret_in_any_error_or_log_record(
    receiver: Receiver, closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # urllib3 logs each request's path at DEBUG
    details = []
    for reply in (Reply(500, b"x"), Reply(200), Reply(delay_s=1.5)):
        receiver.replies = [reply]
        for ch, env in (slack(receiver, read_timeout_s=0.3), hook(receiver, read_timeout_s=0.3)):
            details.append(send(ch, envelope(), env).detail)
    ch = SlackChannel("slack", SecretRef("SLACK_URL"), 1.0, 1.0, 2.0)
    details.append(
        send(ch, envelope(), {"SLACK_URL": f"http://127.0.0.1:{closed_port}/{TOKEN}"}).detail
    )
    assert any("/services/" in r.getMessage() or "***" in r.getMessage() for r in caplog.records)
    assert_no_secrets(*details, *(r.getMessage() for r in caplog.records))
    assert_no_secrets(*(caplog.text.splitlines()))
