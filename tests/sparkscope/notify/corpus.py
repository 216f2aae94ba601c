"""The recorded corpora (demo/) loaded by a real `sparkscope fetch` with notifications configured,
once per database kind, and copies of that database for each test."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from sparkscope.cli.main import cli
from tests.conftest import create_pg_database

ROOT = Path(__file__).resolve().parents[3]
SPARK_EVENTS = ROOT / "demo" / "spark-events"
RECURRING = ROOT / "demo" / "recurring-events"
BASE_URL = "https://sparkscope.example.com/ss"

#: The notifications the corpora are fetched with.
NOTIFICATIONS: dict[str, Any] = {
    "base_url": BASE_URL,
    "channels": [
        {
            "name": "hook",
            "type": "webhook",
            "url": "http://127.0.0.1:9/hook",
            "secret_env": "T_HOOK",
        },
        {
            "name": "mail",
            "type": "email",
            "smtp_host": "127.0.0.1",
            "smtp_port": 9,
            "starttls": False,
            "from": "sparkscope@example.com",
            "to": ["team@example.com"],
        },
        {"name": "slack", "type": "slack", "webhook_url_env": "T_SLACK"},
    ],  # fmt: skip
    "rules": [
        {
            "name": "severe",
            "when": {
                "min_severity": "severe",
                "failed": True,
                "regression": True,
                "cost_spike_pct": 50,
                "deadline": "2h",
            },
            "channels": ["hook"],
        },  # fmt: skip
        {
            # the hook has the failure from the rule above: only Slack gets it from this one
            "name": "failures",
            "when": {"failed": True},
            "channels": ["slack", "hook"],
        },
        {
            "name": "daily-mail",
            "scope": {"name": "^(daily|flaky)_"},
            "when": {"min_severity": "low"},
            "channels": ["mail"],
            "max_per_hour": 3,
        },
    ],
    "mutes": [{"name": "^flaky_", "until": "2099-01-01", "reason": "known flaky source"}],
    "digests": [
        {"name": "evening", "every": "day", "at": "18:00", "timezone": "UTC", "channels": ["mail"]}
    ],
}


def write_config(path: Path, notifications: dict[str, Any] | None = None, **top: Any) -> Path:
    """A sparkscope.yaml with these notifications (the corpus's by default)."""
    raw = {**top, "notifications": NOTIFICATIONS if notifications is None else notifications}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def fetch(db_url: str, config: Path, *folders: Path, args: tuple[str, ...] = ()) -> str:
    """`sparkscope fetch --url FOLDER` for each folder, as a user runs it."""
    out = []
    for folder in folders:
        result = CliRunner().invoke(
            cli,
            ["fetch", "--url", str(folder), *args],
            env={"SPARKSCOPE_DATABASE_URL": db_url, "SPARKSCOPE_CONFIG": str(config)},
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        out.append(result.output)
    return "\n".join(out)


def copy_database(url: str, pg_server_url: str, folder: Path) -> str:
    """A copy of the database at ``url`` (nobody may be connected to it)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        return create_pg_database(pg_server_url, template=parsed.database)
    target = folder / f"copy-{len(list(folder.glob('copy-*.db')))}.db"
    with sqlite3.connect(str(parsed.database)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(str(parsed.database), target)
    return f"sqlite:///{target}"
