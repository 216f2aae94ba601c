"""The pages and the API mask secrets again on display: rows stored before a secret shape was
known (or by an older version) never show it."""

from __future__ import annotations

import json

from sqlalchemy import create_engine, update
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.accounting import day_summary as summary
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR, parse_config
from sparkscope.models.application import EnvironmentProperty, Executor
from sparkscope.web.app import create_app
from tests.sparkscope.web import builders as b

SECRETS = ("hunter2", "Eby8vdM02xNOcq", "AKIAIOSFODNN7EXAMPLE", "s3cr3tpw", "pw-in-url")


def test_stored_secrets_from_older_rows_are_masked_on_display(fresh_pg_url: str) -> None:
    engine = create_engine(fresh_pg_url)
    fingerprint = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).fingerprint
    with Session(engine) as s:
        srv = b.server(s, url="http://admin:pw-in-url@shs.example:18080")
        app = b.application(
            s,
            srv,
            "app-old",
            props={"spark.hadoop.fs.azure.account.key.acme.dfs.core.windows.net": "Eby8vdM02xNOcq"},
        )
        s.add(
            EnvironmentProperty(
                application_id=app.id,
                section="system",
                name="sun.java.command",
                value="SparkSubmit app.py 2024-05-01 --password s3cr3tpw",
            )
        )
        s.execute(
            update(Executor)
            .where(Executor.application_id == app.id, Executor.executor_id == "1")
            .values(remove_reason="lost: key AKIAIOSFODNN7EXAMPLE expired")
        )
        error = "SQLException at jdbc:postgresql://db:5432/x?user=etl&password=hunter2"
        b.finding(
            s,
            app,
            "task_failures",
            Severity.SEVERE,
            "3 failed tasks",
            details={
                "columns": [
                    "cause",
                    "failed_tasks",
                    "example_stage",
                    "example_task",
                    "example_error",
                ],
                "rows": [["other", 3, 0, 7, error]],
            },
        )
        b.mark_analyzed(s, app, fingerprint)
        summary.rebuild(s)
        s.commit()
    engine.dispose()

    client = create_app(
        {"TESTING": True}, config=parse_config({"database_url": fresh_pg_url})
    ).test_client()
    page = client.get("/apps/app-old").get_data(as_text=True)
    body = client.get("/api/apps/app-old").get_json()
    shown = page + json.dumps(body)
    for secret in SECRETS:
        assert secret not in shown, secret
    assert 'href="http://shs.example:18080/history/app-old/"' in page
    assert "user=etl" in page and "app.py 2024-05-01" in page
    assert "lost: key" in page
