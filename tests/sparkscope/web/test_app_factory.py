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


def test_a_served_app_freezes_what_start_up_built_but_not_its_garbage(
    fresh_sqlite_url: str,
) -> None:
    # In a process of its own: freezing is for the life of the process.
    import subprocess
    import sys

    script = f"""
import gc, weakref
from sparkscope.config.loader import parse_config
from sparkscope.web.app import create_app
class Node: pass
a, b = Node(), Node()
a.other, b.other = b, a   # a cycle that is garbage once the names go
probe = weakref.ref(a)
del a, b
before = gc.get_freeze_count()
create_app(config=parse_config({{"database_url": {fresh_sqlite_url!r}}}, env={{}}))
print(before, gc.get_freeze_count(), probe() is None)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out[0] == "0" and int(out[1]) > 10_000  # modules, mappers, templates: frozen
    assert out[2] == "True"  # the garbage cycle was collected, not frozen


def test_a_testing_app_leaves_the_collector_alone(fresh_sqlite_url: str) -> None:
    import gc

    before = gc.get_freeze_count()
    _app(fresh_sqlite_url)
    assert gc.get_freeze_count() == before
