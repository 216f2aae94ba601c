from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkscope.config.notifications.model import EmailChannel, SlackChannel, WebhookChannel
from sparkscope.config.notifications.section import check, parse_notifications
from sparkscope.config.parsing import ConfigError

EXAMPLE = Path(__file__).with_name("example.yaml")


def example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())["notifications"]


def error(raw: Any, **kw: Any) -> str:
    with pytest.raises(ConfigError) as info:
        parse_notifications(raw, **kw)
    return str(info.value)


def test_the_issue_example_parses() -> None:
    s = parse_notifications(example(), file="sparkscope.yaml")
    assert s is not None
    mail, slack, hook = s.channels
    assert isinstance(mail, EmailChannel) and mail.security == "starttls" and mail.smtp_port == 587
    assert mail.password is not None and mail.password.env == "SPARKSCOPE_SMTP_PASSWORD"
    assert isinstance(slack, SlackChannel) and slack.webhook_url.env == "SPARKSCOPE_SLACK_URL"
    assert isinstance(hook, WebhookChannel) and hook.url == "https://hooks.example.com/spark"
    (rule,) = s.rules
    assert rule.scope.user == {"etl"} and rule.scope.queue is None
    assert rule.scope.name is not None and rule.scope.name.search("nightly_orders")
    assert rule.when.min_severity == 3 and rule.when.deadline_ms == 2 * 3600 * 1000
    assert rule.when.cost_spike_pct == 50.0 and rule.max_per_hour == 20
    (digest,) = s.digests
    assert digest.at == dt.time(7, 0) and str(digest.timezone) == "Europe/Prague"
    (mute,) = s.mutes
    assert mute.until == dt.datetime(2027, 2, 1, tzinfo=dt.UTC)  # through the end of the 31st
    assert parse_notifications(None) is None


def test_no_secret_value_is_held() -> None:
    s = parse_notifications(example())
    assert "SMTP_PASSWORD" in repr(s) and "hooks.example.com" in repr(s)  # names, not values


def _with(path: str, value: Any) -> dict[str, Any]:
    raw = example()
    node: Any = raw
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if k.isdigit() else node[k]
    node[keys[-1]] = value
    return raw


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("channels.0.smtp_port", "x",
         "sparkscope.yaml: notifications.channels[0].smtp_port: expected an integer 1..65535, got 'x'"),
        ("channels.0.smtp_port", 70000,
         "sparkscope.yaml: notifications.channels[0].smtp_port: expected an integer 1..65535, got 70000"),
        ("channels.0.tls", True,
         "sparkscope.yaml: notifications.channels[0].tls: starttls and tls (implicit TLS) exclude each other"),
        ("channels.0.to", ["not-an-address"],
         "sparkscope.yaml: notifications.channels[0].to: expected an e-mail address, got 'not-an-address'"),
        ("channels.1.type", "teams",
         "sparkscope.yaml: notifications.channels[1].type: expected one of email, slack, webhook, got 'teams'"),
        ("rules.0.channels", ["nope"],
         "sparkscope.yaml: notifications.rules[0].channels: no channel named 'nope' "
         "(known: data-eng-mail, data-eng-slack, oncall-hook)"),
        ("rules.0.when", {"regression": False},
         "sparkscope.yaml: notifications.rules[0].when: enables no trigger (set min_severity, "
         "regression, failed, cost_spike_pct or deadline)"),
        ("rules.0.when", {"heuristics": ["stage_skew"]},
         "sparkscope.yaml: notifications.rules[0].when.heuristics: needs min_severity (the findings' level)"),
        ("rules.0.when", {"min_severity": "bad"},
         "sparkscope.yaml: notifications.rules[0].when.min_severity: expected one of low, moderate, "
         "severe, critical, got 'bad'"),
        ("rules.0.when", {"failed": True, "deadline": "soon"},
         "sparkscope.yaml: notifications.rules[0].when.deadline: expected a duration such as 90s, "
         "30m, 2h, got 'soon'"),
        ("rules.0.max_per_hour", 0,
         "sparkscope.yaml: notifications.rules[0].max_per_hour: expected an integer 1..10000, got 0"),
        ("rules.0.scope", {"name": "(a+)+$"},
         "sparkscope.yaml: notifications.rules[0].scope.name: nested quantifiers such as (a+)+ can "
         "take exponential time; write the pattern without a variable quantifier inside a repeated group"),
        ("rules.0.scope", {"name": "([a-z"},
         "sparkscope.yaml: notifications.rules[0].scope.name: not a valid regular expression: "
         "unterminated character set at position 1"),
        ("rules.0.scope", {"team": "x"},
         "sparkscope.yaml: notifications.rules[0].scope.team: unknown key (known: user, queue, name, server)"),
        ("digests.0.at", 420,
         'sparkscope.yaml: notifications.digests[0].at: expected a time "HH:MM", got 420 '
         "(quote it: YAML reads unquoted 12:30 as a number)"),
        ("digests.0.timezone", "Mars/Olympus",
         "sparkscope.yaml: notifications.digests[0].timezone: unknown time zone 'Mars/Olympus' "
         "(use an IANA name such as Europe/Prague or UTC)"),
        ("digests.0.every", "month",
         "sparkscope.yaml: notifications.digests[0].every: expected one of day, week, got 'month'"),
        ("digests.0.weekday", "monday",
         "sparkscope.yaml: notifications.digests[0].weekday: only with every: week"),
        ("mutes.0.until", "next year",
         "sparkscope.yaml: notifications.mutes[0].until: expected a date YYYY-MM-DD, got 'next year'"),
        ("base_url", "sparkscope.example.com",
         "sparkscope.yaml: notifications.base_url: expected an http(s):// URL, got 'sparkscope.example.com'"),
        ("colour", "blue",
         "sparkscope.yaml: notifications.colour: unknown key (known: base_url, channels, delivery, "
         "digests, mutes, rules)"),
    ],
)  # fmt: skip
def test_errors_are_one_line_naming_the_key(path: str, value: Any, message: str) -> None:
    text = error(_with(path, value), file="sparkscope.yaml")
    assert text == message and "\n" not in text


