"""A History Server configured with credentials in its URL (``http://user:password@host``): the
credentials go to the server as HTTP basic auth and nowhere else -- not in the database, a page,
a link, an API answer or a log line."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, select, text, update
from sqlalchemy.orm import Session

from sparkscope.config.loader import parse_config
from sparkscope.models.fetch import HistoryServer
from sparkscope.web.app import create_app
from tests.fetcher.fake_shs import running, spread_listing

USER, PASSWORD = "etl-reader", "s3cr@t/pw:42"  # '@', '/' and ':' percent-encoded in the URL
QUOTED = "s3cr%40t%2Fpw%3A42"
ENTRIES = spread_listing()[-2:]


def _leaks(text_: str) -> list[str]:
    forms = (PASSWORD, QUOTED, base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())
    return [f for f in forms if f in text_]


def test_credentials_in_a_server_url_are_sent_as_basic_auth_and_never_shown(
    tmp_path: Path, fresh_pg_url: str
) -> None:
    with running(ENTRIES) as shs:
        shs.require_auth = (USER, PASSWORD)
        host = shs.url.removeprefix("http://")
        config_file = tmp_path / "sparkscope.yaml"
        config_file.write_text(
            f"database_url: {fresh_pg_url}\n"
            f"servers:\n  - name: prod\n    url: 'http://{USER}:{QUOTED}@{host}'\n"
            "fetcher: {threads: 1, retries: 0}\n"
        )
        proc = subprocess.run(
            [sys.executable, "-m", "sparkscope", "-v", "--config", str(config_file), "fetch"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        assert shs.auth_headers and set(shs.auth_headers) == {expected}
    assert proc.returncode == 0, proc.stderr
    assert "loaded 2" in proc.stdout
    assert _leaks(proc.stdout + proc.stderr) == []  # debug logs included

    engine = create_engine(fresh_pg_url)
    with Session(engine) as s:
        assert s.scalars(select(HistoryServer.url)).all() == [f"http://{host}"]
        dump = "\n".join(str(row) for row in s.execute(text("SELECT * FROM history_server")).all())
        assert _leaks(dump) == []

    app = create_app({"TESTING": True}, config=parse_config({"database_url": fresh_pg_url}))
    client = app.test_client()
    first, second = (e["id"] for e in ENTRIES)
    page = client.get(f"/apps/{first}").get_data(as_text=True)
    assert f'href="http://{host}/history/{first}/' in page
    body = client.get(f"/api/apps/{first}").get_json()
    assert body["shs_url"].startswith(f"http://{host}/history/{first}/")
    compare = client.get(f"/api/compare?left={first}&right={second}").get_data(as_text=True)
    assert f"http://{host}/history/" in compare
    for shown in (page, json.dumps(body), compare):
        assert _leaks(shown) == [] and USER not in shown

    # A row written by an older version, with the credentials in it: still never shown.
    with Session(engine) as s:
        s.execute(update(HistoryServer).values(url=f"http://{USER}:{QUOTED}@{host}"))
        s.commit()
    engine.dispose()
    page = client.get(f"/apps/{first}").get_data(as_text=True)
    body = client.get(f"/api/apps/{first}").get_json()
    assert _leaks(page + json.dumps(body)) == [] and USER not in page
    assert body["shs_url"].startswith(f"http://{host}/history/{first}/")


def test_credentials_are_kept_apart_in_the_config(tmp_path: Path) -> None:
    config = parse_config(
        {
            "database_url": f"postgresql://sparkscope:{QUOTED}@db.example:5432/sparkscope",
            "servers": [{"name": "a", "url": f"https://{USER}:{QUOTED}@shs.example:18480/"}],
        }
    )
    server = config.servers[0]
    assert server.url == "https://shs.example:18480"
    assert (server.username, server.password) == (USER, PASSWORD)
    assert _leaks(repr(config)) == []
