"""The typed notification settings: frozen dataclasses built by
:mod:`sparkscope.config.notifications.section`.

A secret is a :class:`SecretRef`, the NAME of an environment variable, resolved only at send time;
no dataclass here ever holds a secret's value.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from sparkscope.saferegex import SafePattern


class MissingSecret(Exception):
    """An environment variable named by the configuration is not set (or empty)."""


@dataclass(frozen=True)
class SecretRef:
    """Where a secret comes from: the name of an environment variable (never its value)."""

    env: str

    def value(self, environ: Mapping[str, str]) -> str:
        """The secret, from ``environ``; MissingSecret when the variable is unset or blank."""
        secret = environ.get(self.env, "")
        if not secret.strip():
            raise MissingSecret(f"environment variable {self.env} is not set")
        return secret


@dataclass(frozen=True)
class EmailChannel:
    """An SMTP channel (STARTTLS, implicit TLS or plain, with or without AUTH)."""

    name: str
    smtp_host: str
    from_addr: str
    to: tuple[str, ...]
    smtp_port: int = 587
    security: str = "starttls"  # "starttls", "tls" (implicit, SMTPS) or "none"
    username: str | None = None
    password: SecretRef | None = None
    timeout_s: float = 30.0
    deadline_s: float = 120.0  # the whole session, however slowly the server answers
    verify_tls: bool = True
    ca_bundle: str | None = None
    type: str = "email"


@dataclass(frozen=True)
class SlackChannel:
    """A Slack incoming webhook (its URL is the secret)."""

    name: str
    webhook_url: SecretRef
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 15.0
    deadline_s: float = 30.0
    type: str = "slack"


@dataclass(frozen=True)
class WebhookChannel:
    """A JSON webhook, HMAC-SHA256 signed with its secret."""

    name: str
    secret: SecretRef
    url: str | None = None  # in the file, or:
    url_env: SecretRef | None = None  # when the URL itself carries a token
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 15.0
    deadline_s: float = 30.0
    verify_tls: bool = True
    ca_bundle: str | None = None
    type: str = "webhook"


Channel = EmailChannel | SlackChannel | WebhookChannel


@dataclass(frozen=True)
class Scope:
    """Which applications: every key that is set must match; an empty scope matches all."""

    user: frozenset[str] | None = None
    queue: frozenset[str] | None = None
    name: SafePattern | None = None
    server: frozenset[str] | None = None


@dataclass(frozen=True)
class When:
    """The triggers a rule listens to; an event fires the rule when its kind's trigger holds."""

    min_severity: int | None = None  # new finding at or above (1 low .. 4 critical)
    heuristics: frozenset[str] | None = None  # ... of these heuristics only
    regression: bool = False
    failed: bool = False
    cost_spike_pct: float | None = None  # core-hours over the key's recent median by this %
    deadline_ms: int | None = None  # a recurring run, or its forecast, longer than this


@dataclass(frozen=True)
class Rule:
    """When to alert, whom (channels), for which applications (scope), how often at most."""

    name: str
    when: When
    channels: tuple[str, ...]
    scope: Scope = Scope()
    max_per_hour: int | None = None


@dataclass(frozen=True)
class DigestSpec:
    """A digest: every day or week at a local time, for a scope, to channels."""

    name: str
    channels: tuple[str, ...]
    every: str = "day"  # "day" or "week"
    at: dt.time = dt.time(7, 0)
    timezone: ZoneInfo = ZoneInfo("UTC")
    weekday: int = 0  # for every: week; 0 = Monday
    scope: Scope = Scope()


@dataclass(frozen=True)
class Mute:
    """Silences alerts that match every key given, until (exclusive, UTC) ``until``."""

    label: str  # "mutes[0]", for logs and dry runs
    until: dt.datetime
    name: SafePattern | None = None
    heuristics: frozenset[str] | None = None
    app_id: frozenset[str] | None = None
    server: frozenset[str] | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Delivery:
    """How the outbox retries: exponential backoff with jitter, then 'dead'."""

    max_attempts: int = 16
    backoff_base_s: float = 60.0
    backoff_cap_s: float = 6 * 3600.0
    lease_s: float = 600.0  # a 'sending' row older than this was abandoned by a killed run


@dataclass(frozen=True)
class NotificationSettings:
    """The whole ``notifications:`` section."""

    base_url: str
    channels: tuple[Channel, ...] = ()
    rules: tuple[Rule, ...] = ()
    digests: tuple[DigestSpec, ...] = ()
    mutes: tuple[Mute, ...] = ()
    delivery: Delivery = Delivery()

    def channel(self, name: str) -> Channel:
        """The channel called ``name`` (KeyError when there is none)."""
        for c in self.channels:
            if c.name == name:
                return c
        raise KeyError(name)


def secrets_of(channel: Channel) -> tuple[SecretRef, ...]:
    """The environment variables a channel needs to send."""
    if isinstance(channel, EmailChannel):
        return (channel.password,) if channel.password else ()
    if isinstance(channel, SlackChannel):
        return (channel.webhook_url,)
    return tuple(r for r in (channel.secret, channel.url_env) if r is not None)
