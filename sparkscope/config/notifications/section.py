"""The ``notifications:`` section of sparkscope.yaml, parsed strictly into frozen dataclasses.

Every error is one line naming the key (``notifications.channels[1].smtp_port: expected an integer
1..65535, got 'x'``). Secrets are never in the file: a channel names the environment variable
that holds each one (:class:`SecretRef`), resolved at send time by :meth:`SecretRef.value`; a
missing variable is reported by :func:`check` (``sparkscope notify --check``) and by the sender,
as an error, never a crash. Regexes are admitted by :mod:`sparkscope.saferegex`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from email.utils import parseaddr
from typing import Any

from sparkscope.config.notifications import values as p
from sparkscope.config.notifications.model import (
    Channel,
    Delivery,
    DigestSpec,
    EmailChannel,
    MissingSecret,
    Mute,
    NotificationSettings,
    Rule,
    Scope,
    SecretRef,
    SlackChannel,
    WebhookChannel,
    When,
    secrets_of,
)
from sparkscope.config.parsing import ConfigError
from sparkscope.saferegex import compile_safe

ROOT = "notifications"


def _address(value: Any) -> str:
    text = p.string(value)
    _, addr = parseaddr(text)
    local, _, domain = addr.rpartition("@")
    if not addr or not local or "." not in domain or any(c.isspace() for c in addr):
        raise ValueError(f"expected an e-mail address, got {text[:60]!r}")
    return text


def _addresses(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ValueError("expected an e-mail address or a non-empty list of them")
    return tuple(_address(v) for v in items)


def _secret(value: Any) -> SecretRef:
    return SecretRef(p.env_name(value))


_TIMEOUT = p.positive_number
_HTTP_COMMON = {"connect_timeout_s": _TIMEOUT, "read_timeout_s": _TIMEOUT, "deadline_s": _TIMEOUT}
_CHANNEL_KEYS: dict[str, dict[str, p.Parser]] = {
    "email": {
        "smtp_host": p.string,
        "smtp_port": p.integer_in(1, 65535),
        "starttls": p.boolean,
        "tls": p.boolean,
        "username": p.optional(p.string),
        "password_env": _secret,
        "from": _address,
        "to": _addresses,
        "timeout_s": _TIMEOUT,
        "deadline_s": _TIMEOUT,
        "verify_tls": p.boolean,
        "ca_bundle": p.optional(p.string),
    },
    "slack": {"webhook_url_env": _secret, **_HTTP_COMMON},
    "webhook": {
        "url": p.endpoint_url,
        "url_env": _secret,
        "secret_env": _secret,
        "verify_tls": p.boolean,
        "ca_bundle": p.optional(p.string),
        **_HTTP_COMMON,
    },
}
_SECRET_HINTS = {
    "password": ": secrets come from the environment, use password_env",
    "webhook_url": ": the Slack URL is a secret, use webhook_url_env",
    "secret": ": secrets come from the environment, use secret_env",
}


def _channel(raw: Any, path: str, file: str | None) -> Channel:
    m = p.mapping(raw, path, file, "a mapping with name and type")
    kind = m.get("type")
    if kind not in _CHANNEL_KEYS:
        raise ConfigError(
            file, f"{path}.type", f"expected one of email, slack, webhook, got {kind!r}"
        )
    parsers = {"name": p.name, "type": p.string, **_CHANNEL_KEYS[kind]}
    v = p.parse_keys(m, parsers, path, file, ("name",), _SECRET_HINTS)
    v.pop("type")
    if kind == "slack":
        if "webhook_url_env" not in v:
            raise ConfigError(file, f"{path}.webhook_url_env", "missing")
        return SlackChannel(webhook_url=v.pop("webhook_url_env"), **v)
    if kind == "webhook":
        if ("url" in v) == ("url_env" in v):
            raise ConfigError(file, f"{path}.url", "give exactly one of url and url_env")
        if "secret_env" not in v:
            raise ConfigError(file, f"{path}.secret_env", "missing (webhooks are always signed)")
        return WebhookChannel(secret=v.pop("secret_env"), **v)
    for key in ("smtp_host", "from", "to"):
        if key not in v:
            raise ConfigError(file, f"{path}.{key}", "missing")
    starttls, tls = v.pop("starttls", not v.get("tls", False)), v.pop("tls", False)
    if starttls and tls:
        raise ConfigError(file, f"{path}.tls", "starttls and tls (implicit TLS) exclude each other")
    security = "tls" if tls else "starttls" if starttls else "none"
    password = v.pop("password_env", None)
    if (v.get("username") is None) != (password is None):
        raise ConfigError(file, f"{path}.password_env", "username and password_env go together")
    if password is not None and security == "none":
        raise ConfigError(
            file,
            f"{path}.starttls",
            "refusing to send a password without TLS (set starttls: true or tls: true)",
        )
    v.setdefault("smtp_port", {"tls": 465, "starttls": 587, "none": 25}[security])
    return EmailChannel(from_addr=v.pop("from"), security=security, password=password, **v)


_SCOPE_KEYS: dict[str, p.Parser] = {
    "user": p.optional(p.string_set),
    "queue": p.optional(p.string_set),
    "name": p.optional(compile_safe),
    "server": p.optional(p.string_set),
}


def _scope(raw: Any, path: str, file: str | None) -> Scope:
    if raw is None:
        return Scope()
    return Scope(**p.parse_keys(p.mapping(raw, path, file), _SCOPE_KEYS, path, file))


def _heuristics(known: Collection[str] | None) -> p.Parser:
    def parse(value: Any) -> frozenset[str]:
        names = p.string_set(value)
        unknown = sorted(names - set(known)) if known is not None else []
        if unknown:
            raise ValueError(
                f"unknown heuristic {unknown[0]!r} (known: {', '.join(sorted(known or ()))})"
            )
        return names

    return parse


def _when_parsers(known: Collection[str] | None) -> dict[str, p.Parser]:
    return {
        "min_severity": p.optional(p.severity),
        "heuristics": p.optional(_heuristics(known)),
        "regression": p.boolean,
        "failed": p.boolean,
        "cost_spike_pct": p.optional(p.positive_number),
        "deadline": p.optional(p.duration_ms),
    }


def _when(raw: Any, path: str, file: str | None, known: Collection[str] | None) -> When:
    v = p.parse_keys(p.mapping(raw, path, file), _when_parsers(known), path, file)
    if "deadline" in v:
        v["deadline_ms"] = v.pop("deadline")
    when = When(**v)
    if when.heuristics is not None and when.min_severity is None:
        raise ConfigError(file, f"{path}.heuristics", "needs min_severity (the findings' level)")
    if (
        when.min_severity is None
        and not (when.regression or when.failed)
        and (when.cost_spike_pct is None and when.deadline_ms is None)
    ):
        raise ConfigError(
            file,
            path,
            "enables no trigger (set min_severity, regression, failed, cost_spike_pct or deadline)",
        )
    return when


def _channel_refs(value: Any, known: set[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError("expected a non-empty list of channel names")
    for ref in value:
        if ref not in known:
            raise ValueError(
                f"no channel named {ref!r} (known: {', '.join(sorted(known)) or 'none'})"
            )
    if len(set(value)) != len(value):
        raise ValueError("a channel is listed twice")
    return tuple(value)


def _rule_parsers(channels: p.Parser) -> dict[str, p.Parser]:
    return {
        "name": p.name,
        "scope": lambda v: v,
        "when": lambda v: v,
        "channels": channels,
        "max_per_hour": p.optional(p.integer_in(1, 10_000)),
    }


def _digest_parsers(channels: p.Parser) -> dict[str, p.Parser]:
    return {
        "name": p.name,
        "scope": lambda v: v,
        "every": p.one_of("day", "week"),
        "at": p.clock_time,
        "timezone": p.timezone,
        "weekday": p.weekday,
        "channels": channels,
    }


def _mute_parsers(known: Collection[str] | None, tz: Any) -> dict[str, p.Parser]:
    return {
        "name": compile_safe,
        "heuristics": _heuristics(known),
        "app_id": p.string_set,
        "server": p.string_set,
        "until": lambda v: p.until(v, tz),
        "timezone": lambda v: tz,
        "reason": p.optional(p.string),
    }


_DELIVERY_PARSERS: dict[str, p.Parser] = {
    "max_attempts": p.integer_in(1, 100),
    "backoff_base_s": p.positive_number,
    "backoff_cap_s": p.positive_number,
    "lease_s": p.positive_number,
}


def _unique(names: list[str], what: str, file: str | None) -> None:
    seen: set[str] = set()
    for i, n in enumerate(names):
        if n in seen:
            raise ConfigError(file, f"{ROOT}.{what}[{i}].name", f"duplicate name {n!r}")
        seen.add(n)


def parse_notifications(
    raw: Any, *, file: str | None = None, known_heuristics: Collection[str] | None = None
) -> NotificationSettings | None:
    """Validate the ``notifications`` mapping (None: notifications are off)."""
    if raw is None:
        return None
    m = p.mapping(raw, ROOT, file)
    sections = {"base_url", "channels", "rules", "digests", "mutes", "delivery"}
    for key in m:
        if key not in sections:
            raise ConfigError(
                file, f"{ROOT}.{key}", f"unknown key (known: {', '.join(sorted(sections))})"
            )
    if "base_url" not in m:
        raise ConfigError(file, f"{ROOT}.base_url", "missing (the links in messages start with it)")
    try:
        base_url = p.http_url(m["base_url"])
    except ValueError as exc:
        raise ConfigError(file, f"{ROOT}.base_url", str(exc)) from None
    channels = tuple(
        _channel(c, f"{ROOT}.channels[{i}]", file)
        for i, c in enumerate(p.items(m.get("channels"), f"{ROOT}.channels", file))
    )
    _unique([c.name for c in channels], "channels", file)
    refs = {c.name for c in channels}
    chans = lambda v: _channel_refs(v, refs)  # noqa: E731
    rules = []
    for i, r in enumerate(p.items(m.get("rules"), f"{ROOT}.rules", file)):
        path = f"{ROOT}.rules[{i}]"
        parsers = _rule_parsers(chans)
        v = p.parse_keys(
            p.mapping(r, path, file), parsers, path, file, ("name", "when", "channels")
        )
        v["scope"] = _scope(v.get("scope"), f"{path}.scope", file)
        v["when"] = _when(v["when"], f"{path}.when", file, known_heuristics)
        rules.append(Rule(**v))
    _unique([r.name for r in rules], "rules", file)
    digests = []
    for i, d in enumerate(p.items(m.get("digests"), f"{ROOT}.digests", file)):
        path = f"{ROOT}.digests[{i}]"
        parsers = _digest_parsers(chans)
        v = p.parse_keys(p.mapping(d, path, file), parsers, path, file, ("name", "channels"))
        if "weekday" in v and v.get("every", "day") != "week":
            raise ConfigError(file, f"{path}.weekday", "only with every: week")
        v["scope"] = _scope(v.get("scope"), f"{path}.scope", file)
        digests.append(DigestSpec(**v))
    _unique([d.name for d in digests], "digests", file)
    mutes = tuple(
        _mute(x, i, file, known_heuristics)
        for i, x in enumerate(p.items(m.get("mutes"), f"{ROOT}.mutes", file))
    )
    delivery = Delivery()
    if m.get("delivery") is not None:
        path = f"{ROOT}.delivery"
        raw_delivery = p.mapping(m["delivery"], path, file)
        delivery = Delivery(**p.parse_keys(raw_delivery, _DELIVERY_PARSERS, path, file))
    longest = max((_longest_send_s(c) for c in channels), default=0.0)
    if delivery.lease_s <= longest:
        raise ConfigError(
            file, f"{ROOT}.delivery.lease_s",
            f"must exceed the longest send ({longest:g} s), or a send still running would be "
            "taken for an interrupted one and sent twice",
        )  # fmt: skip
    return NotificationSettings(base_url, channels, tuple(rules), tuple(digests), mutes, delivery)


def _longest_send_s(c: Channel) -> float:
    """Every send ends by its channel's deadline (a timer shuts the socket down)."""
    return c.deadline_s


