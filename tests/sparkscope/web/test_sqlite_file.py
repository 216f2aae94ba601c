"""The web app never creates a SQLite database: a file deleted under a running server gives 503s
(never a 500, never a new empty file), and the restored file is served again."""

from __future__ import annotations

import shutil
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy.orm import Session
from werkzeug.serving import make_server

from sparkscope.db import make_engine
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import make_app

PAGES = ["/", "/search", "/apps/local-2", "/history?name=alpha%20job", "/api/apps"]
ROUNDS = 10  # requests per page in each phase, 5 pages: 50 concurrent requests


@pytest.fixture
def served(tmp_path: Path, fresh_sqlite_url: str) -> Iterator[tuple[str, Path]]:
    """A populated SQLite file served by a real threaded WSGI server; yields (base URL, file)."""
    engine = make_engine(fresh_sqlite_url)
    with Session(engine) as session:
        srv = b.server(session, "local", "/data/spark-events")
        b.application(session, srv, "local-1", name="alpha job", start_ms=1_000_000)
        b.application(session, srv, "local-2", name="alpha job", start_ms=2_000_000)
        session.commit()
    engine.dispose()
    app = make_app(fresh_sqlite_url)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", tmp_path / "sparkscope.db"
    server.shutdown()
    thread.join(timeout=10)
    app.extensions["sparkscope.engine"].dispose()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)


def statuses(base: str) -> Counter[int]:
    """Status codes of 50 requests sent 10 at a time."""
    urls = [base + page for page in PAGES for _ in range(ROUNDS)]
    with ThreadPoolExecutor(max_workers=10) as pool:
        return Counter(pool.map(_status, urls))


def test_delete_and_restore_under_a_running_server(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    base, path = served
    assert statuses(base) == Counter({200: 50})
    backup = tmp_path / "backup.db"
    shutil.copy2(path, backup)

    path.unlink()
    assert statuses(base) == Counter({503: 50})
    assert not path.exists()  # no new empty database
    with urllib.request.urlopen(base + "/static/js/plotly.min.js", timeout=30) as resp:
        assert resp.status == 200  # files need no database

    shutil.copy2(backup, path)
    assert statuses(base) == Counter({200: 50})
