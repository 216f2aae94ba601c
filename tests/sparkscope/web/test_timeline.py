"""The timeline page (`/apps/<id>/timeline`) on stored data: the recorded History Server answers
(PostgreSQL and SQLite), where busy slots come from stage spans and idle capacity must agree with
the resource accounting's wasted core-hours; an application read from its event log, where they
come from every task; unknown ids are 404s; other people's names are escaped."""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig, ServerConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import (
    Application,
    EnvironmentProperty,
    Executor,
    Job,
    Stage,
)
from sparkscope.models.eventlog import StageTaskTimes, decode_task_times
from sparkscope.pipeline.steps import Pipeline
from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.eventlog.conftest import SAMPLE
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import XSS, fetch_corpora, make_app

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "demo" / "spark-events"
SCALING = ROOT / "demo" / "scaling-events"
FLAKY = "local-1795972006331"  # 3 failed tasks in stage 0, retried


@pytest.fixture(scope="module")
def recorded(db_url: str) -> Iterator[tuple[FlaskClient, str]]:
    fetch_corpora(db_url, RECORDED, SCALING)
    app = make_app(db_url)
    yield app.test_client(), db_url
    app.extensions["sparkscope.engine"].dispose()


def _figure(page: str) -> dict:  # type: ignore[type-arg]
    found = re.search(r'id="timeline-figure">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def _trace(figure: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(t for t in figure["data"] if t["name"].startswith(name))


def _area(trace: dict) -> float:  # type: ignore[type-arg]
    xs, ys = trace["x"], trace["y"]
    return sum((xs[i + 1] - xs[i]) * ys[i] for i in range(len(xs) - 1))


def test_every_recorded_timeline_agrees_with_the_resource_accounting(
    recorded: tuple[FlaskClient, str],
) -> None:
    client, url = recorded
    engine = make_engine(url)
    with Session(engine) as session:
        apps = session.scalars(select(Application)).all()
        checked = 0
        for app in apps:
            page = client.get(f"/apps/{app.app_id}/timeline").get_data(as_text=True)
            assert 'data-method="stages"' in page  # a History Server keeps no time of each task
            figure = _figure(page)
            execs = session.scalars(select(Executor).where(Executor.application_id == app.id))
            execs = list(execs)
            cluster = [e for e in execs if not e.is_driver]
            slots = sum(e.total_cores for e in cluster) or next(
                e.total_cores for e in execs if e.is_driver
            )
            assert max(_trace(figure, "allocated")["y"]) <= slots
            stages = session.scalars(select(Stage).where(Stage.application_id == app.id)).all()
            drawn = [t for t in figure["data"] if t["type"] == "bar" and "stage" in t["name"]]
            started = [s for s in stages if (s.first_task_launched_time_ms or s.submission_time_ms)]
            assert sum(len(t["base"]) for t in drawn) == len(started)
            failed = [t for t in drawn if t["name"] == "failed stage"]
            assert sum(len(t["base"]) for t in failed) == sum(
                1 for s in started if s.status == "FAILED"
            )
            jobs = session.scalars(select(Job).where(Job.application_id == app.id)).all()
            assert f"{len(jobs):,} jobs, {len(stages):,} stage attempts." in page
            if 'id="timeline-capped"' not in page and app.wasted_core_hours is not None:
                # Allocated minus busy slot-time is what the accounting calls wasted (computed
                # there from the executors and the stages' run time, by another path).
                # Outside local mode the accounting also counts the driver's container
                # (spark.driver.cores for the whole run), which holds no task slot.
                driver_hours = 0.0
                if cluster:
                    cores = session.scalar(
                        select(EnvironmentProperty.value).where(
                            EnvironmentProperty.application_id == app.id,
                            EnvironmentProperty.name == "spark.driver.cores",
                        )
                    )
                    driver_hours = int(cores or 1) * (app.duration_ms or 0) / 3_600_000
                idle = re.search(
                    r'id="timeline-idle">Idle capacity: [^(]*\((.+?) of [^ ]+ core', page
                )
                assert idle is not None, app.app_id
                shown = html_lib.unescape(idle.group(1))
                expected = app.wasted_core_hours - driver_hours
                if shown == "< 0.001":
                    assert 0 < expected < 0.001, app.app_id
                else:  # written to 3 significant digits
                    assert float(shown) == pytest.approx(expected, rel=0.01, abs=1e-9), app.app_id
                checked += 1
        assert checked >= len(apps) // 2
    engine.dispose()


def test_a_cluster_application_counts_its_executors_not_its_driver(
    recorded: tuple[FlaskClient, str],
) -> None:
    client, url = recorded
    engine = make_engine(url)
    with Session(engine) as session:
        app = session.scalars(
            select(Application).where(Application.app_id.like("app-%")).order_by(Application.id)
        ).first()
        assert app is not None
        cores = [
            e.total_cores
            for e in session.scalars(
                select(Executor).where(Executor.application_id == app.id, ~Executor.is_driver)
            )
        ]
    engine.dispose()
    page = client.get(f"/apps/{app.app_id}/timeline").get_data(as_text=True)
    assert max(_trace(_figure(page), "allocated")["y"]) == sum(cores) > 0
    assert "local mode" not in page.split('id="timeline-header"')[1].split("</section>")[0]


def test_the_application_and_stage_pages_link_to_the_timeline(
    recorded: tuple[FlaskClient, str],
) -> None:
    client, _url = recorded
    app_id = client.get("/api/apps").get_json()["apps"][0]["app_id"]
    page = client.get(f"/apps/{app_id}").get_data(as_text=True)
    href = html_lib.unescape(re.findall(r'id="timeline-link" href="([^"]+)"', page)[0])
    assert href.startswith(f"/apps/{app_id}/timeline?server=")
    timeline = client.get(href)
    assert timeline.status_code == 200
    figure = _figure(timeline.get_data(as_text=True))
    stage_url = next(t for t in figure["data"] if t["name"] == "stage")["customdata"][0][0]
    stage_page = client.get(stage_url)
    assert stage_page.status_code == 200
    back = re.findall(r'id="timeline-link" href="([^"]+)"', stage_page.get_data(as_text=True))
    assert [html_lib.unescape(h) for h in back] == [href]


def test_unknown_applications_are_404(recorded: tuple[FlaskClient, str]) -> None:
    client, _url = recorded
    resp = client.get("/apps/no-such-app/timeline")
    assert resp.status_code == 404
    assert "no application &#39;no-such-app&#39;" in resp.get_data(as_text=True)
    app_id = client.get("/api/apps").get_json()["apps"][0]["app_id"]
    assert client.get(f"/apps/{app_id}/timeline?server=nowhere").status_code == 404


@pytest.fixture(scope="module")
def logs_client(pg_server_url: str, pg_template: str) -> Iterator[tuple[FlaskClient, str]]:
    url = create_pg_database(pg_server_url, template=pg_template)
    engine = make_engine(url)
    factory = make_sessionmaker(engine)
    pipeline = Pipeline(registry=load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")))
    server = ServerConfig(name="logs", url=str(SAMPLE), event_logs=str(SAMPLE))
    run_server(factory, server, FetcherConfig(threads=2), FetchOptions(app_ids=(FLAKY,)), pipeline)
    pipeline.complete(factory)
    engine.dispose()
    app = make_app(url)
    yield app.test_client(), url
    app.extensions["sparkscope.engine"].dispose()
    drop_pg_database(pg_server_url, url)


def test_an_event_log_application_is_drawn_from_every_task(
    logs_client: tuple[FlaskClient, str],
) -> None:
    client, url = logs_client
    engine = make_engine(url)
    with Session(engine) as session:
        app = session.scalars(select(Application).where(Application.app_id == FLAKY)).one()
        task_ms = 0
        for row in session.scalars(
            select(StageTaskTimes).where(StageTaskTimes.application_id == app.id)
        ):
            assert row.num_stored == row.num_tasks
            durations = decode_task_times(row.data, row.first_launch_ms).columns["duration_ms"]
            task_ms += sum(d for d in durations if d >= 0)
        duration_ms = app.duration_ms
    engine.dispose()
    page = client.get(f"/apps/{FLAKY}/timeline").get_data(as_text=True)
    assert 'data-method="tasks"' in page and "exact concurrency" in page
    busy = _trace(_figure(page), "busy")
    assert task_ms > 0
    # Every task's (launch, finish) counted once: the busy area is the summed durations, less the
    # few milliseconds where a task is recorded launched before the one it replaced finished.
    capped = re.search(r'id="timeline-capped">.*?\(([0-9.]+)% of the busy time\)', page)
    left_out = float(capped.group(1)) / 100 if capped else 0.0
    assert left_out < 0.02
    assert _area(busy) * 1000 == pytest.approx(task_ms * (1 - left_out), rel=2e-3)
    assert max(busy["y"]) <= max(_trace(_figure(page), "allocated")["y"])
    assert _trace(_figure(page), "allocated")["x"][-1] == pytest.approx(duration_ms / 1000)


def test_hostile_job_and_stage_names_are_escaped(fresh_pg_url: str) -> None:
    engine = make_engine(fresh_pg_url)
    with Session(engine) as session:
        srv = b.server(session)
        app = b.application(session, srv, "app-xss-timeline", name=XSS, num_stages=2)
        stage = session.get(Stage, (app.id, 1, 0))
        assert stage is not None
        stage.name, stage.status = XSS, "FAILED"
        session.add(
            Job(
                application_id=app.id,
                job_id=0,
                name=XSS,
                description=f"{XSS} & more",
                status="FAILED",
                submission_time_ms=app.start_time_ms,
                completion_time_ms=app.end_time_ms,
                stage_ids=[0, 1],
            )
        )
        session.commit()
    engine.dispose()
    flask_app = make_app(fresh_pg_url)
    page = flask_app.test_client().get("/apps/app-xss-timeline/timeline").get_data(as_text=True)
    flask_app.extensions["sparkscope.engine"].dispose()
    assert XSS not in page
    assert html_lib.escape(XSS) in page  # the application's name in the header
    figure = _figure(page)
    failed_stage = _trace(figure, "failed stage")
    assert failed_stage["customdata"][0][2] == html_lib.escape(XSS)  # Plotly's hover text
    failed_job = _trace(figure, "failed job")
    assert failed_job["customdata"][0][2] == html_lib.escape(f"{XSS} & more")
    # The yarn application counts its two executors' cores, the driver none.
    assert max(_trace(figure, "allocated")["y"]) == 8
