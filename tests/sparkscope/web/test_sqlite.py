"""The embedded SQLite database serves every page too (one-machine start)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from sparkscope.db import make_engine
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import make_app


def test_pages_on_sqlite(fresh_sqlite_url: str) -> None:
    engine = make_engine(fresh_sqlite_url)
    with Session(engine) as session:
        srv = b.server(session, "local", "/data/spark-events")
        b.application(session, srv, "local-1", name="beta job", start_ms=1_000_000)
        b.application(session, srv, "local-2", name="alpha job", start_ms=2_000_000)
        b.application(session, srv, "local-3", name="alpha job", start_ms=3_000_000)
        session.commit()
    engine.dispose()
    client = make_app(fresh_sqlite_url).test_client()
    history = client.get("/history?name=alpha job").get_data(as_text=True)
    assert '<option value="alpha job"><option value="beta job">' in history
    assert "2 runs" in history
    assert client.get("/search?name=ALPHA").get_json() is None
    assert "2 applications" in client.get("/search?name=ALPHA").get_data(as_text=True)
    assert client.get("/apps/local-3").status_code == 200
    assert client.get("/compare?left=local-2&right=local-3").status_code == 200
    assert client.get("/").status_code == 200
    assert client.get("/api/apps/local-3").get_json()["previous_run"]["app_id"] == "local-2"
