"""Keeping secrets out of error texts and log records.

Errors are written by us from exception types and server answers, never ``str(exc)`` of a
requests error as such (it carries the URL, and a Slack URL is its own secret); what text does go
out passes :func:`redact` with every form of the channel's secrets. As a second line of defence a
:class:`RedactingFilter` on our loggers and on ``urllib3.connectionpool`` (which logs request
paths at DEBUG) masks every secret resolved so far in this process.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

MASK = "***"
_MIN_PART = 6  # shorter URL parts (``api``, ``v1``) are not worth masking, and mask too much


def variants(secret: str, username: str | None = None) -> set[str]:
    """The forms in which a secret may show up: as is, URL-quoted, base64 (SMTP AUTH LOGIN and
    PLAIN), and for a URL its path, path segments and query values."""
    if not secret:
        return set()
    out = {secret, quote(secret, safe=""), quote_plus(secret)}
    out.add(base64.b64encode(secret.encode()).decode())
    if username is not None:
        out.add(base64.b64encode(f"\0{username}\0{secret}".encode()).decode())
    parts = urlsplit(secret)
    if parts.scheme in ("http", "https") and parts.netloc:
        if len(parts.path) >= _MIN_PART:
            out.add(parts.path)
        out.update(seg for seg in parts.path.split("/") if len(seg) >= _MIN_PART)
        out.update(v for _, v in parse_qsl(parts.query) if len(v) >= _MIN_PART)
        if parts.password:
            out.add(parts.password)
    return {v for v in out if v}


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (longest first, so a part never unmasks a whole) replaced."""
    for s in sorted(set(secrets), key=len, reverse=True):
        if s and s in text:
            text = text.replace(s, MASK)
    return text


def shown_url(url: str) -> str:
    """A URL as an error may show it: scheme, host and port only."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(invalid URL)"
    return f"{parts.scheme or '?'}://{host}{port}/…"


class RedactingFilter(logging.Filter):
    """Masks every registered secret in a record's message, arguments and traceback text."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._secrets: set[str] = set()

    def register(self, secrets: Iterable[str]) -> None:
        with self._lock:
            self._secrets.update(s for s in secrets if s)

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            secrets = set(self._secrets)
        if not secrets:
            return True
        message = record.getMessage()
        clean = redact(message, secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, secrets)
        return True


FILTER = RedactingFilter()
#: Filters on a logger see only its own records (not its children's): every logger that may
#: format a send's error is listed.
GUARDED_LOGGERS = (
    "sparkscope.notify.channels",
    "sparkscope.notify.smtp",
    "sparkscope.notify.runner",
    "sparkscope.cli.notify",
    "urllib3.connectionpool",
)
for _name in GUARDED_LOGGERS:
    _logger = logging.getLogger(_name)
    if FILTER not in _logger.filters:
        _logger.addFilter(FILTER)


def register(secrets: Iterable[str]) -> None:
    """Mask these in every guarded logger from now on (called when a secret is resolved)."""
    FILTER.register(secrets)