def test_a_secret_in_the_file_is_refused_without_echoing_it() -> None:
    raw = example()
    raw["channels"][0]["password"] = "hunter2-real-password"
    text = error(raw)
    assert text.startswith("notifications.channels[0].password: unknown key: secrets come from "
                           "the environment, use password_env (known: name, type, smtp_host")  # fmt: skip
    assert "hunter2" not in text
    raw = example()
    raw["channels"][1]["webhook_url_env"] = "https://hooks.slack.com/services/T0/B0/XXXXSECRET"
    text = error(raw)
    assert text == (
        "notifications.channels[1].webhook_url_env: expected the name of an environment variable "
        "(letters, digits, '_'); the secret itself never goes in the file"
    )


def test_cross_key_rules() -> None:
    raw = example()
    raw["channels"].append(dict(raw["channels"][1]))
    assert error(raw) == "notifications.channels[3].name: duplicate name 'data-eng-slack'"
    raw = example()
    del raw["channels"][0]["password_env"]
    assert (
        error(raw)
        == "notifications.channels[0].password_env: username and password_env go together"
    )
    raw = example()
    raw["channels"][0]["starttls"] = False
    assert error(raw) == (
        "notifications.channels[0].starttls: refusing to send a password without TLS "
        "(set starttls: true or tls: true)"
    )
    raw = example()
    raw["channels"][2]["url_env"] = "HOOK_URL"
    assert error(raw) == "notifications.channels[2].url: give exactly one of url and url_env"
    raw = example()
    del raw["channels"][2]["secret_env"]
    assert (
        error(raw) == "notifications.channels[2].secret_env: missing (webhooks are always signed)"
    )
    raw = example()
    del raw["base_url"]
    assert error(raw) == "notifications.base_url: missing (the links in messages start with it)"
    raw = example()
    raw["delivery"] = {"lease_s": 30}
    assert error(raw) == (
        "notifications.delivery.lease_s: must exceed the longest send (120 s), or a send still "
        "running would be taken for an interrupted one and sent twice"
    )
    raw = example()
    raw["mutes"] = [{"until": "2027-01-01"}]
    assert error(raw) == "notifications.mutes[0]: mutes nothing: give name, heuristics or app_id"


def test_implicit_tls_defaults_to_port_465_and_heuristics_can_be_checked() -> None:
    raw = example()
    ch = raw["channels"][0]
    del ch["smtp_port"], ch["starttls"]
    ch["tls"] = True
    s = parse_notifications(raw)
    assert s is not None and isinstance(s.channels[0], EmailChannel)
    assert s.channels[0].security == "tls" and s.channels[0].smtp_port == 465
    raw = example()
    raw["mutes"][0]["heuristics"] = ["confg"]
    assert error(raw, known_heuristics={"config", "stage_skew"}) == (
        "notifications.mutes[0].heuristics: unknown heuristic 'confg' (known: config, stage_skew)"
    )


def test_until_accepts_a_date_time_with_offset_and_a_mute_timezone() -> None:
    raw = example()
    raw["mutes"][0]["until"] = "2027-01-31T18:00:00+01:00"
    s = parse_notifications(raw)
    assert s is not None and s.mutes[0].until == dt.datetime(2027, 1, 31, 17, tzinfo=dt.UTC)
    raw["mutes"][0].update(until=dt.date(2027, 1, 31), timezone="Europe/Prague")
    s = parse_notifications(raw)
    assert s is not None and s.mutes[0].until == dt.datetime(2027, 1, 31, 23, tzinfo=dt.UTC)
    raw["mutes"][0]["until"] = "2027-01-31T18:00:00"
    assert "needs an offset" in error(raw)


def test_check_names_every_missing_secret_and_never_crashes() -> None:
    s = parse_notifications(example())
    assert s is not None
    assert check(s, {}) == [
        "channel data-eng-mail: environment variable SPARKSCOPE_SMTP_PASSWORD is not set",
        "channel data-eng-slack: environment variable SPARKSCOPE_SLACK_URL is not set",
        "channel oncall-hook: environment variable SPARKSCOPE_HOOK_SECRET is not set",
    ]
    env = {
        "SPARKSCOPE_SMTP_PASSWORD": "p",
        "SPARKSCOPE_SLACK_URL": "  ",
        "SPARKSCOPE_HOOK_SECRET": "s",
    }
    assert check(s, env) == [
        "channel data-eng-slack: environment variable SPARKSCOPE_SLACK_URL is not set"
    ]
