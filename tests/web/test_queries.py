"""Read-side queries that the page tests do not pin down on their own."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from sparkscope.models import Stage
from sparkscope.queries import shs_app_url, stage_count, stages
from tests.web import builders as b


def test_stage_limit_keeps_the_longest_in_id_order(session: Session) -> None:
    srv = b.server(session)
    app = b.application(session, srv, "app-stages", num_stages=5)
    for stage_id, run_ms in ((0, 10), (1, 500), (2, 20), (3, 400), (4, 30)):
        session.execute(
            update(Stage)
            .where(Stage.application_id == app.id, Stage.stage_id == stage_id)
            .values(executor_run_time_ms=run_ms)
        )
    assert [s.stage_id for s in stages(session, app.id, limit=2)] == [1, 3]
    assert [s.stage_id for s in stages(session, app.id)] == [0, 1, 2, 3, 4]
    assert stage_count(session, app.id) == 5


def test_shs_url_for_folder_servers_is_none(session: Session) -> None:
    srv = b.server(session, "local", "/data/spark-events")
    app = b.application(session, srv, "app-local")
    assert shs_app_url(srv.url, app) is None
