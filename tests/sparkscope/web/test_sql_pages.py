"""Recorded SHS -> fetch -> store -> analyse -> the Queries section, the SQL API, the findings in
/api/apps/<id>, search by SQL heuristic and the stage link, on the SQL corpus (demo/sql-events)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient
from sqlalchemy import select, update

from sparkscope.cli.main import cli
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application
from sparkscope.models.sql import SqlExecution, SqlNode
from sparkscope.queries.sql import queries_for_stage
from tests.heuristics.builtin.sql.test_corpus import HEALTHY, LABELLED
from tests.sparkscope.web.conftest import XSS, make_app

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "demo" / "sql-events"
UDF = "local-1796108388437"
ORDERS = "local-1796108177762"


@pytest.fixture(scope="module")
def client(db_url: str) -> Iterator[FlaskClient]:
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(RECORDED)], env={"SPARKSCOPE_DATABASE_URL": db_url}
    )
    assert result.exit_code == 0, result.output
    app = make_app(db_url)
    yield app.test_client()
    app.extensions["sparkscope.engine"].dispose()


@pytest.mark.parametrize(("app_id", "check"), sorted(LABELLED.items()))
def test_each_problem_is_on_its_page_with_the_operator_marked(
    client: FlaskClient, app_id: str, check: str
) -> None:
    page = client.get(f"/apps/{app_id}").get_data(as_text=True)
    queries = page[page.index('<section id="queries">') :]
    queries = queries[: queries.index("</section>")]
    assert f">{check}</span>" in queries  # a finding badge on its query
    flagged = queries[queries.index('class="plan-node flagged"') :]
    assert check in flagged[: flagged.index("</li>")]
    body = client.get(f"/api/apps/{app_id}").get_json()
    finding = next(f for f in body["findings"] if f["heuristic"] == check)
    assert finding["severity"] in ("low", "moderate", "severe", "critical") and finding["impact"]


def test_the_sql_api_has_executions_nodes_with_units_edges_and_findings(
    client: FlaskClient,
) -> None:
    body = client.get(f"/api/apps/{UDF}/sql").get_json()
    assert body["status"] == "ok" and body["total"] == len(body["executions"]) == 2
    udf_query = body["executions"][1]
    assert (
        udf_query["description"] == "normalise with a python udf and count"
        and udf_query["stage_ids"]
    )
    python = next(n for n in udf_query["nodes"] if n["name"] == "BatchEvalPython")
    timing = python["metrics"]["time to run Python workers"]
    assert timing["unit"] == "ms" and timing["total"] > 1000 and timing["stage_id"] is not None
    assert python["stage_ids"] and python["detail"]["Arguments"].startswith("[normalize_email")
    assert {"from", "to"} == set(udf_query["edges"][0]) and udf_query["plan_text"].startswith(
        "== Physical Plan =="
    )
    assert [f["heuristic"] for f in udf_query["findings"]] == ["sql_python_udf"]
    assert udf_query["findings"][0]["node_id"] == python["node_id"]
    assert [f["heuristic"] for f in body["findings"]] == ["sql_python_udf"]
    paged = client.get(f"/api/apps/{UDF}/sql?offset=1&length=1").get_json()
    assert [e["execution_id"] for e in paged["executions"]] == [1] and paged["total"] == 2
    assert client.get(f"/api/apps/{UDF}/sql?length=0").status_code == 400
    assert client.get("/api/apps/no-such-app/sql").status_code == 404


def test_the_healthy_application_shows_its_queries_without_a_finding(client: FlaskClient) -> None:
    page = client.get(f"/apps/{HEALTHY}").get_data(as_text=True)
    queries = page[page.index('<section id="queries">') : page.index('<section id="config">')]
    assert "Queries (5)" in queries and 'class="plan-node' in queries
    assert "flagged" not in queries
    assert client.get(f"/api/apps/{HEALTHY}/sql").get_json()["findings"] == []


def test_search_by_sql_heuristic(client: FlaskClient) -> None:
    found = client.get("/api/apps?heuristic=sql_python_udf").get_json()["apps"]
    assert [a["app_id"] for a in found] == [UDF]
    # The pattern is severe (91x), the finding is rated low: its cost is capped (2.6 s of tasks).
    found = client.get("/api/apps?heuristic=sql_row_explosion&severity=low").get_json()["apps"]
    assert [a["app_id"] for a in found] == ["local-1796108411015"]
    assert (
        client.get("/api/apps?heuristic=sql_row_explosion&severity=moderate").get_json()["apps"]
        == []
    )
    detail = client.get("/api/apps/local-1796108411015").get_json()
    (finding,) = [f for f in detail["findings"] if f["heuristic"] == "sql_row_explosion"]
    assert finding["severity"] == "low" and finding["details"]["rows"][0][3] == 3  # SEVERE
    page = client.get("/search?heuristic=sql_python_udf").get_data(as_text=True)
    assert UDF in page and HEALTHY not in page


def test_a_stage_names_its_query_and_operators(client: FlaskClient, db_url: str) -> None:
    engine = make_engine(db_url)
    with make_sessionmaker(engine)() as s:
        pk = s.scalars(select(Application.id).where(Application.app_id == ORDERS)).one()
        linked = queries_for_stage(s, pk, 8)
        assert [q.execution_id for q in linked] == [2]
        assert linked[0].operators[0][1] == "SortMergeJoin" and linked[0].anchor == "query-2"
        assert queries_for_stage(s, pk, 10_000) == []
    engine.dispose()
    page = client.get(f"/apps/{ORDERS}?query=2").get_data(as_text=True)
    assert 'id="query-2"' in page and "plan description" in page


def test_plan_text_and_names_from_other_peoples_jobs_are_escaped(
    client: FlaskClient, db_url: str
) -> None:
    engine = make_engine(db_url)
    with make_sessionmaker(engine)() as s, s.begin():
        pk = s.scalars(select(Application.id).where(Application.app_id == HEALTHY)).one()
        where = (SqlExecution.application_id == pk) & (SqlExecution.execution_id == 1)
        s.execute(
            update(SqlExecution)
            .where(where)
            .values(description=XSS, plan_text=f"== Physical Plan ==\n{XSS}")
        )
        s.execute(
            update(SqlNode)
            .where(SqlNode.application_id == pk, SqlNode.execution_id == 1, SqlNode.node_id == 0)
            .values(name=XSS, metrics={XSS: ["count", 1, None, None, None, None, None, None, None]})
        )
    engine.dispose()
    page = client.get(f"/apps/{HEALTHY}?query=1").get_data(as_text=True)
    assert XSS not in page
    assert (
        page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4
    )  # description x2, plan text, node, metric
    assert client.get(f"/api/apps/{HEALTHY}/sql").get_json()["executions"][1]["description"] == XSS
