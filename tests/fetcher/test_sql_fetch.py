"""The SQL part of a fetch: paging, an application without SQL, a server without /sql, and an
error answer that fails the SQL part only (stored without it, recorded, retried next run)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from fetcher.job import run_server
from fetcher.options import FetchOptions
from fetcher.shs.request_plan import SQL_PAGE_LENGTH
from sparkscope.config.loader import FetcherConfig
from sparkscope.models.application import Application, Stage
from sparkscope.models.fetch import FetchFailure, FetchRun, FetchWatermark
from sparkscope.models.sql import SqlExecution, SqlFetch, SqlNode, SqlStage
from tests.fetcher import recorded, stub_shs
from tests.fetcher.conftest import SERVER
from tests.fetcher.recorded import API, HEALTHY

FCFG = FetcherConfig(threads=1, retries=0, backoff_factor_s=0, top_stages=5, tasks_per_stage=20)
SQL_PATH = f"applications/{HEALTHY}/sql"


def sql_query(offset: int) -> str:
    return f"details=true&length={SQL_PAGE_LENGTH}&offset={offset}&planDescription=true"


def register_without_sql(rsps: stub_shs.StubShs) -> list[Any]:
    """The recorded app's requests except /sql; returns its recorded /sql page."""
    pages = []
    for key, data in recorded.app_requests(HEALTHY).items():
        path, _, query = key.partition("?")
        if path.endswith("/sql"):
            pages.append(data)
            continue
        rsps.add(
            stub_shs.GET,
            f"{API}/{path}",
            json=data,
            match=[stub_shs.query_string(query or None)],
        )
    return pages[0]


def add_sql(rsps: stub_shs.StubShs, offset: int, **kw: Any) -> None:
    rsps.add(
        stub_shs.GET,
        f"{API}/{SQL_PATH}",
        match=[stub_shs.query_string(sql_query(offset))],
        **kw,
    )


def counts(factory: sessionmaker[Session]) -> dict[str, int]:
    with factory() as s:
        return {
            m.__tablename__: int(s.scalar(select(func.count()).select_from(m)) or 0)
            for m in (SqlExecution, SqlNode, SqlStage, FetchFailure)
        }


def test_the_sql_part_is_stored_with_parsed_metrics_and_stage_links(rsps, factory) -> None:
    recorded.register_listing(rsps, [HEALTHY])
    page = register_without_sql(rsps)
    add_sql(rsps, 0, json=page)
    result = run_server(factory, SERVER, FCFG, FetchOptions())
    assert (result.loaded, result.failed, result.partial) == (1, [], [])
    with factory() as s:
        fetch = s.scalars(select(SqlFetch)).one()
        assert (fetch.status, fetch.executions, fetch.pages) == ("ok", len(page), 1)
        scan = s.scalars(select(SqlNode).where(SqlNode.name.like("Scan parquet%"))).first()
        assert scan is not None and scan.metrics["size of files read"][0] == "bytes"
        assert scan.metrics["size of files read"][1] > 0 and "Location" in (scan.detail or {})
        linked = s.scalars(select(SqlStage)).all()
        assert linked and {st.stage_id for st in linked} <= set(s.scalars(select(Stage.stage_id)))
        ex = s.scalars(select(SqlExecution)).first()
        assert ex is not None and ex.plan_text and ex.plan_chars == len(ex.plan_text) and ex.edges


def test_a_full_page_asks_for_the_next_one(rsps, factory) -> None:
    recorded.register_listing(rsps, [HEALTHY])
    page = register_without_sql(rsps)
    many = [dict(page[i % len(page)], id=i) for i in range(SQL_PAGE_LENGTH + 3)]
    add_sql(rsps, 0, json=many[:SQL_PAGE_LENGTH])
    add_sql(rsps, SQL_PAGE_LENGTH, json=many[SQL_PAGE_LENGTH:])
    assert run_server(factory, SERVER, FCFG, FetchOptions()).loaded == 1
    assert counts(factory)["sql_execution"] == SQL_PAGE_LENGTH + 3


def test_a_server_that_ignores_the_offset_is_read_once(rsps, factory) -> None:
    recorded.register_listing(rsps, [HEALTHY])
    page = register_without_sql(rsps)
    same = [dict(page[i % len(page)], id=i) for i in range(SQL_PAGE_LENGTH)]
    add_sql(rsps, 0, json=same)
    add_sql(rsps, SQL_PAGE_LENGTH, json=same)  # the same executions again: the last page
    assert run_server(factory, SERVER, FCFG, FetchOptions()).loaded == 1
    assert counts(factory)["sql_execution"] == SQL_PAGE_LENGTH


