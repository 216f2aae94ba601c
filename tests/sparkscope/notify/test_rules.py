from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
import yaml

from sparkscope.config.notifications.model import Delivery
from sparkscope.config.notifications.section import parse_notifications
from sparkscope.notify import outbox
from sparkscope.notify.events import from_json
from sparkscope.notify.rules import (
    alert_row,
    decide,
    decide_many,
    fold_row,
    mute_for,
    scope_matches,
    trigger,
)
from tests.sparkscope.notify.samples import T0, finding
from tests.sparkscope.notify.test_settings import EXAMPLE

UTC = dt.UTC


def settings(**changes: object):  # type: ignore[no-untyped-def]
    raw = yaml.safe_load(EXAMPLE.read_text())["notifications"]
    raw.update(changes)
    s = parse_notifications(raw)
    assert s is not None
    return s


def test_scope_keys_all_must_match() -> None:
    rule = settings().rules[0]
    assert scope_matches(rule.scope, "etl", "any", "nightly_orders", "prod")
    assert not scope_matches(rule.scope, "ana", "any", "nightly_orders", "prod")
    assert not scope_matches(rule.scope, "etl", "any", "hourly_orders", "prod")
    assert not scope_matches(rule.scope, None, None, "nightly_orders", "prod")  # user unknown


def test_triggers() -> None:
    when = settings().rules[0].when  # severe+, regression, failed, cost 50%, deadline 2h
    assert trigger(when, finding(severity=3)) == (True, None)
    assert trigger(when, finding(severity=2)) == (False, None)
    assert trigger(when, finding(kind="regression")) == (True, None)
    assert trigger(when, finding(kind="failure")) == (True, None)
    assert trigger(when, finding(kind="cost_spike", cost_core_hours=3.0, baseline_core_hours=2.0)) == (
        True, "3.00 core-hours, 50% over the recent median of 2.00 (alert from 50%).")  # fmt: skip
    assert (
        trigger(when, finding(kind="cost_spike", cost_core_hours=2.9, baseline_core_hours=2.0))[0]
        is False
    )
    assert trigger(when, finding(kind="cost_spike", baseline_core_hours=None))[0] is False
    assert trigger(when, finding(kind="deadline", duration_ms=3 * 3600e3, forecast=True)) == (
        True, "It is forecast to take 3.0 h, past the deadline of 2.0 h.")  # fmt: skip
    assert trigger(when, finding(kind="deadline", duration_ms=2 * 3600e3))[0] is False  # not past


def test_heuristics_filter_findings() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())["notifications"]
    raw["rules"][0]["when"] = {"min_severity": "low", "heuristics": ["disk_spill"]}
    when = parse_notifications(raw).rules[0].when  # type: ignore[union-attr]
    assert trigger(when, finding(heuristic="disk_spill", severity=1))[0]
    assert not trigger(when, finding(heuristic="stage_skew", severity=4))[0]
    assert not trigger(when, finding(kind="failure"))[0]  # failed: not enabled


def test_mutes_by_name_heuristic_app_and_date() -> None:
    s = settings(mutes=[
        {"name": "^legacy_", "heuristics": ["config"], "until": "2027-01-31"},
        {"app_id": ["app-9"], "until": "2026-04-01"},
    ])  # fmt: skip
    legacy = finding(app_name="legacy_load", heuristic="config")
    assert mute_for(s.mutes, legacy, T0) is s.mutes[0]
    assert mute_for(s.mutes, finding(app_name="legacy_load", heuristic="disk_spill"), T0) is None
    assert mute_for(s.mutes, finding(app_name="legacy_load", kind="failure"), T0) is None
    assert mute_for(s.mutes, legacy, dt.datetime(2027, 1, 31, 23, 59, tzinfo=UTC)) is s.mutes[0]
    assert mute_for(s.mutes, legacy, dt.datetime(2027, 2, 1, tzinfo=UTC)) is None  # expired
    assert mute_for(s.mutes, finding(app_id="app-9", kind="failure"), T0) is s.mutes[1]


def test_decide_one_row_per_channel_and_muted_is_recorded() -> None:
    s = settings()
    decisions = decide(s, finding(), T0, {})
    assert [(d.action, d.channel) for d in decisions] == [
        ("send", "data-eng-slack"),
        ("send", "oncall-hook"),
    ]
    assert decisions[0].key == f"alert:{finding().occurrence_id}:data-eng-slack"
    s = settings(mutes=[{"name": "^nightly_", "until": "2027-01-01"}])
    muted = decide(s, finding(), T0, {})
    assert [(d.action, d.channel, d.mute) for d in muted] == [
        ("muted", "data-eng-slack", "mutes[0]"),
        ("muted", "oncall-hook", "mutes[0]"),
    ]
    rows = [alert_row(d, finding(), T0) for d in muted]
    assert [(r.state, r.last_error) for r in rows] == [("muted", "muted by mutes[0]")] * 2
    assert decide(s, finding(user="ana"), T0, {}) == []  # out of scope: nothing at all


def test_two_rules_naming_one_channel_send_one_message_there() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())["notifications"]
    raw["rules"].append(
        {
            "name": "all-severe",
            "when": {"min_severity": "severe"},
            "channels": ["oncall-hook", "data-eng-mail"],
        }
    )
    s = parse_notifications(raw)
    assert s is not None
    decisions = decide(s, finding(), T0, {})
    assert [(d.rule, d.channel) for d in decisions] == [
        ("etl-severe", "data-eng-slack"),
        ("etl-severe", "oncall-hook"),
        ("all-severe", "data-eng-mail"),  # the hook already has it from the first rule
    ]
    # out of the first rule's scope, the second rule sends to both of its channels
    other = decide(s, finding(user="ana"), T0, {})
    assert [(d.rule, d.channel) for d in other] == [
        ("all-severe", "oncall-hook"),
        ("all-severe", "data-eng-mail"),
    ]


