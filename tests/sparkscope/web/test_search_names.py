"""Name search through the distinct-names table (migration 0008): the same applications as a
case-insensitive substring match over every application, on PostgreSQL and SQLite, with the
table kept by the database's triggers whatever writes the applications."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from sparkscope import migrate
from sparkscope.db import make_engine
from sparkscope.models.application import Application
from sparkscope.models.summary import ApplicationName
from sparkscope.queries.history import app_names
from sparkscope.queries.search import SearchFilters, search_apps
from tests.sparkscope.web import builders as b

NAMES = [
    "daily_sales_etl",
    "Daily Sales ETL (eu)",
    "nightly revenue rollup",
    "Revenue Nightly",
    "weird 100% [x]_y\\z",
    "Ünïcode Straße job",
    "sessionize.events #12",
    "sessionize.events #120",
    "sessionize.events #312",
]
PATTERNS = [
    "sales",
    "SALES",
    "revenue",
    "NIGHTLY R",
    "%",
    "_",
    "\\",
    "100% [x]_y",
    "ünïcode",
    "straße",
    "events #12",
    "#3",
    "e",
    "no such name",
]


def _fill(session: Session) -> None:
    srv = b.server(session)
    start = 1_700_000_000_000
    for i, name in enumerate(NAMES * 2):
        b.application(session, srv, f"app-{i:03d}", name=name, start_ms=start + i * 60_000)
    session.commit()


def _reference(session: Session, text: str) -> list[str]:
    """Matches by ILIKE over every application (the query before 0008), newest first."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return list(
        session.scalars(
            select(Application.app_id)
            .where(Application.name.ilike(f"%{escaped}%", escape="\\"))
            .order_by(Application.start_time_ms.desc(), Application.id.desc())
        )
    )


def _found(session: Session, text: str) -> tuple[list[str], int]:
    page = search_apps(session, SearchFilters(name=text), per_page=100)
    return [r.app_id for r in page.rows], page.total


def test_name_search_matches_ilike_over_every_application(fresh_db_url: str) -> None:
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        _fill(session)
        assert set(session.scalars(select(ApplicationName.name))) == set(NAMES)
        for text in PATTERNS:
            expected = _reference(session, text)
            assert _found(session, text) == (expected, len(expected)), text
        # Spot checks that the reference itself means what the page promises.
        assert len(_found(session, "SALES")[0]) == 4
        assert len(_found(session, "events #12")[0]) == 4
        assert _found(session, "%")[1] == 2
    engine.dispose()


def test_triggers_keep_the_names_of_renamed_and_new_applications(fresh_db_url: str) -> None:
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        _fill(session)
        session.execute(
            update(Application).where(Application.app_id == "app-000").values(name="Renamed Job")
        )
        session.commit()
        assert _found(session, "renamed") == (["app-000"], 1)
        # A deleted application's name may stay in the table; it finds nothing.
        session.execute(delete(Application).where(Application.name == "Revenue Nightly"))
        session.commit()
        assert _found(session, "revenue nightly") == ([], 0)
        # History's name suggestions come from the same table, without the deleted ones.
        suggested = app_names(session)
        assert "Revenue Nightly" not in suggested and "Renamed Job" in suggested
        assert sorted(suggested) == sorted(set(session.scalars(select(Application.name))))
        for text in PATTERNS:
            expected = _reference(session, text)
            assert _found(session, text) == (expected, len(expected)), text
    engine.dispose()


@pytest.mark.parametrize("combined", [{"user": "alice"}, {"user": "nobody"}])
def test_name_combines_with_other_filters(fresh_db_url: str, combined: dict[str, str]) -> None:
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        _fill(session)
        page = search_apps(session, SearchFilters(name="sales", **combined), per_page=100)
        assert page.total == (4 if combined["user"] == "alice" else 0)
    engine.dispose()


def test_upgrade_to_0008_collects_the_stored_names(fresh_db_url: str) -> None:
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        _fill(session)
    migrate.downgrade(fresh_db_url, "0007")
    with engine.connect() as conn:
        # Written while the triggers did not exist.
        conn.execute(
            update(Application).where(Application.app_id == "app-001").values(name="Late Name")
        )
        conn.commit()
    engine.dispose()
    migrate.upgrade(fresh_db_url)
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        assert "Late Name" in set(session.scalars(select(ApplicationName.name)))
        assert _found(session, "late name") == (["app-001"], 1)
    engine.dispose()
