"""The SQL part end to end against a real Spark History Server (pyspark's, Java 17), over the
event logs of tests/fixtures/eventlogs-sql: real Spark 4.0.1 applications with other variants of
the SQL-plan problems than the corpus the checks were written on (tests/support/sql_variants.py).

Fetch from the server, store, analyse with the production defaults, then: the server's executions
are the stored ones, each variant's problem is found by the check of its name (other SQL checks
at most LOW), the healthy one has no SQL finding, and the pages show them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from sqlalchemy import func, select

from sparkscope.db import make_engine
from sparkscope.models.application import Application
from sparkscope.models.sql import SqlExecution, SqlNode
from tests.sparkscope.web.conftest import make_app
from tests.support.shs import have_java_and_pyspark, running_shs
from tests.support.sql_variants import VARIANTS

pytestmark = pytest.mark.shs

EVENTLOGS = Path(__file__).resolve().parents[1] / "fixtures" / "eventlogs-sql"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shs_url() -> Iterator[str]:
    if not have_java_and_pyspark():
        if os.environ.get("CI"):
            pytest.fail("CI needs Java 17 and pyspark for the real-SHS tests (make setup-test)")
        pytest.skip("needs Java 17 and pyspark (pip install -e '.[test]')")
    with running_shs(EVENTLOGS, expect_apps=len(VARIANTS)) as url:
        yield url


@pytest.fixture(scope="module")
def fetched(shs_url: str, pg_server_url: str, pg_template: str) -> Iterator[str]:
    from tests.conftest import create_pg_database, drop_pg_database

    url = create_pg_database(pg_server_url, template=pg_template)
    env = {**os.environ, "SPARKSCOPE_DATABASE_URL": url}
    env.pop("SPARKSCOPE_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "sparkscope", "fetch", "--url", shs_url],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        yield url
    finally:
        drop_pg_database(pg_server_url, url)


def test_the_stored_executions_are_the_servers(shs_url: str, fetched: str) -> None:
    api = f"{shs_url}/api/v1"
    engine = make_engine(fetched)
    with engine.connect() as c:
        for pk, app_id in c.execute(select(Application.id, Application.app_id)):
            served = requests.get(
                f"{api}/applications/{app_id}/sql", params={"length": 1000}, timeout=60
            ).json()
            stored = c.scalar(
                select(func.count())
                .select_from(SqlExecution)
                .where(SqlExecution.application_id == pk)
            )
            nodes = c.scalar(
                select(func.count()).select_from(SqlNode).where(SqlNode.application_id == pk)
            )
            assert stored == len(served) and nodes == sum(len(e["nodes"]) for e in served), app_id
    engine.dispose()


def test_each_variant_is_found_by_its_check_and_the_healthy_one_is_quiet(fetched: str) -> None:
    client = make_app(fetched).test_client()
    apps = {a["name"]: a for a in client.get("/api/apps").get_json()["apps"]}
    assert set(apps) == set(VARIANTS)
    wrong = {}
    for name, (check, _what) in VARIANTS.items():
        body = client.get(f"/api/apps/{apps[name]['app_id']}/sql").get_json()
        fired = {f["heuristic"]: f["severity_level"] for f in body["findings"]}
        others = {h: s for h, s in fired.items() if h != check and s > 1}
        if (check is None and fired) or (check is not None and check not in fired) or others:
            wrong[name] = fired
        if check is not None:
            page = client.get(apps[name]["url"]).get_data(as_text=True)
            assert f">{check}</span>" in page[page.index('<section id="queries">') :]
    assert wrong == {}