def test_no_sql_endpoint_is_normal_and_not_retried(rsps, factory) -> None:
    recorded.register_listing(rsps, [HEALTHY])
    register_without_sql(rsps)
    add_sql(rsps, 0, status=404, body="no such resource")
    result = run_server(factory, SERVER, FCFG, FetchOptions())
    assert (result.loaded, result.failed, result.partial) == (1, [], [])
    with factory() as s:
        assert s.scalars(select(SqlFetch.status)).one() == "unavailable"
    assert counts(factory)["fetch_failure"] == 0
    assert run_server(factory, SERVER, FCFG, FetchOptions()).skipped == 1  # nothing to retry


@pytest.mark.parametrize(
    "failure",
    [
        {"status": 500, "body": "boom"},
        {"body": '[{"id": 0, "nodes": [trunc'},
        {"body": stub_shs.READ_TIMEOUT},
    ],
)
def test_a_failing_sql_answer_fails_only_that_part_and_is_retried(
    factory, failure: dict[str, Any]
) -> None:
    with stub_shs.StubShs(assert_all_requests_are_fired=True) as rsps:
        recorded.register_listing(rsps, [HEALTHY])
        page = register_without_sql(rsps)
        add_sql(rsps, 0, **failure)
        first = run_server(factory, SERVER, FCFG, FetchOptions())
        # the rest of the application is stored, its findings too, and the watermark moved past it
        assert (first.loaded, first.failed) == (1, [])
        assert [a for a, _ in first.partial] == [HEALTHY] and "SQL executions" in first.partial[0][
            1
        ]
        with factory() as s:
            assert s.scalar(select(func.count()).select_from(Stage)) > 0
            fetch = s.scalars(select(SqlFetch)).one()
            assert fetch.status == "failed" and fetch.error
            failure_row = s.scalars(select(FetchFailure)).one()
            assert (
                failure_row.failures == 1 and "SQL executions not stored" in failure_row.last_error
            )
            assert s.scalars(select(FetchRun.status)).one() == "partial"
            assert s.get(FetchWatermark, s.scalars(select(Application.server_id)).one()) is not None
        assert counts(factory)["sql_execution"] == 0
        # the next run fetches the application again, and this time its SQL part too
        page_again = register_without_sql(rsps)
        add_sql(rsps, 0, json=page_again)
        second = run_server(factory, SERVER, FCFG, FetchOptions())
    assert (second.loaded, second.partial) == (1, [])
    stored = counts(factory)
    assert stored["sql_execution"] == len(page) and stored["fetch_failure"] == 0
    with factory() as s:
        assert s.scalars(select(SqlFetch.status)).one() == "ok"
        assert s.scalar(select(func.count()).select_from(Application)) == 1


def test_an_unreachable_server_during_sql_stops_the_run_and_stores_nothing(factory) -> None:
    with stub_shs.StubShs(assert_all_requests_are_fired=False) as rsps:
        recorded.register_listing(rsps, [HEALTHY])
        register_without_sql(rsps)
        add_sql(rsps, 0, body=stub_shs.HANG_UP)
        result = run_server(factory, SERVER, FCFG, FetchOptions())
    assert result.loaded == 0 and result.unreachable and result.failed == []
    with factory() as s:
        assert s.scalar(select(func.count()).select_from(Application)) == 0


def test_a_refetch_replaces_the_sql_rows(rsps, factory) -> None:
    entry = json.loads(json.dumps(next(a for a in recorded.listing() if a["id"] == HEALTHY)))
    rsps.add_callback(
        stub_shs.GET, f"{API}/applications", callback=recorded.listing_callback([entry])
    )
    page = register_without_sql(rsps)
    add_sql(rsps, 0, json=page)
    assert run_server(factory, SERVER, FCFG, FetchOptions()).loaded == 1
    before = counts(factory)
    entry["attempts"][0]["lastUpdatedEpoch"] += 1000
    register_without_sql(rsps)
    add_sql(rsps, 0, json=page)
    assert run_server(factory, SERVER, FCFG, FetchOptions()).loaded == 1
    assert counts(factory) == before
