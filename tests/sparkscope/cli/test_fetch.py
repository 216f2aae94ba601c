"""`sparkscope fetch`, `dump` and `schedule` as a user runs them: exit codes, replay, lock, truncate, cron."""

from __future__ import annotations

import json
import shlex
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, text

from fetcher.lock import ADVISORY_LOCK_KEY
from sparkscope.cli.fetch import server_for_url
from sparkscope.cli.main import cli
from sparkscope.cli.schedule import crontab_line, parse_interval
from sparkscope.config.loader import parse_config
from sparkscope.db import make_engine
from sparkscope.models.application import Application, Stage
from sparkscope.models.fetch import FetchRun, HistoryServer
from tests.fetcher.recorded import RECORDING


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _count(url: str, model) -> int:
    engine = make_engine(url)
    with engine.connect() as c:
        n = c.scalar(select(func.count()).select_from(model))
    engine.dispose()
    return int(n or 0)


def test_fetch_from_recorded_folder_into_default_sqlite(tmp_path: Path, monkeypatch) -> None:
    """No config file, no database URL: the embedded default is created and filled."""
    monkeypatch.delenv("SPARKSCOPE_DATABASE_URL", raising=False)
    monkeypatch.delenv("SPARKSCOPE_CONFIG", raising=False)
    monkeypatch.setenv("SPARKSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING)])
    assert result.exit_code == 0, result.output
    assert "spark-events: seen 21, loaded 21" in result.output
    url = f"sqlite:///{tmp_path / 'data' / 'sparkscope.db'}"
    assert _count(url, Application) == 21
    again = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING)])
    assert again.exit_code == 0 and "loaded 0, skipped 21" in again.output
    assert _count(url, FetchRun) == 2


def test_fetch_into_postgres_then_truncate(fresh_pg_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_pg_url)
    runner = CliRunner()
    assert runner.invoke(cli, ["fetch", "--url", str(RECORDING), "--limit", "3"]).exit_code == 0
    assert _count(fresh_pg_url, Application) == 3 and _count(fresh_pg_url, Stage) > 0
    refused = runner.invoke(
        cli, ["fetch", "--url", str(RECORDING), "--limit", "1", "--truncate"], input="n\n"
    )
    assert refused.exit_code == 2 and _count(fresh_pg_url, Application) == 3
    done = runner.invoke(
        cli, ["fetch", "--url", str(RECORDING), "--limit", "1", "--truncate", "--yes"]
    )
    assert done.exit_code == 0, done.output
    assert _count(fresh_pg_url, Application) == 1 and _count(fresh_pg_url, HistoryServer) == 1


def test_unreachable_server_exits_3(fresh_sqlite_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    url = f"http://127.0.0.1:{_closed_port()}"
    result = CliRunner().invoke(cli, ["fetch", "--url", url])
    assert result.exit_code == 3, result.output
    assert "unreachable" in result.output
    engine = make_engine(fresh_sqlite_url)
    with engine.connect() as c:
        status, error = c.execute(select(FetchRun.status, FetchRun.error)).one()
    assert status == "failed" and "unreachable" in error


def test_server_named_after_host_and_port() -> None:
    assert server_for_url("http://shs.example:18080/").name == "shs.example:18080"
    assert server_for_url("https://shs.example").name == "shs.example:443"
    assert server_for_url(str(RECORDING)).name == "spark-events"


def test_usage_errors_exit_2(fresh_sqlite_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    monkeypatch.delenv("SPARKSCOPE_CONFIG", raising=False)
    runner = CliRunner()
    bad_since = runner.invoke(cli, ["fetch", "--url", str(RECORDING), "--since", "yesterday"])
    assert bad_since.exit_code == 2 and "--since" in bad_since.output
    no_server = runner.invoke(cli, ["fetch"])
    assert no_server.exit_code == 2 and "no History Server configured" in no_server.output


def test_second_run_while_locked_exits_0_and_loads_nothing(fresh_pg_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_pg_url)
    holder = make_engine(fresh_pg_url)
    with holder.connect() as conn:
        assert conn.execute(
            text("SELECT pg_try_advisory_lock(:k)"), {"k": ADVISORY_LOCK_KEY}
        ).scalar()
        result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING)])
        assert result.exit_code == 0 and "another fetch is running" in result.output
        assert _count(fresh_pg_url, Application) == 0
        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_LOCK_KEY})
    holder.dispose()


def test_sqlite_lock_file_blocks_a_second_run(fresh_sqlite_url: str, monkeypatch) -> None:
    import fcntl

    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    lock_path = fresh_sqlite_url.removeprefix("sqlite:///") + ".fetch-lock"
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING)])
    assert result.exit_code == 0 and "another fetch is running" in result.output
    assert _count(fresh_sqlite_url, Application) == 0


