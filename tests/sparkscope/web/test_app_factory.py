"""The app factory wires templates, static files, the database and security headers."""

from __future__ import annotations

from sparkscope.config.loader import parse_config
from sparkscope.web.app import create_app


def _app(url: str):
    return create_app({"TESTING": True}, config=parse_config({"database_url": url}, env={}))


def test_minimal_page_on_both_databases(fresh_db_url: str) -> None:
    client = _app(fresh_db_url).test_client()
    resp = client.get("/")
    assert resp.status_code == 200
    assert b"applications stored" in resp.data
    assert "default-src 'self'" in resp.headers["Content-Security-Policy"]
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    with client.get("/static/css/sparkscope.css") as css:
        assert css.status_code == 200 and b"--ok" in css.data


def test_unknown_route_is_html_404_and_json_for_api(fresh_sqlite_url: str) -> None:
    client = _app(fresh_sqlite_url).test_client()
    resp = client.get("/no/such/page")
    assert resp.status_code == 404 and b"404" in resp.data
    api = client.get("/api/nothing")
    assert api.status_code == 404 and api.get_json()["status"] == 404
