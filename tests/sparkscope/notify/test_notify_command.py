"""`sparkscope notify` as cron runs it: a real process sends the outbox of the recorded corpora to
a real SMTP server and real HTTP receivers, is SIGKILLed before, during and after a send and run
again, meets a channel that answers 500 or times out and then recovers; secrets never reach the
database, a page or a log."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import inspect, select, text
from sqlalchemy.orm import Session

from sparkscope.config.loader import parse_config
from sparkscope.db import make_engine
from sparkscope.models.notify import NotifyOutbox
from sparkscope.notify.channels import EVENT_ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from sparkscope.web.app import create_app
from tests.sparkscope.notify.conftest import (
    SMTP_PASSWORD,
    SMTP_USER,
    Gate,
    Receiver,
    Reply,
    SmtpServer,
)
from tests.sparkscope.notify.corpus import BASE_URL, ROOT
from tests.support.tls import Cert

HOOK_SECRET = "whsec-5f1c0a9e-never-logged"
SLACK_PATH = "/services/T0001/B0002/XyZsecretTOKEN42"
SECRETS = (HOOK_SECRET, SMTP_PASSWORD, "XyZsecretTOKEN42", SLACK_PATH)


def notifications(hook_url: str, **hook: Any) -> dict[str, Any]:
    return {
        "base_url": BASE_URL,
        "channels": [
            {
                "name": "hook",
                "type": "webhook",
                "url": hook_url,
                "secret_env": "T_HOOK",
                "connect_timeout_s": 2,
                "read_timeout_s": 30,
                "deadline_s": 60,
                **hook,
            },
        ],  # fmt: skip
        "delivery": {"lease_s": 61},
    }


def config_file(path: Path, raw: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"notifications": raw}, sort_keys=False))
    return path


def start(
    db_url: str, config: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SPARKSCOPE_")}
    base.update(SPARKSCOPE_DATABASE_URL=db_url, SPARKSCOPE_CONFIG=str(config), T_HOOK=HOOK_SECRET)
    base.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-m", "sparkscope", "-v", "notify", *args],
        env=base,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def notify(db_url: str, config: Path, *args: str, expect: int = 0, **env: str) -> str:
    proc = start(db_url, config, *args, env=env)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == expect, out + err
    for secret in SECRETS:
        assert secret not in out and secret not in err, f"a secret in the output: {secret}"
    return out + err


def only_hook_rows(url: str) -> list[str]:
    """Keep the hook's alerts; return their event ids in claim order."""
    engine = make_engine(url)
    with engine.begin() as c:
        c.execute(text("DELETE FROM notify_outbox WHERE channel <> 'hook'"))
        ids = list(
            c.scalars(
                select(NotifyOutbox.event_id).order_by(
                    NotifyOutbox.next_attempt_ms, NotifyOutbox.created_ms, NotifyOutbox.id
                )
            )
        )
    engine.dispose()
    return ids


def states(url: str) -> Counter[str]:
    engine = make_engine(url)
    with engine.connect() as c:
        found = Counter(c.scalars(select(NotifyOutbox.state)))
    engine.dispose()
    return found


