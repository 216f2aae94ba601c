"""The event-log source fetches like a server: incremental over (path, size, modification time),
in-progress logs left until complete, bad logs recorded and given up, the latest attempt only,
fsspec URLs, and the fetch command's exit codes and summary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from fetcher.eventlog.source import split_name_id
from fetcher.job import run_server
from fetcher.options import FetchOptions, ServerResult
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.models.application import Application
from sparkscope.models.eventlog import EventLogFile, StageTaskTimes
from sparkscope.models.fetch import FetchFailure
from tests.fetcher.eventlog.conftest import ROOT, SAMPLE

FCFG = FetcherConfig(threads=2, max_app_failures=2)
LOGS = sorted(SAMPLE.iterdir())


def _fetch(factory: sessionmaker[Session], where: str, **opts: Any) -> ServerResult:
    server = ServerConfig(name="logs", url=where, event_logs=where)
    return run_server(factory, server, FCFG, FetchOptions(**opts))


def _apps(factory: sessionmaker[Session]) -> dict[str, int | None]:
    with factory() as s:
        return dict(s.execute(select(Application.app_id, Application.last_updated_ms)).all())


def _copy(src: Path, folder: Path) -> Path:
    dst = folder / src.name
    shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    return dst


def test_names_give_app_and_attempt_ids() -> None:
    assert split_name_id("local-1795971819513") == ("local-1795971819513", None)
    assert split_name_id("application_1700000000000_0042") == (
        "application_1700000000000_0042",
        None,
    )
    assert split_name_id("application_1700000000000_0042_2") == (
        "application_1700000000000_0042",
        "2",
    )
    assert split_name_id("local-71796114417500_1") == ("local-71796114417500", "1")
    assert split_name_id("spark-a1b2c3") == ("spark-a1b2c3", None)


def test_reads_each_log_once_and_again_when_it_changes(
    factory: sessionmaker[Session], tmp_path: Path
) -> None:
    for p in LOGS[:3]:
        _copy(p, tmp_path)
    first = _fetch(factory, str(tmp_path))
    assert (first.seen, first.loaded, first.skipped, first.failed) == (3, 3, 0, [])
    again = _fetch(factory, str(tmp_path))
    assert (again.loaded, again.skipped, again.requests) == (0, 3, 0)
    # a log rewritten (new modification time) is read again and replaces its application
    changed = next((tmp_path / LOGS[0].name).glob("events_*"))
    os.utime(changed, (1_900_000_000, 1_900_000_000))
    _copy(LOGS[3], tmp_path)
    third = _fetch(factory, str(tmp_path))
    assert (third.loaded, third.skipped) == (2, 2)
    apps = _apps(factory)
    assert len(apps) == 4 and apps[LOGS[0].name.removeprefix("eventlog_v2_")] == 1_900_000_000_000
    with factory() as s:
        marks = s.execute(
            select(EventLogFile.path, EventLogFile.mtime_ms, EventLogFile.state)
        ).all()
        assert len(marks) == 4 and {m.state for m in marks} == {"loaded"}
        assert s.scalar(select(func.count()).select_from(StageTaskTimes)) > 0


def test_in_progress_logs_wait_until_complete(
    factory: sessionmaker[Session], tmp_path: Path
) -> None:
    log = _copy(LOGS[0], tmp_path)
    marker = next(log.glob("appstatus_*"))
    running = marker.with_name(marker.name + ".inprogress")
    marker.rename(running)
    r = _fetch(factory, str(tmp_path))
    assert (r.seen, r.loaded, r.failed) == (0, 0, [])
    running.unlink()  # no marker at all: Spark's reader refuses it, so still in progress
    assert _fetch(factory, str(tmp_path)).loaded == 0
    marker.write_bytes(b"")  # the driver finished: the marker loses its .inprogress
    assert _fetch(factory, str(tmp_path)).loaded == 1


def test_a_bad_log_fails_is_given_up_and_is_read_again_once_rewritten(
    factory: sessionmaker[Session], tmp_path: Path
) -> None:
    good = _copy(LOGS[1], tmp_path)
    bad = tmp_path / "local-1234567890123"
    plain = (ROOT / "tests/fixtures/eventlog-layouts/local-1796114417500").read_bytes()
    bad.write_bytes(plain[:-30])  # a completed single-file log cut inside its last line
    r = _fetch(factory, str(tmp_path))
    assert r.loaded == 1 and [a for a, _ in r.failed] == ["local-1234567890123"]
    assert "truncated event log" in r.failed[0][1]
    r = _fetch(factory, str(tmp_path))
    assert [a for a, _ in r.failed] == ["local-1234567890123"] and r.gave_up == []
    r = _fetch(factory, str(tmp_path))  # max_app_failures = 2: given up
    assert (r.failed, r.gave_up) == ([], ["local-1234567890123"])
    with factory() as s:
        f = s.scalars(select(FetchFailure)).one()
        assert f.failures == 2 and "truncated" in f.last_error
    bad.write_bytes(plain)  # rewritten whole: a new modification time, read again
    os.utime(bad, (1_900_000_100, 1_900_000_100))
    r = _fetch(factory, str(tmp_path))
    assert r.loaded == 1 and r.failed == []
    with factory() as s:
        assert s.scalar(select(func.count()).select_from(FetchFailure)) == 0
    assert good.exists() and len(_apps(factory)) == 2


def test_only_the_latest_attempt_is_stored(
    factory: sessionmaker[Session], layouts: Path, tmp_path: Path
) -> None:
    for name in ("local-71796114417500_1", "local-71796114417500_2"):
        _copy(layouts / name, tmp_path)
    r = _fetch(factory, str(tmp_path))
    assert (r.seen, r.loaded) == (1, 1)
    with factory() as s:
        assert s.execute(select(Application.app_id, Application.attempt_id)).all() == [
            ("local-71796114417500", "2")
        ]


def test_every_codec_and_layout_loads(factory: sessionmaker[Session], layouts: Path) -> None:
    r = _fetch(factory, str(layouts))
    # the killed driver's rolling log and the cut .inprogress file are in progress; the two
    # attempts count once; everything else is a completed log of its own
    assert r.failed == [] and r.loaded == r.seen == 8


def test_an_fsspec_url_reads_like_a_folder(factory: sessionmaker[Session]) -> None:
    fsspec = pytest.importorskip("fsspec")
    mem = fsspec.filesystem("memory")
    for log in LOGS[:2]:
        for f in log.iterdir():
            with mem.open(f"/logs-{os.getpid()}/{log.name}/{f.name}", "wb") as out:
                out.write(f.read_bytes())
    r = _fetch(factory, f"memory://logs-{os.getpid()}")
    assert (r.loaded, r.failed) == (2, [])
    assert sorted(_apps(factory)) == sorted(p.name.removeprefix("eventlog_v2_") for p in LOGS[:2])
    assert _fetch(factory, f"memory://logs-{os.getpid()}").skipped == 2
    mem.rm(f"/logs-{os.getpid()}", recursive=True)


def test_a_missing_location_is_unreachable(factory: sessionmaker[Session], tmp_path: Path) -> None:
    r = _fetch(factory, str(tmp_path / "gone"))
    assert r.unreachable and "cannot list the event logs" in r.unreachable


def _cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARKSCOPE_DATA_DIR": str(tmp_path / "data")}
    env.pop("SPARKSCOPE_DATABASE_URL", None)
    env.pop("SPARKSCOPE_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "sparkscope", "fetch", "--no-analyze", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_fetch_event_logs_command_exit_codes_and_summary(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _copy(LOGS[0], logs)
    out = _cli(["--event-logs", str(logs)], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "eventlogs:logs: seen 1, loaded 1, skipped 0, failed 0" in out.stdout
    (logs / "local-1234567890123").write_bytes(b'{"Event":"SparkListenerLogStart"}\n{"broken\n')
    out = _cli(["--event-logs", str(logs)], tmp_path)
    assert out.returncode == 1 and "failed local-1234567890123: truncated" in out.stdout
    out = _cli(["--event-logs", str(tmp_path / "nowhere")], tmp_path)
    assert out.returncode == 2 and "does not exist" in out.stderr + out.stdout
    out = _cli(["--event-logs", str(logs), "--url", "http://127.0.0.1:9"], tmp_path)
    assert out.returncode == 2


def test_fsspec_local_filesystem_stores_what_the_plain_folder_stores(
    factory: sessionmaker[Session], tmp_path: Path
) -> None:
    """The same logs through fsspec's local driver (``local://``) and as a plain folder: the
    same applications with the same times (the two readers see the same sizes and mtimes)."""
    pytest.importorskip("fsspec")
    for p in LOGS[:2]:
        _copy(p, tmp_path)
    r = _fetch(factory, f"local://{tmp_path}")
    assert (r.loaded, r.failed) == (2, [])
    via_fsspec = _apps(factory)
    with factory() as s:
        marks = dict(s.execute(select(EventLogFile.path, EventLogFile.size)).all())
    from fetcher.eventlog.read.files import open_log

    for path, size in marks.items():
        assert open_log(path).size == size
    assert via_fsspec == {
        p.name.removeprefix("eventlog_v2_"): open_log(str(tmp_path / p.name)).modification_time_ms
        for p in LOGS[:2]
    }
