"""Deciding alerts in the pipeline: a real `sparkscope fetch` of the recorded corpora writes the
outbox rows its rules decide, in the transaction that takes the alerts step off the ledger; a
re-fetch or a re-analysis decides nothing new; alerts wait for the server's predictions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.cli.main import cli
from sparkscope.config.notifications.section import parse_notifications
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.notify import NotifyOutbox
from sparkscope.models.pipeline import PipelinePending
from sparkscope.notify.alerts import app_subject, decide_alerts
from sparkscope.notify.events import from_json
from sparkscope.notify.occurrences import Context
from sparkscope.pipeline import ledger
from sparkscope.pipeline.steps import ALERTS_WAIT_ATTEMPTS, QUEUED, Pipeline, QueuedStep
from sparkscope.present.links import absolute, app_path, history_path
from tests.sparkscope.notify.corpus import (
    BASE_URL,
    NOTIFICATIONS,
    SPARK_EVENTS,
    fetch,
    write_config,
)

HOOK_SUMMARIES = [
    "[severe] 1 of 5 jobs failed (20%); the last job (4) failed, so the application probably "
    "did too — crashing_importer",
    "[critical] failed: ValueError: invalid literal for int() with base 10: 'corrupt' — "
    "crashing_importer",
    # the run with adaptive execution turned off, slower than its interval: a regression
    "[severe] took 11 s, expected 8.7 s (+21%) — order_enrichment",
    "[moderate] cost 0.00545 core-hours against a recent median of 0.00327 — order_enrichment",
    "[moderate] cost 0.0057 core-hours against a recent median of 0.00375 — "
    "web_events_sorted_export",
    "[moderate] cost 0.00721 core-hours against a recent median of 0.00409 — store_revenue_rollup",
    "[moderate] cost 0.00765 core-hours against a recent median of 0.00458 — "
    "web_events_sorted_export",
    "[moderate] cost 0.00996 core-hours against a recent median of 0.00458 — "
    "web_events_sorted_export",
    "[moderate] cost 0.00804 core-hours against a recent median of 0.0053 — order_enrichment",
]


def rows(url: str) -> list[NotifyOutbox]:
    engine = make_engine(url)
    with Session(engine) as session:
        out = list(session.scalars(select(NotifyOutbox).order_by(NotifyOutbox.id)))
    engine.dispose()
    return out


def findings_of(url: str, name_prefix: str) -> int:
    engine = make_engine(url)
    with engine.connect() as c:
        n = c.scalar(
            select(func.count())
            .select_from(AnalysisResult)
            .join(Application, Application.id == AnalysisResult.application_id)
            .where(Application.name.like(f"{name_prefix}%"), AnalysisResult.severity > 0)
        )
    engine.dispose()
    return int(n or 0)


def test_a_fetch_writes_the_alerts_its_rules_decide(corpus_url: str) -> None:
    got = rows(corpus_url)
    hook = [r for r in got if r.channel == "hook"]
    assert sorted(r.summary for r in hook) == sorted(HOOK_SUMMARIES)
    assert {(r.kind, r.state, r.rule, r.attempts) for r in hook} == {
        ("alert", "pending", "severe", 0)
    }
    (slack,) = [r for r in got if r.channel == "slack"]
    assert (slack.rule, slack.summary) == ("failures", HOOK_SUMMARIES[1])
    # every daily_sales_etl finding: three single messages, then the rule's limit folds the rest
    mail = [r for r in got if r.channel == "mail"]
    daily = findings_of(corpus_url, "daily_sales_etl")
    assert daily > 3
    states = Counter((r.kind, r.state) for r in mail if "daily_sales_etl" in r.summary)
    assert states == {("alert", "pending"): 3, ("alert", "folded"): daily - 3}
    (fold,) = [r for r in mail if r.kind == "folded"]
    body = from_json(fold.payload).body
    assert body.count == daily - 3 and fold.state == "pending"
    assert fold.next_attempt_ms == (fold.created_ms // 3_600_000 + 1) * 3_600_000  # hour's end
    # the muted application's findings are recorded, never to be sent
    muted = [r for r in mail if r.state == "muted"]
    assert len(muted) == findings_of(corpus_url, "flaky_ingest") > 0
    assert all(r.last_error == "muted by mutes[0]" and "flaky_ingest" in r.summary for r in muted)
    # one row per occurrence and channel, each with its own event id
    assert len({r.idempotency_key for r in got}) == len({r.event_id for r in got}) == len(got)


def test_alerts_say_what_how_bad_what_it_cost_the_cause_and_the_fix(corpus_url: str) -> None:
    (failure,) = [
        r
        for r in rows(corpus_url)
        if r.channel == "hook" and r.summary.startswith("[critical] failed")
    ]
    env = from_json(failure.payload)
    e = env.body
    assert (e.kind, e.severity, e.app_name, env.rule) == (
        "failure",
        4,
        "crashing_importer",
        "severe",
    )
    assert e.cause == "ValueError: invalid literal for int() with base 10: 'corrupt'"
    assert e.fix and e.fix.startswith("Some jobs failed, so their work was lost.")
    engine = make_engine(corpus_url)
    with Session(engine) as session:
        app, server = session.execute(
            select(Application, HistoryServer.name)
            .join(HistoryServer)
            .where(Application.app_id == e.app_id)
        ).one()
        assert e.cost_core_hours == app.allocated_core_hours and e.wall_ms == app.duration_ms
    engine.dispose()
    assert [(x.label, x.url) for x in e.links] == [
        ("Application", absolute(BASE_URL, app_path(app.app_id, server, app.attempt_id))),
        ("History", f"{BASE_URL}/history?name=crashing_importer&server={server}"),
    ]
    spike = next(from_json(r.payload) for r in rows(corpus_url) if "cost 0.00996" in r.summary)
    assert spike.reason == (
        "0.00996 core-hours, 117% over the recent median of 0.00458 (alert from 50%)."
    )
    assert spike.body.baseline_core_hours == pytest.approx(0.00458, abs=5e-6)


def test_a_refetch_and_a_reanalysis_decide_nothing_new(corpus_url: str, tmp_path: Path) -> None:
    before = {(r.idempotency_key, r.state) for r in rows(corpus_url)}
    config = write_config(tmp_path / "s.yaml")
    engine = make_engine(corpus_url)
    with engine.connect() as c:
        crashing = c.scalar(
            select(Application.app_id).where(Application.name == "crashing_importer")
        )
    engine.dispose()
    fetch(corpus_url, config, SPARK_EVENTS, args=("--app-id", str(crashing)))
    env = {"SPARKSCOPE_DATABASE_URL": corpus_url, "SPARKSCOPE_CONFIG": str(config)}
    result = CliRunner().invoke(cli, ["analyze", "--force", "--workers", "1"], env=env)
    assert result.exit_code == 0, result.output
    assert {(r.idempotency_key, r.state) for r in rows(corpus_url)} == before


def _factory(url: str) -> tuple[sessionmaker[Session], object]:
    engine = make_engine(url)
    return make_sessionmaker(engine), engine


def test_alerts_wait_for_the_servers_predictions(corpus_url: str) -> None:
    """The verdicts come from the predictions step: alerts wait while it fails, until it has
    failed ALERTS_WAIT_ATTEMPTS times."""
    settings = parse_notifications(NOTIFICATIONS)
    factory, engine = _factory(corpus_url)
    with factory() as session, session.begin():
        session.execute(text("DELETE FROM notify_outbox"))
        sid, app_id, attempt = session.execute(
            select(Application.server_id, Application.app_id, Application.attempt_id).where(
                Application.name == "crashing_importer"
            )
        ).one()
        ledger.enqueue(
            session, [("predictions", sid, ""), ("alerts", sid, app_subject(app_id, attempt))]
        )

    def broken(p: Pipeline, session: Session, server_id: int, subjects: object) -> None:
        raise RuntimeError("model store unreachable")

    steps = tuple(
        QueuedStep("predictions", broken, s.subject) if s.name == "predictions" else s
        for s in QUEUED
    )
    pipeline = Pipeline(notifications=settings, queued=steps)
    for _ in range(ALERTS_WAIT_ATTEMPTS - 1):
        done = pipeline.complete(factory)
        assert [f[0] for f in done.failed] == ["predictions", "alerts"]
        assert "WaitingForPredictions" in done.failed[1][2]
        assert rows(corpus_url) == []
    done = pipeline.complete(factory)  # predictions failed a third time: alerts go ahead
    assert [f[0] for f in done.failed] == ["predictions"] and done.done == {"alerts": 1}
    assert {r.summary.split("]")[0] for r in rows(corpus_url)} == {"[severe", "[critical"}
    with factory() as session:
        left = session.scalars(select(PipelinePending.step)).all()
    assert left == ["predictions"]
    engine.dispose()  # type: ignore[attr-defined]


def test_odd_ids_and_names_are_linked_percent_encoded(corpus_url: str) -> None:
    factory, engine = _factory(corpus_url)
    odd = {"a/b/../c?x=1#y": "weird & <name>", "..": "dots", "sp ace%2F": "name/with?odd=1&x"}
    with factory() as session, session.begin():
        session.execute(text("DELETE FROM notify_outbox"))
        apps = session.scalars(
            select(Application).where(Application.name == "crashing_importer")
        ).all()
        (app,) = apps
        sid = app.server_id
        server = session.get(HistoryServer, sid)
        assert server is not None
        for i, (app_id, name) in enumerate(odd.items()):
            session.execute(
                text(
                    "INSERT INTO application (server_id, app_id, attempt_id, name, completed, "
                    "fetched_at_ms, end_time_ms, duration_ms, allocated_core_hours) "
                    "VALUES (:s, :a, :t, :n, true, 0, :e, 60000, 1.5)"
                ),
                {"s": sid, "a": app_id, "t": "1" if i else "", "n": name, "e": 1000 + i},
            )
        settings = parse_notifications(
            {
                **NOTIFICATIONS,
                "rules": [{"name": "long", "when": {"deadline": "30s"}, "channels": ["hook"]}],
            }
        )
        subjects = [app_subject(a, "1" if i else "") for i, a in enumerate(odd)]
        decided = decide_alerts(session, sid, subjects, settings, Context(BASE_URL))
        assert decided.send == 3
    links = {}
    for r in rows(corpus_url):
        e = from_json(r.payload).body
        links[e.app_id] = [x.url for x in e.links]
    for i, (app_id, name) in enumerate(odd.items()):
        attempt = "1" if i else ""
        assert links[app_id] == [
            absolute(BASE_URL, app_path(app_id, server.name, attempt)),
            absolute(BASE_URL, history_path(name, server.name)),
        ]
    assert (
        links["a/b/../c?x=1#y"][0]
        == f"{BASE_URL}/apps/a%2Fb%2F..%2Fc%3Fx%3D1%23y?server={server.name}"
    )
    assert links[".."][0] == f"{BASE_URL}/apps/?app_id=..&server={server.name}&attempt=1"
    engine.dispose()  # type: ignore[attr-defined]
