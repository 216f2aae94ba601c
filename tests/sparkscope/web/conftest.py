"""A PostgreSQL database with a small, realistic fleet, shared by the web tests of a module."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.accounting import day_summary as summary
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.cli.main import cli
from sparkscope.config.loader import BUNDLED_CONFIG_DIR, parse_config
from sparkscope.db import make_engine, now_ms
from sparkscope.web.app import create_app
from tests.conftest import create_pg_database, drop_pg_database
from tests.sparkscope.web import builders as b
from tests.support.browser import served

XSS = "<script>alert(1)</script>"
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@dataclass(frozen=True)
class Fleet:
    """The database URL and the fingerprint the stored findings were made with."""

    url: str
    fingerprint: str


def populate(session: Session, fingerprint: str) -> None:
    """Two servers and a handful of applications covering every page's cases."""
    now = now_ms()
    prod = b.server(session, "prod", "http://shs.example:18080")
    staging = b.server(session, "staging", "https://shs-staging.example/api/v1")
    b.fetch_run(session, prod)
    b.fetch_run(session, staging, status="partial", loaded=1)

    prev = b.application(
        session,
        prod,
        "app-001",
        start_ms=now - 26 * HOUR_MS,
        duration_ms=18 * 60_000,
        allocated_core_hours=3.0,
        wasted_core_hours=1.0,
    )
    b.mark_analyzed(session, prev, fingerprint, Severity.NONE)

    bad = b.application(
        session,
        prod,
        "app-002",
        start_ms=now - 2 * HOUR_MS,
        duration_ms=40 * 60_000,
        memory_bytes_spilled=5 * 1024**3,
        allocated_core_hours=6.0,
        wasted_core_hours=4.5,
        props={"spark.sql.shuffle.partitions": "400", "spark.extra.only.right": "yes"},
    )
    b.finding(
        session,
        bad,
        "stage_skew",
        Severity.SEVERE,
        "Stage 2: max task 9.1x the median",
        value=9.1,
        impact_core_hours=1.25,
        impact_wall_seconds=300.0,
        details={"columns": ["stage", "ratio"], "rows": [[2, 9.1]]},
        advice="Salt the hot keys.",
    )
    b.finding(
        session,
        bad,
        "executor_gc",
        Severity.LOW,
        "GC took 8.5% of executor task time",
        value=0.085,
        impact_core_hours=2.5,
        impact_wall_seconds=60.0,
    )
    b.finding(session, bad, "disk_spill", Severity.NONE, "No spill", value=0.0)
    b.mark_analyzed(session, bad, fingerprint)

    xss = b.application(
        session,
        prod,
        "app-xss",
        name=XSS,
        user=XSS,
        queue="etl",
        start_ms=now - 3 * HOUR_MS,
        props={"spark.custom.value": XSS, "spark.hadoop.fs.s3a.secret.key": "hunter2"},
    )
    b.finding(session, xss, "job_failures", Severity.CRITICAL, f"job {XSS} failed")
    b.mark_analyzed(session, xss, fingerprint)

    for srv in (prod, staging):
        dup = b.application(
            session, srv, "app-dup", name="dup job", user="bob", start_ms=now - 5 * HOUR_MS
        )
        b.mark_analyzed(session, dup, fingerprint, Severity.NONE)

    for attempt, offset in (("1", 9), ("2", 8)):
        attempt_app = b.application(
            session,
            prod,
            "app-att",
            name="retried job",
            attempt_id=attempt,
            start_ms=now - offset * HOUR_MS,
            user="carol",
            queue="adhoc",
        )
        b.mark_analyzed(
            session,
            attempt_app,
            fingerprint,
            Severity.MODERATE if attempt == "2" else Severity.SEVERE,
        )

    odd = b.application(
        session,
        staging,
        "app-odd",
        name="nightly load v2.1/part_%x [eu]",
        user="dave",
        queue=None,
        start_ms=now - 40 * DAY_MS,
    )
    b.mark_analyzed(session, odd, fingerprint, Severity.NONE)
    summary.rebuild(session)  # the builders bypass the loader and analysis that keep it
    session.commit()


@pytest.fixture(scope="module")
def fleet(pg_server_url: str, pg_template: str) -> Iterator[Fleet]:
    """A fresh database holding the test fleet, for a module's read-only tests."""
    url = create_pg_database(pg_server_url, template=pg_template)
    fingerprint = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).fingerprint
    engine = make_engine(url)
    with Session(engine) as session:
        populate(session, fingerprint)
    engine.dispose()
    yield Fleet(url, fingerprint)
    drop_pg_database(pg_server_url, url)


def make_app(url: str, **extra: object) -> Flask:
    """The web app on ``url`` with test settings."""
    config = parse_config({"database_url": url}, env={})
    settings = {"TESTING": True, "DASHBOARD_CACHE_SECONDS": 0, "NAMES_CACHE_SECONDS": 0}
    return create_app({**settings, **extra}, config=config)


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A module's database, once a fresh PostgreSQL database and once a fresh SQLite file."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('module')}/sparkscope.db"
        return
    server = request.getfixturevalue("pg_server_url")
    url = create_pg_database(server, template=request.getfixturevalue("pg_template"))
    try:
        yield url
    finally:
        drop_pg_database(server, url)


def fetch_corpora(url: str, *folders: Path) -> None:
    """Each recorded corpus fetched into ``url`` as `sparkscope fetch --url` does it."""
    for folder in folders:
        result = CliRunner().invoke(
            cli, ["fetch", "--url", str(folder)], env={"SPARKSCOPE_DATABASE_URL": url}
        )
        assert result.exit_code == 0, result.output


@contextmanager
def served_corpora(server_url: str, template: str, *folders: Path) -> Iterator[str]:
    """A fresh PostgreSQL database with ``folders`` fetched into it, the web app on it served
    over real HTTP (for the browser tests); yields the base URL, drops the database after."""
    url = create_pg_database(server_url, template=template)
    try:
        fetch_corpora(url, *folders)
        flask_app = make_app(url)
        with served(flask_app) as base:
            yield base
        flask_app.extensions["sparkscope.engine"].dispose()
    finally:
        drop_pg_database(server_url, url)


@pytest.fixture(scope="module")
def app(fleet: Fleet) -> Iterator[Flask]:
    """The web app on the fleet database."""
    flask_app = make_app(fleet.url)
    yield flask_app
    flask_app.extensions["sparkscope.engine"].dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """A test client."""
    return app.test_client()
