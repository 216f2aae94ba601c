"""JSON API: /api/apps, /api/apps/<id>, /api/compare, /api/history, and their errors."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.sparkscope.web.conftest import XSS


def test_api_apps_search(client: FlaskClient) -> None:
    body = client.get("/api/apps?name=daily&severity=low").get_json()
    assert body["total"] == 1 and body["page"] == 1 and body["per_page"] == 50
    (app,) = body["apps"]
    assert app["app_id"] == "app-002" and app["server"] == "prod"
    assert app["worst_severity"] == "severe"
    assert app["start_time"].endswith("Z")
    assert {f["heuristic"]: f["severity"] for f in app["findings"]} == {
        "stage_skew": "severe",
        "executor_gc": "low",
    }
    assert client.get("/api/apps").get_json()["total"] == 8


def test_api_app_detail(client: FlaskClient) -> None:
    body = client.get("/api/apps/app-002").get_json()
    assert body["name"] == "daily_sales_etl" and body["duration_ms"] == 40 * 60_000
    assert body["metrics"]["memory_bytes_spilled"] == 5 * 1024**3
    assert body["key_config"]["spark.sql.shuffle.partitions"] == "400"
    assert body["shs_url"] == "http://shs.example:18080/history/app-002/"
    findings = {f["heuristic"]: f for f in body["findings"]}
    skew = findings["stage_skew"]
    assert skew["severity"] == "severe" and skew["value"] == 9.1
    assert skew["title"].startswith("Stage 2")
    assert skew["details"] == {"columns": ["stage", "ratio"], "rows": [[2, 9.1]]}
    assert skew["impact"]["core_hours"] == 1.25 and skew["impact"]["wall_seconds"] == 300.0
    assert skew["impact"]["formula"]
    assert body["findings"][0]["heuristic"] == "stage_skew"  # worst first
    res = body["resources"]
    for key in (
        "allocated_core_hours",
        "used_core_hours",
        "wasted_core_hours",
        "allocated_gb_hours",
    ):
        assert isinstance(res[key], float)
    assert "used_gb_hours" in res and "wasted_gb_hours" in res and "wait" in res
    assert body["previous_run"] == {"app_id": "app-001", "attempt_id": None}


def test_api_app_errors(client: FlaskClient) -> None:
    missing = client.get("/api/apps/nope")
    assert missing.status_code == 404 and missing.get_json()["status"] == 404
    dup = client.get("/api/apps/app-dup")
    assert dup.status_code == 409
    assert dup.get_json()["servers"] == ["prod", "staging"]
    assert client.get("/api/apps/app-dup?server=staging").get_json()["server"] == "staging"


def test_api_json_is_data_not_markup(client: FlaskClient) -> None:
    body = client.get("/api/apps/app-xss").get_json()
    assert body["name"] == XSS and body["user"] == XSS
    assert client.get("/api/apps/app-xss").headers["Content-Type"] == "application/json"


def test_api_compare(client: FlaskClient) -> None:
    body = client.get("/api/compare?left=app-001&right=app-002").get_json()
    assert body["left"]["app_id"] == "app-001" and body["right"]["app_id"] == "app-002"
    duration = next(m for m in body["metrics"] if m["metric"] == "duration_ms")
    assert duration["delta"] == 22 * 60_000 and round(duration["pct_change"], 1) == 122.2
    config = {c["key"]: c["status"] for c in body["config"]}
    assert config["spark.sql.shuffle.partitions"] == "differ"
    assert config["spark.extra.only.right"] == "right_only"
    assert "spark.master" not in config  # same on both sides
    findings = {f["heuristic"]: f for f in body["findings"]}
    assert findings["stage_skew"] == {
        "heuristic": "stage_skew",
        "left": None,
        "right": "severe",
        "one_sided": True,
        "change": "gained",
    }
    assert client.get("/api/compare?left=app-001").status_code == 400
    assert "'right'" in client.get("/api/compare?left=app-001").get_json()["message"]
    assert client.get("/api/compare?left=app-001&right=nope").status_code == 404


def test_api_history(client: FlaskClient) -> None:
    body = client.get("/api/history?name=daily_sales_etl").get_json()
    assert [r["app_id"] for r in body["runs"]] == ["app-001", "app-002"]
    assert body["runs"][1]["worst_severity"] == "severe"
    assert body["runs"][1]["value"] == 40 * 60_000
    gc = client.get("/api/history?name=daily_sales_etl&metric=gc").get_json()
    assert gc["metric"] == "gc"
    assert client.get("/api/history").status_code == 400
    assert client.get("/api/history?name=x&metric=nope").status_code == 400
    assert client.get("/api/history?name=nobody").get_json()["runs"] == []
