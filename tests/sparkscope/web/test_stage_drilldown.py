"""The stage page (`/apps/<id>/stages/<stage>/<attempt>`): a recorded application's stage shows
its stored rows (metrics, distributions, kept tasks, executors, findings, SQL queries) on
PostgreSQL and SQLite; unknown stages are 404s; the link a finding renders opens its stage for
odd application ids; other people's strings are escaped."""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.cli.main import cli
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine
from sparkscope.models.application import (
    Application,
    Stage,
    StageExecutor,
    StageTaskDistribution,
    Task,
)
from sparkscope.present.display import fmt_bytes, fmt_count, fmt_duration_ms, stage_duration_ms
from sparkscope.present.stage_view import fmt_metric_value, ordered, table_columns
from sparkscope.queries.sql import queries_for_stage
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import XSS, make_app
from tests.sparkscope.web.test_hostile_ids import browser_path

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "demo" / "spark-events"
SKEWED = "local-1795971880926"
FLAKY = "local-1795972006331"  # 3 failed tasks in stage 0, retried


@pytest.fixture(scope="module")
def recorded(db_url: str) -> Iterator[FlaskClient]:
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(RECORDED)], env={"SPARKSCOPE_DATABASE_URL": db_url}
    )
    assert result.exit_code == 0, result.output
    app = make_app(db_url)
    yield app.test_client()
    app.extensions["sparkscope.engine"].dispose()


def _section(page: str, section_id: str) -> str:
    part = page[page.index(f'<section id="{section_id}">') :]
    return part[: part.index("</section>")]


def _cells(row_html: str) -> list[str]:
    return [
        html_lib.unescape(re.sub(r"<[^>]+>", "", c)).strip()
        for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row_html, re.S)
    ]


def _stage_links(page: str) -> list[str]:
    return [html_lib.unescape(h) for h in re.findall(r'href="([^"]*stage[^"]*)">stage \d', page)]


@pytest.mark.parametrize("app_id", [SKEWED, FLAKY])
def test_a_recorded_stage_shows_its_stored_rows(
    recorded: FlaskClient, db_url: str, app_id: str
) -> None:
    engine = make_engine(db_url)
    with Session(engine) as session:
        app = session.scalars(select(Application).where(Application.app_id == app_id)).one()
        # The stage with the most run time that has a distribution and kept tasks.
        stage = session.scalars(
            select(Stage)
            .join(
                StageTaskDistribution,
                (StageTaskDistribution.application_id == Stage.application_id)
                & (StageTaskDistribution.stage_id == Stage.stage_id)
                & (StageTaskDistribution.attempt_id == Stage.attempt_id),
            )
            .where(Stage.application_id == app.id)
            .order_by(Stage.executor_run_time_ms.desc())
        ).first()
        assert stage is not None
        key = (app.id, stage.stage_id, stage.attempt_id)
        dist = session.get(StageTaskDistribution, key)
        assert dist is not None
        tasks = session.scalars(
            select(Task).where(
                Task.application_id == app.id,
                Task.stage_id == stage.stage_id,
                Task.stage_attempt_id == stage.attempt_id,
            )
        ).all()
        executors = session.scalars(
            select(StageExecutor).where(
                StageExecutor.application_id == app.id,
                StageExecutor.stage_id == stage.stage_id,
                StageExecutor.attempt_id == stage.attempt_id,
            )
        ).all()
        queries = queries_for_stage(session, app.id, stage.stage_id)
    engine.dispose()
    response = recorded.get(f"/apps/{app_id}/stages/{stage.stage_id}/{stage.attempt_id}")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert f'<span id="stage-id">{stage.stage_id}</span>' in page
    assert html_lib.escape(stage.name or "") in page
    metrics = _section(page, "stage-metrics")
    for cell_id, expected in (
        ("m-tasks", fmt_count(stage.num_tasks)),
        ("m-duration", fmt_duration_ms(stage_duration_ms(stage))),
        ("m-run-time", fmt_duration_ms(stage.executor_run_time_ms)),
        ("m-gc", fmt_duration_ms(stage.jvm_gc_time_ms)),
        ("m-shuffle-read", fmt_bytes(stage.shuffle_read_bytes)),
        ("m-shuffle-write", fmt_bytes(stage.shuffle_write_bytes)),
    ):
        assert f'id="{cell_id}">{html_lib.escape(expected)}</td>' in metrics, cell_id
    # The 21-point distributions: a chart per unit, a table row per metric at its quantiles.
    assert len(dist.quantiles) == 21
    dists = _section(page, "distributions")
    assert 'data-figure="dist-figure-ms"' in dists
    rows = dict(re.findall(r'<tr data-metric="([^"]+)">(.*?)</tr>', dists, re.S))
    assert list(rows) == ordered(dist.metrics)
    for name, row in rows.items():
        expected = [
            fmt_metric_value(name, dist.metrics[name][i]) for i, _ in table_columns(dist.quantiles)
        ]
        assert _cells(row)[1 : 1 + len(expected)] == expected, name
    # Every kept task, slowest first, with its reason; every executor of the stage.
    table = _section(page, "stage-tasks")
    shown = [int(t) for t in re.findall(r'<tr class="[^"]*">\s*<td data-v="(\d+)">', table)]
    by_duration = sorted(tasks, key=lambda t: (-(t.duration_ms or -1), t.task_id))
    assert shown == [t.task_id for t in by_duration] and shown
    for t in tasks:
        assert f"<td>{t.kept_because}</td>" in table
    if any(t.status == "FAILED" for t in tasks):
        assert '<tr class="failed">' in table
    assert len(re.findall("<tr>", _section(page, "stage-executors"))) == len(executors) + 1 or (
        not executors and "No per-executor summary" in page
    )
    assert 'id="task-times"' not in page  # a History Server keeps no time of every task
    sql = _section(page, "stage-queries")
    for q in queries:
        assert f"#{q.anchor}" in sql and html_lib.escape(q.description) in sql
    # Back to the application, and each finding that names the stage.
    assert f'id="app-link" href="/apps/{app_id}?server=spark-events"' in page
    app_page = recorded.get(f"/apps/{app_id}").get_data(as_text=True)
    named = [
        m.group(1)
        for m in re.finditer(
            r'<article class="finding [^"]*" id="finding-([^"]+)">(.*?)</article>', app_page, re.S
        )
        if f"/stages/{stage.stage_id}/{stage.attempt_id}?" in m.group(2)
    ]
    found = re.findall(r'id="finding-([^"]+)"', _section(page, "stage-findings"))
    assert sorted(found) == sorted(named)