def wait_for(what: Callable[[], bool], proc: subprocess.Popen[str], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not what():
        if proc.poll() is not None:
            pytest.fail(f"notify ended (exit {proc.returncode}) first: {proc.communicate()}")
        assert time.monotonic() < deadline, "kill point never reached"
        time.sleep(0.02)


def received_ids(receiver: Receiver) -> list[str]:
    ids = [json.loads(r.body)["event_id"] for r in receiver.received]
    assert ids == [r.headers[EVENT_ID_HEADER] for r in receiver.received]
    return ids


def database_text(url: str) -> str:
    """Every value of every table, as text."""
    engine = make_engine(url)
    parts = []
    with engine.connect() as c:
        for table in inspect(c).get_table_names():
            parts += [repr(tuple(row)) for row in c.execute(text(f'SELECT * FROM "{table}"'))]
    engine.dispose()
    return "\n".join(parts)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def slack_receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_a_run_sends_every_due_message_once_signed_and_secrets_stay_out(
    corpus_url: str,
    tmp_path: Path,
    receiver: Receiver,
    slack_receiver: Receiver,
    smtp_starttls: SmtpServer,
    cert: Cert,
) -> None:
    raw = notifications(receiver.url("/spark"))
    raw["channels"] += [
        {"name": "slack", "type": "slack", "webhook_url_env": "T_SLACK"},
        {"name": "mail", "type": "email", "smtp_host": "127.0.0.1", "smtp_port": smtp_starttls.port,
         "starttls": True, "username": SMTP_USER, "password_env": "T_SMTP", "ca_bundle": str(cert.cert),
         "from": "sparkscope@example.com", "to": ["team@example.com"], "deadline_s": 30},
    ]  # fmt: skip
    config = config_file(tmp_path / "s.yaml", raw)
    env = {"T_SLACK": slack_receiver.url(SLACK_PATH), "T_SMTP": SMTP_PASSWORD}
    out = notify(corpus_url, config, **env)
    # due now: the hook's 9 alerts, slack's 1 and mail's 3 (its folded message waits for the hour)
    assert "notify: sent 13, failed 0, given up 0, digests written 0, recovered 0" in out
    engine = make_engine(corpus_url)
    with Session(engine) as session:
        sent = {r.channel: [] for r in session.scalars(select(NotifyOutbox))}
        for r in session.scalars(select(NotifyOutbox).where(NotifyOutbox.state == "sent")):
            sent[r.channel].append(r.event_id)
        waiting = session.scalars(
            select(NotifyOutbox.kind).where(NotifyOutbox.state == "pending")
        ).all()
    engine.dispose()
    assert waiting == ["folded"]  # due at the end of its hour
    # the webhook: each body verified with the channel's secret, its event id the row's
    assert sorted(received_ids(receiver)) == sorted(sent["hook"]) and len(sent["hook"]) == 9
    for r in receiver.received:
        ts, sig = r.headers[TIMESTAMP_HEADER], r.headers[SIGNATURE_HEADER]
        assert verify(HOOK_SECRET, ts, sig, r.body, now=time.time())
        assert not verify("another-secret", ts, sig, r.body, now=time.time())
        assert HOOK_SECRET.encode() not in r.body
    (slack,) = slack_receiver.received
    assert slack.path == SLACK_PATH and json.loads(slack.body)["blocks"][0]["type"] == "header"
    # e-mail over STARTTLS with AUTH: one message per alert, Message-ID from the event id
    assert smtp_starttls.mailbox.auth and len(smtp_starttls.mailbox.messages) == 3
    ids = {m["Message-ID"] for m in smtp_starttls.mailbox.messages}
    assert ids == {f"<{e}@example.com>" for e in sent["mail"]}
    # nothing twice: a second run finds nothing due
    assert "notify: sent 0," in notify(corpus_url, config, **env)
    text_of_db = database_text(corpus_url)
    for secret in SECRETS:
        assert secret not in text_of_db
    app = create_app(
        {"TESTING": True},
        config=parse_config(
            yaml.safe_load(config.read_text()) | {"database_url": corpus_url}, env={}
        ),
    )
    try:
        page = app.test_client().get("/notifications").get_data(as_text=True)
        api = app.test_client().get("/api/notifications").get_data(as_text=True)
    finally:
        app.extensions["sparkscope.engine"].dispose()
    for secret in SECRETS:
        assert secret not in page and secret not in api


@pytest.mark.parametrize("kill_at", ["before", "during", "after"])
def test_sigkill_loses_nothing_and_repeats_at_most_the_message_in_flight(
    kill_at: str, corpus_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    """``before``: the 3rd message is claimed, its connection held at a gate the receiver never
    sees past; ``during``: the receiver holds its answer to the 3rd; ``after``: the 3rd was
    answered and settled, the 4th is held at the gate. Kill, then run again past the lease."""
    ids = only_hook_rows(corpus_url)
    n = len(ids)
    passes = {"before": 2, "during": n, "after": 3}[kill_at]
    if kill_at == "during":
        receiver.replies = [Reply(), Reply(), Reply(delay_s=40), Reply()]
    gate = Gate(receiver.port, passes)
    try:
        config = config_file(tmp_path / "s.yaml", notifications(gate.url("/spark")))
        proc = start(corpus_url, config)
        if kill_at == "during":
            wait_for(lambda: len(receiver.received) == 3, proc)
        else:
            wait_for(lambda: bool(gate.held) and states(corpus_url)["sending"] == 1, proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        in_flight = {"before": 2, "during": 2, "after": 3}[kill_at]
        assert states(corpus_url) == {"sent": in_flight, "sending": 1, "pending": n - in_flight - 1}
        delivered_before = received_ids(receiver)
        gate.open()
        # run again with a short lease (and sends that end well within it), past that lease
        quick = notifications(
            gate.url("/spark"), connect_timeout_s=1, read_timeout_s=1, deadline_s=1
        )
        quick["delivery"] = {"lease_s": 2}
        config = config_file(tmp_path / "quick.yaml", quick)
        time.sleep(2.2)
        out = notify(corpus_url, config)
        assert f"sent {n - in_flight}, failed 0" in out and "recovered 1" in out
    finally:
        gate.close()
    assert states(corpus_url) == {"sent": n}
    got = received_ids(receiver)
    assert sorted(set(got)) == sorted(ids)  # nothing lost
    twice = [e for e, k in Counter(got).items() if k > 1]
    if kill_at == "during":
        assert twice == [delivered_before[2]] and Counter(got)[twice[0]] == 2  # same event id
    else:
        assert twice == []
    assert len(delivered_before) == in_flight + (kill_at == "during")


def test_a_channel_that_fails_is_retried_with_backoff_and_shown_until_it_recovers(
    corpus_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    ids = only_hook_rows(corpus_url)
    raw = notifications(receiver.url("/spark"), read_timeout_s=0.5, deadline_s=2)
    raw["delivery"] = {"lease_s": 3, "backoff_base_s": 1, "backoff_cap_s": 2}
    config = config_file(tmp_path / "s.yaml", raw)
    receiver.replies = [Reply(500, b"upstream broke"), Reply(delay_s=3), Reply()]
    out = notify(corpus_url, config, expect=1)
    where = f"http://127.0.0.1:{receiver.port}/…"
    assert f"channel hook failing: HTTP 500 from {where}: upstream broke" in out
    # the channel was tried once: its other messages wait, no attempt spent on them
    assert states(corpus_url) == {"failed": 1, "pending": len(ids) - 1}
    app = create_app(
        {"TESTING": True},
        config=parse_config({"database_url": corpus_url, "notifications": raw}, env={}),
    )
    try:
        api = app.test_client().get("/api/notifications").get_json()
        page = app.test_client().get("/notifications").get_data(as_text=True)
    finally:
        app.extensions["sparkscope.engine"].dispose()
    (hook,) = api["channels"]
    assert hook["failing"] and hook["failed"] == 1 and "HTTP 500" in hook["last_error"]
    assert 'class="channel failing"' in page
    time.sleep(1.1)  # past the backoff: due again; the oldest due message now times out
    out = notify(corpus_url, config, expect=1)
    assert f"channel hook failing: {where}: no answer within 0.5 s (read timeout)" in out
    assert states(corpus_url) == {"failed": 2, "pending": len(ids) - 2}
    time.sleep(2.1)  # past the backoff's cap: the receiver answers now
    assert f"sent {len(ids)}, failed 0" in notify(corpus_url, config)
    assert states(corpus_url) == {"sent": len(ids)}
    got = received_ids(receiver)
    assert sorted(set(got)) == sorted(ids)  # nothing lost
    # the two that failed (500, timeout) were delivered on their second attempt, same event id
    assert sorted(Counter(got).values()) == [1] * (len(ids) - 2) + [2, 2]
    engine = make_engine(corpus_url)
    with engine.connect() as c:
        attempts = sorted(c.scalars(select(NotifyOutbox.attempts)))
    engine.dispose()
    assert attempts == [1] * (len(ids) - 2) + [2, 2]


def test_dry_run_prints_what_would_be_sent_and_changes_nothing(
    corpus_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    only_hook_rows(corpus_url)
    raw = notifications(receiver.url("/spark"))
    raw["digests"] = [{"name": "evening", "at": "18:00", "timezone": "UTC", "channels": ["hook"]}]
    config = config_file(tmp_path / "s.yaml", raw)
    before = hashlib.sha256(database_text(corpus_url).encode()).hexdigest()
    out = notify(corpus_url, config, "--dry-run")
    lines = [x for x in out.splitlines() if x.startswith("would send ")]
    assert lines[0].startswith("would send hook: digest evening digest for all applications: ")
    assert "would send hook: alert [critical] failed: ValueError" in out
    # the digest and the hook's 9 alerts
    assert len(lines) == 10 and "notify --dry-run: 10 message(s) due; nothing sent" in out
    assert hashlib.sha256(database_text(corpus_url).encode()).hexdigest() == before
    assert receiver.received == []
    blocked = notify(corpus_url, config, "--dry-run", T_HOOK="")
    assert "(blocked: environment variable T_HOOK is not set)" in blocked


def test_check_verifies_the_configuration_and_the_secrets(
    corpus_url: str, tmp_path: Path, receiver: Receiver
) -> None:
    raw = notifications(receiver.url("/spark"))
    raw["rules"] = [
        {
            "name": "skew",
            "when": {"min_severity": "low", "heuristics": ["stage_skewed"]},
            "channels": ["hook"],
        }
    ]
    config = config_file(tmp_path / "s.yaml", raw)
    out = notify(corpus_url, config, "--check", T_HOOK="", expect=2)
    assert "problem: channel hook: environment variable T_HOOK is not set" in out
    assert "problem: rule skew: no heuristic named 'stage_skewed'" in out
    raw["rules"][0]["when"]["heuristics"] = ["stage_skew"]
    config = config_file(tmp_path / "s.yaml", raw)
    out = notify(corpus_url, config, "--check")
    assert "channel hook (webhook): http://127.0.0.1:" in out and ": ready" in out
    assert "notifications: configuration and secrets OK" in out
    bad = config_file(
        tmp_path / "bad.yaml", {**raw, "channels": [{**raw["channels"][0], "secret": HOOK_SECRET}]}
    )
    out = notify(corpus_url, bad, "--check", expect=2)
    assert "notifications.channels[0].secret: unknown key: secrets come from the environment" in out
