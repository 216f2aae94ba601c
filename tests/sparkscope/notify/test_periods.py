from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from sparkscope.config.notifications.model import DigestSpec, Scope
from sparkscope.notify.periods import (
    boundary,
    due_period,
    latest_period,
    next_boundary,
    previous_period,
    scope_text,
)
from sparkscope.saferegex import compile_safe

PRAGUE = ZoneInfo("Europe/Prague")
UTC = dt.UTC


def spec(**kw: object) -> DigestSpec:
    values: dict = dict(name="morning", channels=("mail",), at=dt.time(7), timezone=PRAGUE)
    values.update(kw)
    return DigestSpec(**values)


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_morning_digest_stays_at_seven_local_across_spring_forward() -> None:
    s = spec()
    # 2026-03-29 02:00 CET -> 03:00 CEST: 07:00 local is 06:00 UTC before, 05:00 UTC after
    assert boundary(s, dt.date(2026, 3, 28)) == utc("2026-03-28T06:00")
    assert boundary(s, dt.date(2026, 3, 29)) == utc("2026-03-29T05:00")
    p = latest_period(s, utc("2026-03-29T05:00"))
    assert (p.start, p.end) == (utc("2026-03-28T06:00"), utc("2026-03-29T05:00"))
    assert p.end - p.start == dt.timedelta(hours=23)
    assert latest_period(s, utc("2026-03-29T04:59:59")).end == utc("2026-03-28T06:00")
    assert [b.astimezone(PRAGUE).hour for b in (p.start, p.end)] == [7, 7]


def test_and_across_fall_back() -> None:
    s = spec()
    p = latest_period(s, utc("2026-10-25T06:00"))  # 03:00 CEST -> 02:00 CET on the 25th
    assert (p.start, p.end) == (utc("2026-10-24T05:00"), utc("2026-10-25T06:00"))
    assert p.end - p.start == dt.timedelta(hours=25)


def test_a_local_time_in_the_gap_or_the_overlap_gives_one_boundary() -> None:
    s = spec(at=dt.time(2, 30))
    # 02:30 does not exist on 2026-03-29: the instant after the gap, 03:30 CEST
    spring = boundary(s, dt.date(2026, 3, 29))
    assert spring == utc("2026-03-29T01:30") and spring.astimezone(PRAGUE).hour == 3
    # 02:30 happens twice on 2026-10-25: the first time (CEST)
    assert boundary(s, dt.date(2026, 10, 25)) == utc("2026-10-25T00:30")
    days = [latest_period(s, utc(f"2026-10-{d}T12:00")) for d in (24, 25, 26)]
    assert len({p.end for p in days}) == 3  # one digest per day, none lost or doubled


def test_weekly_on_a_weekday() -> None:
    s = spec(every="week", weekday=0, at=dt.time(8, 30))
    p = latest_period(s, utc("2026-04-01T12:00"))  # a Wednesday
    assert (p.start, p.end) == (utc("2026-03-23T07:30"), utc("2026-03-30T06:30"))  # Mon CET / CEST
    assert p.end - p.start == dt.timedelta(days=7) - dt.timedelta(hours=1)
    assert next_boundary(s, utc("2026-04-01T12:00")) == utc("2026-04-06T06:30")
    assert previous_period(s, p).end == p.start


def test_due_period_only_once_and_only_the_latest() -> None:
    s = spec()
    now = utc("2026-03-30T05:10")
    p = due_period(s, now, None)
    assert p is not None and p.start == utc("2026-03-29T05:00")
    assert due_period(s, now, p.start) is None  # sent already
    assert due_period(s, utc("2026-03-31T05:00"), p.start) is not None  # the next one
    # nothing ran for three days: only the latest period is sent
    late = due_period(s, utc("2026-04-02T09:00"), p.start)
    assert late is not None and late.start == utc("2026-04-01T05:00")


def test_previous_period_for_cost_comparison_spans_the_switch() -> None:
    s = spec()
    p = latest_period(s, utc("2026-03-30T06:00"))
    prev = previous_period(s, p)
    assert (prev.start, prev.end) == (utc("2026-03-28T06:00"), utc("2026-03-29T05:00"))


def test_utc_digest_and_scope_text() -> None:
    s = spec(timezone=ZoneInfo("UTC"), at=dt.time(0, 0))
    p = latest_period(s, utc("2026-03-29T00:00"))
    assert (p.start, p.end) == (utc("2026-03-28T00:00"), utc("2026-03-29T00:00"))
    assert scope_text(Scope()) == "all applications"
    scope = Scope(
        user=frozenset({"b", "a"}), queue=frozenset({"analytics"}), name=compile_safe("^x")
    )
    assert scope_text(scope) == "user a, b; queue analytics; name ~ ^x"