def test_every_stage_link_of_every_recorded_application_opens(recorded: FlaskClient) -> None:
    opened = 0
    for a in recorded.get("/api/apps").get_json()["apps"]:
        for href in _stage_links(recorded.get(a["url"]).get_data(as_text=True)):
            page = recorded.get(href)
            assert page.status_code == 200, href
            stage = re.search(r"/stages/(\d+)/", href)
            assert stage and f'<span id="stage-id">{stage.group(1)}</span>' in page.get_data(
                as_text=True
            )
            opened += 1
    assert opened > 0


def test_unknown_stages_and_applications_are_404(recorded: FlaskClient) -> None:
    assert recorded.get(f"/apps/{SKEWED}/stages/9999/0").status_code == 404
    assert recorded.get(f"/apps/{SKEWED}/stages/0/7").status_code == 404
    assert recorded.get(f"/apps/{SKEWED}/stages/{2**40}/0").status_code == 404
    assert recorded.get("/apps/nope/stages/0/0").status_code == 404
    assert recorded.get(f"/apps/{SKEWED}/stages/0/0?server=elsewhere").status_code == 404
    assert recorded.get("/apps/?app_id=nope&stage=0&stage_attempt=0").status_code == 404


ODD = ("x/whatif", "..", ".", "a/../b", "a?b#c", "a/stages/1/0", "ünï/名前")
DECOYS = ("x", "a", "b")


