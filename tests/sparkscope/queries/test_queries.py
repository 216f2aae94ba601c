"""Read-side queries that the page tests do not pin down on their own."""

from __future__ import annotations

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from sparkscope.models.application import Stage
from sparkscope.queries import search as search_module
from sparkscope.queries.cache import cached
from sparkscope.queries.detail import shs_app_url, stage_count, stages
from sparkscope.queries.search import SearchFilters, search_apps
from tests.sparkscope.web import builders as b


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


def test_cached_reuses_within_ttl_and_recomputes_when_disabled() -> None:
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert cached(("t", "reuse"), 60, compute) == 1
    assert cached(("t", "reuse"), 60, compute) == 1
    assert cached(("t", "other"), 60, compute) == 2
    assert cached(("t", "reuse"), 0, compute) == 3


def test_search_count_is_bounded(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = b.server(session)
    for i in range(4):
        b.application(session, srv, f"app-count-{i}", name="count me", num_stages=1)
    monkeypatch.setattr(search_module, "COUNT_CAP", 3)
    page = search_apps(session, SearchFilters(name="count me"), per_page=2)
    assert page.total == 3 and not page.total_exact and len(page.rows) == 2
    monkeypatch.setattr(search_module, "COUNT_CAP", 10)
    page = search_apps(session, SearchFilters(name="count me"), per_page=2)
    assert page.total == 4 and page.total_exact