def test_deciding_again_changes_nothing() -> None:
    s = settings()
    rows = {d.key for d in decide(s, finding(), T0, {}) if d.key}
    recent = {"etl-severe": [T0] * 20}  # even with the rule over its limit now
    assert decide(s, finding(), T0, recent, existing_keys=rows) == []


def test_a_burst_over_max_per_hour_folds_into_one_message_per_channel() -> None:
    s = settings()
    rule = s.rules[0]
    events = [finding(app_id=f"app-{i:02}", severity=3 + (i % 2)) for i in range(27)]
    now = dt.datetime(2026, 3, 29, 4, 20, tzinfo=UTC)
    decided = decide_many(s, events, now, {"etl-severe": [now - dt.timedelta(minutes=70)] * 50})
    sends = [d for _, d in decided if d.action == "send"]
    folds = [(e, d) for e, d in decided if d.action == "fold"]
    assert len(sends) == 20 * 2 and len(folds) == 7 * 2  # 20 singles per channel, then folding
    rows: dict[str, outbox.OutboxRecord] = {}
    for e, d in folds:
        assert d.key and d.key.startswith("folded:etl-severe:2026-03-29T04:00:00Z:")
        rows[d.key] = fold_row(rows.get(d.key), d, e, rule, now)
    assert len(rows) == 2  # one folded message per channel
    row = rows["folded:etl-severe:2026-03-29T04:00:00Z:oncall-hook"]
    assert row.next_attempt_at == dt.datetime(2026, 3, 29, 5, 0, tzinfo=UTC)  # end of the hour
    folded = from_json(row.payload).body
    assert folded.count == 7 and sum(folded.by_severity.values()) == 7
    assert [x.severity for x in folded.top][:3] == [4, 4, 4]
    # the same alert folded twice counts once
    e, d = folds[-1]
    assert from_json(fold_row(row, d, e, rule, now).payload).body.count == 7


def test_the_trailing_hour_frees_up() -> None:
    s = settings()
    now = T0
    recent = {
        "etl-severe": [now - dt.timedelta(minutes=61)] * 20 + [now - dt.timedelta(minutes=59)] * 19
    }
    assert {d.action for d in decide(s, finding(), now, recent)} == {"send"}
    recent["etl-severe"].append(now)
    assert {d.action for d in decide(s, finding(), now, recent)} == {"fold"}


def test_alert_row_holds_what_is_rendered() -> None:
    s = settings()
    e = finding(kind="cost_spike", cost_core_hours=4.0, baseline_core_hours=2.0)
    d = decide(s, e, T0, {})[0]
    row = alert_row(d, e, T0)
    env = from_json(row.payload)
    assert env.event_id == row.event_id == outbox.delivery_id(row.key)
    assert env.reason == "4.00 core-hours, 100% over the recent median of 2.00 (alert from 50%)."
    assert (row.state, row.next_attempt_at, row.occurrence_id) == ("pending", T0, e.occurrence_id)
    assert row.summary == "[severe] Stage 12 skew: 14.2 min lost to stragglers — nightly_orders"


def test_a_folded_alert_keeps_a_row_of_its_own_that_is_never_sent() -> None:
    s = settings()
    now = T0
    e = finding()
    (d, _) = decide(s, e, now, {"etl-severe": [now] * 20})
    assert d.action == "fold"
    row = alert_row(d, e, now)
    assert row.key == outbox.alert_key(e.occurrence_id, d.channel or "")
    assert (row.state, row.last_error) == ("folded", f"folded into {d.key}")


def test_backoff_doubles_with_equal_jitter_up_to_its_cap() -> None:
    policy = Delivery(max_attempts=4, backoff_base_s=60, backoff_cap_s=300)
    assert [outbox.backoff_s(n, policy, 0.0) for n in range(1, 6)] == [30, 60, 120, 150, 150]
    assert [outbox.backoff_s(n, policy, 0.999999) for n in range(1, 6)] == [
        pytest.approx(v, abs=1e-3) for v in (60, 120, 240, 300, 300)
    ]


def test_settle_moves_a_claim_to_its_next_state() -> None:
    policy = Delivery(max_attempts=2, backoff_base_s=60)
    rec = outbox.OutboxRecord("k", "alert", "c", {}, "s", T0, T0, state="sending", attempts=1)
    failed = outbox.settle(rec, outbox.SendOutcome("retryable", "HTTP 503", 600.0), T0, policy, 0.0)
    assert (failed.state, failed.last_error) == ("failed", "HTTP 503")
    assert failed.next_attempt_at == T0 + dt.timedelta(seconds=600)  # Retry-After over backoff
    last = dataclasses.replace(rec, attempts=2)
    dead = outbox.settle(last, outbox.SendOutcome("retryable", "HTTP 503"), T0, policy, 0.0)
    assert (dead.state, dead.last_error) == ("dead", "gave up after 2 attempts: HTTP 503")
    gone = outbox.settle(rec, outbox.SendOutcome("permanent", "HTTP 404"), T0, policy, 0.0)
    assert (gone.state, gone.attempts) == ("dead", 1)
    sent = outbox.settle(rec, outbox.SendOutcome("sent", "HTTP 200"), T0, policy, 0.0)
    assert (sent.state, sent.sent_at) == ("sent", T0)
    with pytest.raises(ValueError):
        outbox.settle(sent, outbox.SendOutcome("sent"), T0, policy, 0.0)