@pytest.fixture(scope="module")
def odd_app(pg_server_url: str, pg_template: str) -> Iterator[Flask]:
    from tests.conftest import create_pg_database, drop_pg_database

    url = create_pg_database(pg_server_url, template=pg_template)
    fingerprint = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).fingerprint
    engine = make_engine(url)
    with Session(engine) as session:
        prod = b.server(session, "prod", "http://shs.example:18080")
        other = b.server(session, "other", "http://other.example:18080")
        for app_id in ODD + DECOYS:
            app = b.application(session, prod, app_id, name=f"job of {app_id}")
            b.finding(
                session, app, "stage_skew", Severity.SEVERE, f"skew in {app_id}", stages=[[1, 0]]
            )
            b.mark_analyzed(session, app, fingerprint)
        hostile = b.application(session, prod, "app-hostile", name=XSS)
        stage = session.get(Stage, (hostile.id, 1, 0))
        assert stage is not None
        stage.name, stage.failure_reason, stage.status = XSS, XSS, "FAILED"
        # Its retry: the attempts link to each other.
        session.add(
            Stage(application_id=hostile.id, stage_id=1, attempt_id=1, name=XSS, status="COMPLETE")
        )
        session.add(
            Task(
                application_id=hostile.id,
                stage_id=1,
                stage_attempt_id=0,
                task_id=7,
                index=3,
                attempt=0,
                executor_id=XSS,
                host=XSS,
                status="FAILED",
                kept_because="failed",
                duration_ms=5000,
                error_message=f"{XSS}\n\tat somewhere",
            )
        )
        session.add(
            StageExecutor(application_id=hostile.id, stage_id=1, attempt_id=0, executor_id=XSS)
        )
        b.finding(
            session, hostile, "stage_skew", Severity.LOW, f"skew {XSS}", stages=[[1, 0]], advice=XSS
        )
        b.mark_analyzed(session, hostile, fingerprint)
        for srv in (prod, other):
            b.mark_analyzed(session, b.application(session, srv, "twice"), fingerprint)
        session.commit()
    engine.dispose()
    flask_app = make_app(url)
    yield flask_app
    flask_app.extensions["sparkscope.engine"].dispose()
    drop_pg_database(pg_server_url, url)


def test_the_stage_link_a_finding_renders_opens_that_stage_for_odd_ids(odd_app: Flask) -> None:
    client = odd_app.test_client()
    for app_id in ODD:
        with odd_app.test_request_context():
            from sparkscope.web.request import app_link

            href = app_link(app_id, "prod")
        page = client.get(href).get_data(as_text=True)
        links = _stage_links(page)
        assert len(links) == 1, (app_id, links)
        path = browser_path(links[0])
        assert path == links[0], path  # nothing a browser would rewrite
        stage = client.get(path)
        assert stage.status_code == 200, (app_id, path)
        body = stage.get_data(as_text=True)
        shown = re.search(r'id="app-link" href="([^"]*)">([^<]*)</a>', body)
        assert shown and html_lib.unescape(shown.group(2)) == app_id, app_id
        assert html_lib.unescape(shown.group(1)) == href  # back to its own application
        assert f"skew in {html_lib.escape(app_id)}" in body  # its own finding, not a decoy's


def test_an_ambiguous_id_asks_for_a_server(odd_app: Flask) -> None:
    client = odd_app.test_client()
    assert client.get("/apps/twice/stages/0/0").status_code == 409
    assert client.get("/apps/twice/stages/0/0?server=other").status_code == 200


def test_other_peoples_strings_are_escaped(odd_app: Flask) -> None:
    page = odd_app.test_client().get("/apps/app-hostile/stages/1/0").get_data(as_text=True)
    assert XSS not in page
    escaped = html_lib.escape(XSS)
    for section in ("stage-header", "stage-tasks", "stage-executors"):
        part = page[page.index(f'id="{section}"') :]
        assert escaped in part[: part.index("</section>")], section
    assert 'class="failed"' in page and f"skew {escaped}" in page


def test_the_attempts_of_a_stage_link_to_each_other(odd_app: Flask) -> None:
    client = odd_app.test_client()
    first = client.get("/apps/app-hostile/stages/1/0").get_data(as_text=True)
    attempts = first[first.index('id="stage-attempts"') :]
    attempts = attempts[: attempts.index("</p>")]
    assert "<b>0</b>" in attempts
    retry = re.search(r'href="([^"]+)">1</a>', attempts)
    assert retry and html_lib.unescape(retry.group(1)) == "/apps/app-hostile/stages/1/1?server=prod"
    second = client.get(html_lib.unescape(retry.group(1))).get_data(as_text=True)
    assert (
        "attempt 1" in second and 'href="/apps/app-hostile/stages/1/0?server=prod">0</a>' in second
    )
    # the retry has no rows of its own yet: each section says so
    assert (
        "No task distribution was stored" in second and "No task of this stage was kept" in second
    )
