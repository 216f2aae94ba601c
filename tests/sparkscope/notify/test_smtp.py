"""The SMTP sender against a real SMTP server (aiosmtpd) on 127.0.0.1: STARTTLS and implicit
TLS with a self-signed certificate, AUTH, refusals, a closed port."""

from __future__ import annotations

import base64
import logging

import pytest

from sparkscope.config.notifications.model import EmailChannel, SecretRef
from sparkscope.notify.channels import send
from tests.sparkscope.notify.conftest import SMTP_PASSWORD, SMTP_USER, SmtpServer
from tests.sparkscope.notify.samples import envelope, hostile
from tests.support.tls import Cert

ENV = {"SMTP_PASS": SMTP_PASSWORD}


def channel(port: int, cert: Cert | None, **kw: object) -> EmailChannel:
    values: dict = dict(
        name="mail", smtp_host="127.0.0.1", smtp_port=port, from_addr="sparkscope@example.com",
        to=("data-eng@example.com",), security="starttls", username=SMTP_USER,
        password=SecretRef("SMTP_PASS"), timeout_s=5.0, ca_bundle=str(cert.cert) if cert else None,
    )  # fmt: skip
    values.update(kw)
    return EmailChannel(**values)


def no_secret(text: str) -> None:
    for form in (SMTP_PASSWORD, base64.b64encode(SMTP_PASSWORD.encode()).decode(),
                 base64.b64encode(f"\0{SMTP_USER}\0{SMTP_PASSWORD}".encode()).decode()):  # fmt: skip
        assert form not in text


def test_starttls_with_auth_delivers_the_message(smtp_starttls: SmtpServer, cert: Cert) -> None:
    env = envelope(hostile(), channel="mail")
    outcome = send(channel(smtp_starttls.port, cert), env, ENV)
    assert outcome.status == "sent", outcome.detail
    assert outcome.detail == f"127.0.0.1:{smtp_starttls.port}: accepted"
    (msg,) = smtp_starttls.mailbox.messages
    assert smtp_starttls.mailbox.auth  # logged in
    assert smtp_starttls.mailbox.envelopes == [("sparkscope@example.com", ["data-eng@example.com"])]
    assert msg["X-Sparkscope-Event-Id"] == env.event_id
    html = msg.get_body(("html",))
    assert html is not None and "<script" not in html.get_content()
    assert "&lt;script&gt;" in html.get_content()


def test_implicit_tls_with_auth(smtp_tls: SmtpServer, cert: Cert) -> None:
    outcome = send(channel(smtp_tls.port, cert, security="tls"), envelope(channel="mail"), ENV)
    assert outcome.status == "sent", outcome.detail
    assert len(smtp_tls.mailbox.messages) == 1 and smtp_tls.mailbox.auth


def test_wrong_password_is_permanent_and_never_shown(
    smtp_starttls: SmtpServer, cert: Cert, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = {"SMTP_PASS": "not-the-Password-123"}
    outcome = send(channel(smtp_starttls.port, cert), envelope(), wrong)
    assert outcome.status == "permanent"
    assert outcome.detail.startswith(f"127.0.0.1:{smtp_starttls.port}: authentication failed (535")
    assert "not-the-Password-123" not in outcome.detail
    assert all("not-the-Password-123" not in r.getMessage() for r in caplog.records)
    assert smtp_starttls.mailbox.messages == []


def test_untrusted_certificate_is_permanent(smtp_starttls: SmtpServer) -> None:
    outcome = send(channel(smtp_starttls.port, None), envelope(), ENV)
    assert (outcome.status, outcome.detail) == (
        "permanent", f"127.0.0.1:{smtp_starttls.port}: TLS: certificate verification failed")  # fmt: skip


def test_a_server_without_starttls_is_refused(smtp_plain: SmtpServer) -> None:
    outcome = send(channel(smtp_plain.port, None), envelope(), ENV)
    assert outcome.status == "permanent"
    assert (
        outcome.detail
        == f"127.0.0.1:{smtp_plain.port}: STARTTLS extension not supported by server."
    )
    assert smtp_plain.mailbox.messages == []


@pytest.mark.parametrize(
    ("answer", "status"),
    [("550 5.1.1 <data-eng@example.com>: no such user", "permanent"),
     ("451 4.3.0 try again later", "retryable")],
)  # fmt: skip
def test_refused_recipients(
    smtp_starttls: SmtpServer, cert: Cert, answer: str, status: str
) -> None:
    smtp_starttls.mailbox.rcpt_answer = answer
    outcome = send(channel(smtp_starttls.port, cert), envelope(), ENV)
    code = answer[:3]
    assert (outcome.status, outcome.detail) == (
        status, f"127.0.0.1:{smtp_starttls.port}: every recipient refused: data-eng@example.com ({code})")  # fmt: skip


def test_closed_port_is_retryable(closed_port: int) -> None:
    outcome = send(channel(closed_port, None), envelope(), ENV)
    assert (outcome.status, outcome.detail) == (
        "retryable", f"127.0.0.1:{closed_port}: cannot connect: Connection refused")  # fmt: skip


def test_missing_password_variable_is_an_error_not_a_crash(
    smtp_starttls: SmtpServer, cert: Cert
) -> None:
    outcome = send(channel(smtp_starttls.port, cert), envelope(), {})
    assert (outcome.status, outcome.detail) == (
        "retryable", "channel mail: environment variable SMTP_PASS is not set")  # fmt: skip


def test_no_record_at_debug_holds_the_password(
    smtp_starttls: SmtpServer, cert: Cert, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    outcome = send(channel(smtp_starttls.port, cert), envelope(), ENV)
    assert outcome.ok
    for record in caplog.records:
        no_secret(record.getMessage())
