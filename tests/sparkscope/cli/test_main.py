"""The `sparkscope` command: help, db subcommands, config errors as one line with exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import inspect

from sparkscope.cli.main import cli
from sparkscope.db import make_engine


def test_help_lists_subcommands() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in ("db", "serve"):
        assert name in result.output


def test_db_upgrade_and_downgrade_via_env(tmp_path: Path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path / 'd' / 'x.db'}"
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", url)
    runner = CliRunner()
    result = runner.invoke(cli, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert "application" in inspect(make_engine(url)).get_table_names()
    result = runner.invoke(cli, ["db", "downgrade", "base"])
    assert result.exit_code == 0, result.output
    assert "application" not in inspect(make_engine(url)).get_table_names()


def test_db_upgrade_on_postgres(pg_server_url: str, monkeypatch) -> None:
    from tests.conftest import create_pg_database, drop_pg_database

    url = create_pg_database(pg_server_url)
    try:
        monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", url)
        result = CliRunner().invoke(cli, ["db", "upgrade"])
        assert result.exit_code == 0, result.output
        result = CliRunner().invoke(cli, ["db", "check"])
        assert result.exit_code == 0, result.output
        assert "stage" in inspect(make_engine(url)).get_table_names()
    finally:
        drop_pg_database(pg_server_url, url)


def test_config_error_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("fetcher:\n  threds: 3\n")
    # a real process, so we see exactly what a user sees: no traceback
    proc = subprocess.run(
        [sys.executable, "-m", "sparkscope", "--config", str(bad), "db", "current"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(bad) in lines[0] and "fetcher.threds" in lines[0] and "Traceback" not in proc.stderr


def test_malformed_yaml_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("servers: [\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sparkscope", "--config", str(bad), "db", "upgrade"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "invalid YAML" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