def test_dump_then_replay_round_trips(tmp_path: Path, fresh_sqlite_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    out = tmp_path / "rec"
    result = CliRunner().invoke(
        cli, ["dump", "--server", str(RECORDING), "--out", str(out), "--limit", "2"]
    )
    assert result.exit_code == 0, result.output
    index = json.loads((out / "index.json").read_text())["requests"]
    assert "applications?status=completed" in index and len(index) > 8
    fetched = CliRunner().invoke(cli, ["fetch", "--url", str(out)])
    assert fetched.exit_code == 0 and "loaded 2" in fetched.output


@pytest.mark.parametrize(
    ("every", "minutes", "spec"),
    [
        ("10m", 10, "*/10 * * * *"),
        ("1h", 60, "0 * * * *"),
        ("5", 5, "*/5 * * * *"),
        ("6h", 360, "0 */6 * * *"),
    ],
)
def test_schedule_intervals(every: str, minutes: int, spec: str) -> None:
    assert parse_interval(every) == minutes
    line = crontab_line(minutes, parse_config({}, env={}), "/var/log/ss.log")
    assert line.startswith(spec + " ") and "flock -n" in line
    assert line.endswith("' >> /var/log/ss.log 2>&1 # sparkscope-fetch")
    # fetch, then notify whatever fetch returned (an unreachable server holds back no alert)
    script = shlex.split(line.split(" sh -c ", 1)[1])[0]
    assert [part.split()[-1] for part in script.split("; ")] == ["fetch", "notify"]


def test_schedule_prunes_after_notify_when_asked() -> None:
    line = crontab_line(10, parse_config({}, env={}), "/var/log/ss.log", prune_days=90)
    steps = shlex.split(line.split(" sh -c ", 1)[1])[0].split("; ")
    assert len(steps) == 3 and steps[-1].endswith(" prune --keep-days 90")


@pytest.mark.parametrize("every", ["7m", "0m", "90m", "soon"])
def test_schedule_rejects_uneven_intervals(every: str) -> None:
    with pytest.raises(ValueError):
        parse_interval(every)


def test_schedule_prints_line_with_config_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SPARKSCOPE_DATA_DIR", raising=False)
    cfg = tmp_path / "s.yaml"
    cfg.write_text("data_dir: /srv/ss\n")
    result = CliRunner().invoke(cli, ["--config", str(cfg), "schedule", "--every", "10m"])
    assert result.exit_code == 0
    assert f"SPARKSCOPE_CONFIG={cfg}" in result.output and "/srv/ss/fetch.log" in result.output


def test_schedule_install_is_idempotent(tmp_path: Path, monkeypatch) -> None:
    """--install replaces our line and keeps the user's other lines.

    A stand-in `crontab` on PATH keeps the table in a file, so the test never edits the real
    user's crontab; it speaks the same `crontab -l` / `crontab -` protocol.
    """
    table = tmp_path / "table"
    table.write_text("0 3 * * * /usr/bin/backup\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "crontab"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = -l ]; then cat {table}; else cat > {table}; fi\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{__import__('os').environ['PATH']}")
    runner = CliRunner()
    for every in ("10m", "5m"):
        result = runner.invoke(cli, ["schedule", "--every", every, "--install"])
        assert result.exit_code == 0, result.output
    lines = table.read_text().splitlines()
    assert lines[0] == "0 3 * * * /usr/bin/backup"
    ours = [x for x in lines if x.endswith("# sparkscope-fetch")]
    assert len(ours) == 1 and ours[0].startswith("*/5 * * * *")


def test_unreachable_server_logs_one_short_line_per_retry(
    fresh_sqlite_url: str, tmp_path: Path, monkeypatch, caplog
) -> None:
    import logging

    cfg = tmp_path / "s.yaml"
    cfg.write_text("fetcher:\n  retries: 2\n  backoff_factor_s: 0\n")
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    monkeypatch.setenv("SPARKSCOPE_CONFIG", str(cfg))
    caplog.set_level(logging.INFO)
    url = f"http://127.0.0.1:{_closed_port()}"
    result = CliRunner().invoke(cli, ["fetch", "--url", url])
    assert result.exit_code == 3, result.output
    assert not [r for r in caplog.records if r.name.startswith("urllib3")]
    retries = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retry ")]
    assert [m.split(":", 1)[0] for m in retries] == ["retry 1 of 2", "retry 2 of 2"]
    assert all(f"{url}/api/v1/applications?status=completed" in m for m in retries)
    assert all(m.endswith("(NewConnectionError)") and len(m) < 200 for m in retries)
    assert (
        "stopped: server unreachable: Connection refused (ConnectionRefusedError)" in result.output
    )


def test_missing_folder_says_so(fresh_sqlite_url: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    monkeypatch.delenv("SPARKSCOPE_CONFIG", raising=False)
    missing = tmp_path / "no" / "such" / "folder"
    result = CliRunner().invoke(cli, ["fetch", "--url", str(missing)])
    assert result.exit_code == 2
    assert f"the folder {missing} does not exist" in result.output
    assert "recorded.invalid" not in result.output
    assert _count(fresh_sqlite_url, FetchRun) == 0


def test_backfill_and_since_together_are_refused(fresh_sqlite_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    monkeypatch.delenv("SPARKSCOPE_CONFIG", raising=False)
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(RECORDING), "--backfill", "--since", "2026-01-01"]
    )
    assert result.exit_code == 2 and "pick one" in result.output


def test_analyze_unknown_app_id_says_so_and_exits_1(fresh_sqlite_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    monkeypatch.delenv("SPARKSCOPE_CONFIG", raising=False)
    runner = CliRunner()
    assert runner.invoke(cli, ["fetch", "--url", str(RECORDING), "--limit", "1"]).exit_code == 0
    engine = make_engine(fresh_sqlite_url)
    with engine.connect() as c:
        known = c.scalar(select(Application.app_id))
    engine.dispose()
    ok = runner.invoke(cli, ["analyze", "--app-id", known, "--workers", "1"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(
        cli, ["analyze", "--app-id", known, "--app-id", "app-nope", "--workers", "1"]
    )
    assert bad.exit_code == 1
    assert "no stored application app-nope" in bad.output and known not in bad.output.split(":")[-1]
