"""The heuristics config in force: hot reload, last valid config kept, and every bad file (keys,
numbers that cannot be stored, bytes that are not UTF-8) a config error naming the file."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from heuristics.registry import builtin_heuristics
from sparkscope.analysis.heuristics_config import HeuristicsState, load_heuristics
from sparkscope.cli.main import cli

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = ROOT / "config" / "heuristics.yaml"


def test_state_reloads_on_edit_and_keeps_last_valid_config(tmp_path: Path) -> None:
    path = tmp_path / "heuristics.yaml"
    shutil.copy(BUNDLED, path)
    state = HeuristicsState(str(path))
    first, error = state.current()
    assert error is None
    assert state.current()[0] is first  # unchanged file: same registry object, nothing re-read

    path.write_text(BUNDLED.read_text() + "task_granularity:\n  tiny_min_tasks_per_slot: 5000\n")
    time.sleep(0.01)
    second, error = state.current()
    assert error is None and second.fingerprint != first.fingerprint

    path.write_text(
        "stage_skew:\n  task_time_ratio: {low: 9, moderate: 4, severe: 8, critical: 16}\n"
    )
    third, error = state.current()
    assert third is second
    assert error is not None and "stage_skew.task_time_ratio" in error and str(path) in error

    path.write_text("stage_skew: [oops\n")
    fourth, error = state.current()
    assert fourth is second and error is not None and "invalid YAML" in error

    path.write_text("{}\n")
    fifth, error = state.current()
    assert error is None and fifth.fingerprint == load_heuristics(str(BUNDLED)).fingerprint


# A threshold over 64 bits, one that is not finite, and a file that is not UTF-8: each is a
# config error with the file (and key path), never a crash later.
BAD_FILES = [
    (
        b"disk_spill:\n  disk_throughput_bytes_per_s: 18446744073709551616\n",
        "disk_spill.disk_throughput",
    ),
    (b"stage_skew:\n  task_time_ratio: {critical: 1e400}\n", "stage_skew.task_time_ratio.critical"),
    (b"disk_spill:\n  disk_throughput_bytes_per_s: -9223372036854775809\n", "disk_spill.disk_thr"),
    (b"# caf\xe9 au lait\nstage_skew:\n  data_skew_bytes_ratio: 1\n", "not valid UTF-8"),
]


@pytest.mark.parametrize(("content", "message"), BAD_FILES)
def test_state_reports_unstorable_or_undecodable_config(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "heuristics.yaml"
    path.write_text("task_granularity:\n  tiny_min_tasks_per_slot: 5000\n")
    state = HeuristicsState(str(path))
    good, error = state.current()
    assert error is None
    path.write_bytes(content)
    for _ in range(2):  # reported on every page load while the file stays bad, not once
        kept, error = state.current()
        assert kept is good
        assert error is not None and message in error and str(path) in error
    assert kept.params("task_granularity").tiny_min_tasks_per_slot == 5000


@pytest.mark.parametrize(("content", "message"), BAD_FILES)
def test_unstorable_or_undecodable_config_stops_analyze_with_one_line(
    tmp_path: Path, monkeypatch, content: bytes, message: str
) -> None:
    bad = tmp_path / "h.yaml"
    bad.write_bytes(content)
    db = tmp_path / "empty.db"
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", f"sqlite:///{db}")
    assert CliRunner().invoke(cli, ["db", "upgrade"]).exit_code == 0
    before = db.read_bytes()
    monkeypatch.setenv("SPARKSCOPE_HEURISTICS", str(bad))
    result = CliRunner().invoke(cli, ["analyze"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(bad) in lines[0], result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert db.read_bytes() == before  # stopped before writing anything


def test_missing_file_at_start_falls_back_to_defaults(tmp_path: Path) -> None:
    registry, error = HeuristicsState(str(tmp_path / "nope.yaml")).current()
    assert error is not None and "file not found" in error
    assert registry.names == tuple(h.name for h in builtin_heuristics())


@pytest.mark.parametrize(("content", "message"), BAD_FILES[:1] + BAD_FILES[-1:])
def test_fetch_with_a_bad_config_loads_without_scoring_and_says_why(
    tmp_path: Path, monkeypatch, caplog: pytest.LogCaptureFixture, content: bytes, message: str
) -> None:
    from sqlalchemy import create_engine, func, select

    from sparkscope.models.analysis import AnalysisResult
    from sparkscope.models.application import Application

    bad = tmp_path / "h.yaml"
    bad.write_bytes(content)
    db = tmp_path / "s.db"
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("SPARKSCOPE_HEURISTICS", str(bad))
    demo = ROOT / "demo" / "spark-events"
    result = CliRunner().invoke(cli, ["fetch", "--url", str(demo), "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert result.exception is None
    assert any(
        message in r.getMessage() and "not analysing" in r.getMessage() for r in caplog.records
    )
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Application)) == 2  # nothing lost
        assert conn.scalar(select(func.count()).select_from(AnalysisResult)) == 0  # nothing scored
    engine.dispose()
