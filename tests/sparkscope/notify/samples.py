"""Fixed inputs shared by the tests (one hostile: names come from other people's jobs)."""

from __future__ import annotations

import datetime as dt

from sparkscope.notify.events import (
    AlertEvent,
    Digest,
    DigestApp,
    DigestFailure,
    DigestRegression,
    Envelope,
    Link,
)
from sparkscope.present.links import absolute, app_path, history_path

BASE = "https://sparkscope.example.com"
T0 = dt.datetime(2026, 3, 28, 23, 40, tzinfo=dt.UTC)
HOSTILE_NAME = "nightly_<script>alert(\"x\")</script> & 'co' <!channel>"


def finding(**kw: object) -> AlertEvent:
    values: dict = dict(
        kind="finding",
        app_id="application_1711_0042",
        app_name="nightly_orders",
        server="prod",
        severity=3,
        title="Stage 12 skew: 14.2 min lost to stragglers",
        occurred_at=T0,
        user="etl",
        queue="batch",
        heuristic="stage_skew",
        recurring_key="nightly_orders",
        cost_core_hours=6.5,
        wall_ms=852_000,
        cause="One key (customer_id=0) holds 38% of stage 12's shuffle input.",
        fix="Salt the join key or enable spark.sql.adaptive.skewJoin.enabled.",
        links=(
            Link("Application", absolute(BASE, app_path("application_1711_0042", "prod"))),
            Link("History", absolute(BASE, history_path("nightly_orders", "prod"))),
        ),
    )
    values.update(kw)
    return AlertEvent(**values)


def hostile() -> AlertEvent:
    return finding(
        app_name=HOSTILE_NAME,
        user='"><img src=x onerror=alert(1)>',
        title="<b>bold</b> & <i>title</i>",
        cause='cause with <tags> & "quotes"',
        fix="fix: <a href='javascript:alert(1)'>click</a>",
        links=(
            Link("Application", absolute(BASE, app_path('app"<1>', "prod"))),
            Link("Evil", "javascript:alert(1)"),
        ),
    )


def envelope(body: object = None, **kw: object) -> Envelope:
    values: dict = dict(
        event_id="0b7c4f0e-1111-5222-8333-444455556666",
        created_at=T0,
        channel="oncall-hook",
        body=body or finding(),
        rule="etl-severe",
    )
    values.update(kw)
    return Envelope(**values)


def digest() -> Digest:
    return Digest(
        name="morning",
        scope_text="queue analytics",
        period_start=dt.datetime(2026, 3, 28, 6, 0, tzinfo=dt.UTC),
        period_end=dt.datetime(2026, 3, 29, 5, 0, tzinfo=dt.UTC),
        timezone="Europe/Prague",
        apps_total=42,
        counts={4: 1, 3: 2, 2: 5, 1: 9},
        worst=(
            DigestApp(
                "app-1",
                "daily_revenue",
                "prod",
                4,
                "ana",
                12.25,
                1_500_000,
                "Raise spark.sql.shuffle.partitions to 800.",
                f"{BASE}/apps/app-1?server=prod",
            ),
            DigestApp(
                "app-2",
                "cohorts",
                "prod",
                3,
                "bo",
                3.5,
                300_000,
                None,
                f"{BASE}/apps/app-2?server=prod",
            ),
        ),  # fmt: skip
        regressions=(
            DigestRegression(
                "app-3",
                "daily_revenue",
                "prod",
                7_200_000,
                3_600_000,
                ("input grew 80%", "executors 20 -> 10"),
                f"{BASE}/apps/app-3",
            ),
        ),  # fmt: skip
        failures=(
            DigestFailure(
                "app-4",
                "export_<x>",
                "prod",
                "java.lang.OutOfMemoryError: Java heap space",
                "cy",
                f"{BASE}/apps/app-4",
            ),
        ),  # fmt: skip
        core_hours=120.5,
        previous_core_hours=100.0,
        links=(Link("Dashboard", f"{BASE}/"),),
    )