def _mute(raw: Any, i: int, file: str | None, known: Collection[str] | None) -> Mute:
    path = f"{ROOT}.mutes[{i}]"
    m = p.mapping(raw, path, file)
    try:
        tz = p.timezone(m.get("timezone", "UTC"))
    except ValueError as exc:
        raise ConfigError(file, f"{path}.timezone", str(exc)) from None
    v = p.parse_keys(m, _mute_parsers(known, tz), path, file, ("until",))
    v.pop("timezone", None)
    if not any(k in v for k in ("name", "heuristics", "app_id")):
        raise ConfigError(file, path, "mutes nothing: give name, heuristics or app_id")
    return Mute(label=f"mutes[{i}]", **v)


def check(
    settings: NotificationSettings,
    environ: Mapping[str, str],
    known_heuristics: Collection[str] | None = None,
) -> list[str]:
    """Problems that would stop or silence a send (``sparkscope notify --check``): each secret's
    variable must be set, and every heuristic a rule or mute names must exist."""
    problems = []
    for c in settings.channels:
        for ref in secrets_of(c):
            try:
                ref.value(environ)
            except MissingSecret as exc:
                problems.append(f"channel {c.name}: {exc}")
    if known_heuristics is not None:
        named = [(f"rule {r.name}", r.when.heuristics) for r in settings.rules]
        named += [(f"mute {m.label}", m.heuristics) for m in settings.mutes]
        for where, names in named:
            for unknown in sorted((names or frozenset()) - set(known_heuristics)):
                problems.append(f"{where}: no heuristic named {unknown!r}")
    return problems


def documented_keys() -> list[str]:
    """Every key the section accepts, dotted (``notifications.channels[].smtp_host``): what the
    user guide must document (tests/test_docs.py checks it)."""
    keys = [f"{ROOT}.base_url"]
    channel_keys = {"name", "type"} | {k for keys_ in _CHANNEL_KEYS.values() for k in keys_}
    keys += [f"{ROOT}.channels[].{k}" for k in sorted(channel_keys)]
    keys += [f"{ROOT}.rules[].{k}" for k in _rule_parsers(p.string)]
    keys += [f"{ROOT}.rules[].scope.{k}" for k in _SCOPE_KEYS]
    keys += [f"{ROOT}.rules[].when.{k}" for k in _when_parsers(None)]
    keys += [f"{ROOT}.digests[].{k}" for k in _digest_parsers(p.string)]
    keys += [f"{ROOT}.mutes[].{k}" for k in _mute_parsers(None, None)]
    keys += [f"{ROOT}.delivery.{k}" for k in _DELIVERY_PARSERS]
    return keys
