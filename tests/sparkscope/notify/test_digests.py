"""Digests on the recorded corpora: what `sparkscope notify` writes once a period has ended, with
its exact contents, the figures recounted from the tables, once per period and channel."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sparkscope.config.notifications.model import NotificationSettings
from sparkscope.config.notifications.section import parse_notifications
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.notify import NotifyOutbox
from sparkscope.notify.digests import DigestContext, enqueue_due
from sparkscope.notify.events import Digest, from_json
from sparkscope.notify.messages import digest_doc
from sparkscope.notify.payload import webhook_payload
from sparkscope.notify.render import plain_text
from tests.sparkscope.notify.corpus import BASE_URL

EXPECTED = Path(__file__).with_name("expected")
UTC = dt.UTC


def settings() -> NotificationSettings:
    s = parse_notifications(
        {
            "base_url": BASE_URL,
            "channels": [
                {
                    "name": "hook",
                    "type": "webhook",
                    "url": "http://127.0.0.1:9/x",
                    "secret_env": "X",
                },
                {
                    "name": "mail",
                    "type": "email",
                    "smtp_host": "127.0.0.1",
                    "starttls": False,
                    "from": "s@example.com",
                    "to": "t@example.com",
                },
            ],  # fmt: skip
            "digests": [
                {
                    "name": "evening",
                    "every": "day",
                    "at": "18:00",
                    "timezone": "UTC",
                    "channels": ["hook", "mail"],
                },
                {
                    "name": "recurring",
                    "scope": {"server": "recurring-events"},
                    "every": "day",
                    "at": "19:25",
                    "timezone": "Europe/Prague",
                    "channels": ["hook"],
                },
            ],  # fmt: skip
        }
    )
    assert s is not None
    return s


CTX = DigestContext(BASE_URL, core_hour_price=0.05, currency="EUR")


def digests(session: Session, name: str) -> list[NotifyOutbox]:
    return list(
        session.scalars(
            select(NotifyOutbox).where(NotifyOutbox.digest == name).order_by(NotifyOutbox.id)
        )
    )


def test_digests_of_the_recorded_corpora(corpus_url: str) -> None:
    engine = make_engine(corpus_url)
    factory = make_sessionmaker(engine)
    s = settings()
    written = enqueue_due(factory, s, CTX, dt.datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    assert [name for name, _ in written] == ["evening", "recurring"]
    with factory() as session:
        evening = digests(session, "evening")
        assert [r.channel for r in evening] == ["hook", "mail"]
        assert len({r.event_id for r in evening}) == 2  # one message per channel
        body = from_json(evening[0].payload).body
        assert isinstance(body, Digest)
        text = plain_text(digest_doc(body))
        assert text == (EXPECTED / "evening-digest.txt").read_text()
        assert (
            evening[0].summary
            == "evening digest for all applications: 0 critical, 1 severe, 1 failed"
        )
        # the figures are the tables' own
        start, end = (
            int(dt.datetime(2026, 11, day, 18, tzinfo=UTC).timestamp() * 1000) for day in (28, 29)
        )
        ended = (Application.end_time_ms >= start) & (Application.end_time_ms < end)
        assert body.period_start == dt.datetime(2026, 11, 28, 18, tzinfo=UTC)
        assert body.apps_total == session.scalar(select(func.count()).where(ended))
        by_severity = dict(
            session.execute(
                select(Application.worst_severity, func.count())
                .where(ended, Application.worst_severity > 0)
                .group_by(Application.worst_severity)
            ).all()
        )
        assert dict(body.counts) == by_severity
        total = session.scalar(select(func.sum(Application.allocated_core_hours)).where(ended))
        assert body.core_hours == round(total, 6)
        assert body.money == body.core_hours * 0.05 and body.previous_core_hours == 0.0
        report = webhook_payload(from_json(evening[0].payload))["digest_report"]
        assert report["failures"] == [
            {
                "app_id": body.failures[0].app_id,
                "name": "crashing_importer",
                "server": "spark-events",
                "user": "root",
                "root_cause": "ValueError: invalid literal for int() with base 10: 'corrupt'",
                "url": f"{BASE_URL}/apps/{body.failures[0].app_id}?server=spark-events",
            }
        ]
    # the next evening: the recurring digest's period holds the later runs, against the earlier
    later = enqueue_due(factory, s, CTX, dt.datetime(2026, 11, 30, 18, 30, tzinfo=UTC))
    assert [name for name, _ in later] == ["evening", "recurring"]
    with factory() as session:
        first, recurring = digests(session, "recurring")
        assert from_json(first.payload).body.apps_total == 18
        body = from_json(recurring.payload).body
        assert plain_text(digest_doc(body)) == (EXPECTED / "recurring-digest.txt").read_text()
        servers = session.scalar(
            select(func.count())
            .select_from(Application)
            .join(HistoryServer)
            .where(HistoryServer.name == "recurring-events")
        )
        assert body.apps_total < servers  # its period holds some of them, the one before the rest
    engine.dispose()


def test_a_period_is_sent_once_and_missed_periods_are_not_caught_up(corpus_url: str) -> None:
    engine = make_engine(corpus_url)
    factory = make_sessionmaker(engine)
    s = settings()
    first = dt.datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    assert len(enqueue_due(factory, s, CTX, first)) == 2
    assert enqueue_due(factory, s, CTX, first + dt.timedelta(hours=6)) == []  # same periods
    # three days later: only the latest ended period of each digest, empty
    later = enqueue_due(factory, s, CTX, dt.datetime(2026, 12, 3, 18, 30, tzinfo=UTC))
    assert [(n, p.start) for n, p in later] == [
        ("evening", dt.datetime(2026, 12, 2, 18, tzinfo=UTC)),
        ("recurring", dt.datetime(2026, 12, 2, 18, 25, tzinfo=UTC)),
    ]
    with factory() as session:
        last = from_json(digests(session, "evening")[-1].payload).body
        assert (last.apps_total, dict(last.counts), last.core_hours) == (0, {}, 0.0)
        assert len(digests(session, "evening")) == 4  # two periods x two channels
    engine.dispose()
