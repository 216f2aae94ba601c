"""E-mail over SMTP, one session per message: STARTTLS, implicit TLS or plain, AUTH when a user
is configured, and a total deadline (a timer shuts the socket down, however slowly the server
answers), so that a send always ends before its outbox lease does.

Outcomes: a 250 after DATA is ``sent`` (some recipients refused is still sent, and said); a 4xx,
a timeout, a refused or dropped connection or a TLS error other than verification is
``retryable``; failed authentication, STARTTLS or AUTH not offered, a 5xx, every recipient refused
with 5xx, or a certificate that does not verify is ``permanent``.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
import threading
from collections.abc import Iterable, Mapping
from email.message import EmailMessage
from typing import Any

from sparkscope.config.notifications.model import EmailChannel
from sparkscope.notify import masking
from sparkscope.notify.outbox import SendOutcome
from sparkscope.notify.text import one_line


class _Watchdog:
    """Shuts the session's socket down once the deadline passes."""

    def __init__(self, deadline_s: float) -> None:
        self.fired = False
        self.smtp: smtplib.SMTP | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(deadline_s, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sock: Any = getattr(self.smtp, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


class _Watched:
    """An SMTP client that shows its watchdog the socket it is about to open."""

    _watchdog: _Watchdog

    def connect(self, host: str = "localhost", port: int = 0, source_address: Any = None) -> Any:
        self._watchdog.smtp = self  # type: ignore[assignment]
        return super().connect(host, port, source_address)  # type: ignore[misc]


class _Smtp(_Watched, smtplib.SMTP):
    def __init__(self, watchdog: _Watchdog, *args: Any, **kwargs: Any) -> None:
        self._watchdog = watchdog
        super().__init__(*args, **kwargs)


class _SmtpTls(_Watched, smtplib.SMTP_SSL):
    def __init__(self, watchdog: _Watchdog, *args: Any, **kwargs: Any) -> None:
        self._watchdog = watchdog
        super().__init__(*args, **kwargs)


def _by_code(code: int, text: str) -> SendOutcome:
    return SendOutcome("retryable" if 400 <= code < 500 else "permanent", text)


def _smtp_said(raw: bytes | str, secrets: Iterable[str]) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return one_line(masking.redact(text, secrets), 200)


def send_email(channel: EmailChannel, msg: EmailMessage, environ: Mapping[str, str]) -> SendOutcome:
    """Deliver ``msg`` in one SMTP session; never raises for a delivery problem."""
    password = channel.password.value(environ) if channel.password else None
    secrets = masking.variants(password, channel.username) if password else set()
    masking.register(secrets)
    where = f"{channel.smtp_host}:{channel.smtp_port}"
    context = ssl.create_default_context(cafile=channel.ca_bundle)
    if not channel.verify_tls:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    with _Watchdog(channel.deadline_s) as watchdog:
        outcome = _session(channel, msg, password, context, watchdog, secrets)
    if watchdog.fired and not outcome.ok:
        return SendOutcome(
            "retryable", f"{where}: no complete session within {channel.deadline_s:g} s"
        )
    return outcome


def _session(
    channel: EmailChannel,
    msg: EmailMessage,
    password: str | None,
    context: ssl.SSLContext,
    watchdog: _Watchdog,
    secrets: set[str],
) -> SendOutcome:
    where = f"{channel.smtp_host}:{channel.smtp_port}"
    smtp: smtplib.SMTP | None = None
    try:
        host, port, timeout = channel.smtp_host, channel.smtp_port, channel.timeout_s
        if channel.security == "tls":
            smtp = _SmtpTls(watchdog, host, port, timeout=timeout, context=context)
        else:
            smtp = _Smtp(watchdog, host, port, timeout=timeout)
        smtp.ehlo()
        if channel.security == "starttls":
            smtp.starttls(context=context)
            smtp.ehlo()
        if channel.username and password is not None:
            smtp.login(channel.username, password)
        refused = smtp.send_message(msg)
    except smtplib.SMTPAuthenticationError as exc:
        return SendOutcome(
            "permanent",
            f"{where}: authentication failed ({exc.smtp_code} "
            f"{_smtp_said(exc.smtp_error, secrets)})",
        )
    except smtplib.SMTPNotSupportedError as exc:
        return SendOutcome("permanent", f"{where}: {_smtp_said(str(exc), secrets)}")
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        who = ", ".join(f"{a} ({c})" for a, (c, _) in exc.recipients.items())
        kind = "retryable" if any(400 <= c < 500 for c in codes) else "permanent"
        return SendOutcome(kind, f"{where}: every recipient refused: {one_line(who, 200)}")
    except smtplib.SMTPResponseException as exc:  # sender refused, data refused, HELO, connect
        said = _smtp_said(exc.smtp_error, secrets)
        return _by_code(exc.smtp_code, f"{where}: {type(exc).__name__} {exc.smtp_code} {said}")
    except smtplib.SMTPServerDisconnected:
        return SendOutcome("retryable", f"{where}: the server closed the connection")
    except ssl.SSLCertVerificationError:
        return SendOutcome("permanent", f"{where}: TLS: certificate verification failed")
    except ssl.SSLError as exc:
        return SendOutcome("retryable", f"{where}: TLS: {exc.reason or type(exc).__name__}")
    except TimeoutError:
        return SendOutcome("retryable", f"{where}: timed out after {channel.timeout_s:g} s")
    except OSError as exc:
        return SendOutcome(
            "retryable", f"{where}: cannot connect: {exc.strerror or type(exc).__name__}"
        )
    except smtplib.SMTPException as exc:
        return SendOutcome("retryable", f"{where}: {type(exc).__name__}")
    finally:
        if smtp is not None:
            try:
                smtp.quit()  # the message is accepted already: a failing QUIT changes nothing
            except (smtplib.SMTPException, OSError):
                smtp.close()
    if refused:
        who = ", ".join(f"{a} ({c})" for a, (c, _) in refused.items())
        return SendOutcome("sent", f"{where}: accepted, but refused for {one_line(who, 200)}")
    return SendOutcome("sent", f"{where}: accepted")
