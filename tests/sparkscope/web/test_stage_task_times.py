"""The stage page of an application read from its event log draws every task (launch against
duration, by status) from the stored task times (one fetched from a History Server has no such
section: test_stage_drilldown)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig, ServerConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application
from sparkscope.models.eventlog import StageTaskTimes, decode_task_times
from sparkscope.pipeline.steps import Pipeline
from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.eventlog.conftest import SAMPLE
from tests.sparkscope.web.conftest import make_app

FLAKY = "local-1795972006331"  # 3 failed tasks in stage 0, retried


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


def test_every_task_of_an_event_log_stage_is_drawn(logs_client: tuple[FlaskClient, str]) -> None:
    client, url = logs_client
    engine = make_engine(url)
    with Session(engine) as session:
        pk = session.scalar(select(Application.id).where(Application.app_id == FLAKY))
        row = session.scalars(
            select(StageTaskTimes).where(
                StageTaskTimes.application_id == pk, StageTaskTimes.stage_id == 0
            )
        ).first()
        assert row is not None
        tasks = decode_task_times(row.data, row.first_launch_ms)
        attempt, num_tasks, num_stored = row.attempt_id, row.num_tasks, row.num_stored
    engine.dispose()
    page = client.get(f"/apps/{FLAKY}/stages/0/{attempt}").get_data(as_text=True)
    section = page[page.index('<section id="task-times">') :]
    assert f"{num_stored:,} of {num_tasks:,} task attempts" in section
    figure = json.loads(
        re.search(r'id="task-times-figure">(.*?)</script>', section, re.S).group(1)  # type: ignore[union-attr]
    )
    drawn = {t["name"]: len(t["x"]) for t in figure["data"]}
    assert sum(drawn.values()) == len(tasks) == num_stored
    failed = sum(1 for s in tasks.columns["status"] if s == 1)
    assert drawn.get("failed", 0) == failed > 0
