"""The presentation vocabulary: one formatter per unit, severity styles from the enum, details
tables with labels and units, root-cause lines of failure messages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from heuristics.result import Details, Severity
from heuristics.stats import fmt_ms
from sparkscope.present.columns import column, details_table, finding_value, root_cause
from sparkscope.present.display import (
    SEVERITIES,
    axis_scale,
    change_class,
    fmt_bytes,
    fmt_duration_ms,
    fmt_fraction,
    fmt_hours,
    fmt_money,
    fmt_pct_change,
    fmt_time_ms,
    fmt_times,
    fmt_unit,
    is_per_run_setting,
    one_line,
    severity_css,
    severity_name,
    severity_style,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "–"),
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (5 * 1024**3, "5.0 GiB"),
        (-2048, "-2.0 KiB"),
    ],
)
def test_bytes(value: int | None, text: str) -> None:
    assert fmt_bytes(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "–"),
        (0, "0 ms"),
        (450, "450 ms"),
        (1587, "1.6 s"),
        (4200, "4.2 s"),
        (61_000, "1.0 min"),
        (192_000, "3.2 min"),
        (3_723_000, "1.0 h"),
        (-4200, "-4.2 s"),
    ],
)
def test_duration_one_rule(value: int | None, text: str) -> None:
    assert fmt_duration_ms(value) == text
    if value is not None and value >= 0:
        # The same words as the heuristics' titles.
        assert fmt_duration_ms(value) == fmt_ms(value)


def test_other_units() -> None:
    assert fmt_time_ms(0) == "1970-01-01T00:00:00Z"
    assert fmt_time_ms(1_795_971_819_513) == "2026-11-29T17:03:39Z"
    assert fmt_pct_change(12.345) == "+12.3%" and fmt_pct_change(None) == "–"
    assert fmt_hours(0.01234) == "0.0123" and fmt_hours(1234.5) == "1,234.50"
    assert fmt_hours(0.0002) == "< 0.001" and fmt_hours(0) == "0" and fmt_hours(0.444) == "0.444"
    assert fmt_money(12.5, "EUR") == "12.50 EUR"
    assert fmt_times(8.23) == "8.2×" and fmt_times(float("inf")) == "∞×"
    assert fmt_fraction(0.085) == "8.5%"
    assert fmt_unit(167, "ms") == "167 ms" and fmt_unit(2.5, "seconds") == "2.5 s"
    assert fmt_unit(0.4, "ratio") == "40.0%" and fmt_unit(False, "bool") == "no"
    assert fmt_unit(4, "severity") == "CRITICAL"


def test_severity_vocabulary_comes_from_the_enum() -> None:
    assert [s.name for s in SEVERITIES] == [s.name.lower() for s in Severity]
    assert severity_name(None) == "unknown" and severity_name(7) == "unknown"
    assert severity_style(Severity.SEVERE).css_class == "sev-severe"
    colors = [s.color for s in SEVERITIES]
    assert len(set(colors)) == len(colors)  # severe and critical no longer share a colour
    css = severity_css()
    for s in SEVERITIES:
        assert f".sev-border-{s.name}{{border-left-color:{s.color}}}" in css


def test_no_severity_literals_outside_the_vocabulary() -> None:
    # Templates, the stylesheet and the chart code name no severity: they read it from display.
    words = re.compile(r"\b(moderate|severe|critical)\b")
    sources = [*ROOT.joinpath("templates").rglob("*.html"), ROOT / "static/css/sparkscope.css"]
    sources.append(ROOT / "sparkscope/present/charts.py")
    offenders = [str(p) for p in sources if words.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_details_table_labels_and_units() -> None:
    details = {
        "columns": ["job", "name", "tasks", "failed_tasks", "failed_stages", "duration_ms"],
        "rows": [[4, "collect at job.py:35", 6, 1, 1, 1587]],
    }
    table = details_table("job_failures", details)
    assert table is not None
    assert table.headers == ("Job", "Name", "Tasks", "Failed tasks", "Failed stages", "Duration")
    assert [c.text for c in table.rows[0]] == ["4", "collect at job.py:35", "6", "1", "1", "1.6 s"]
    stages = details_table(
        "stage_failures",
        Details(("stage", "recovered", "severity"), ((6, False, int(Severity.SEVERE)),)),
    )
    assert stages is not None
    assert [c.text for c in stages.rows[0]] == ["6", "no", "SEVERE"]
    assert stages.rows[0][2].level == 3
    assert details_table("x", {"columns": ["a"], "rows": []}) is None


def test_per_row_units_and_fallbacks() -> None:
    table = details_table(
        "executor_load_imbalance",
        {
            "columns": ["metric", "median", "max", "ratio"],
            "rows": [["task_time_ms", 60_000, 240_000, 4.0], ["input_bytes", 1024, 4096, 4.0]],
        },
    )
    assert table is not None
    assert [c.text for c in table.rows[0]] == ["Task time", "1.0 min", "4.0 min", "4.0×"]
    assert [c.text for c in table.rows[1]] == ["Input", "1.0 KiB", "4.0 KiB", "4.0×"]
    assert column("executor_memory", "ratio").unit == "fraction"
    undeclared = column("new_heuristic", "wait_time_ms")
    assert (undeclared.label, undeclared.unit) == ("Wait time ms", "ms")


PY_ERROR = (
    "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
    '  File "/jobs/fail_app_crash.py", line 28, in decode\n'
    "    return int(raw)  # ValueError on 'corrupt'\n"
    "           ^^^^^^^^\n"
    "ValueError: invalid literal for int() with base 10: 'corrupt'\n"
    "\n"
    "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:581)\n"
    "\tat org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:650)\n"
)
JAVA_ERROR = (
    "org.apache.spark.SparkException: Job aborted.\n"
    "\tat org.apache.spark.sql.execution.FileFormatWriter.write(FileFormatWriter.scala:231)\n"
    "Caused by: java.io.IOException: Mkdirs failed\n"
    "\tat org.apache.hadoop.fs.FileSystem.create(FileSystem.java:1)\n"
    "Caused by: java.nio.file.AccessDeniedException: /data/out\n"
    "\t... 12 more\n"
)


def test_root_cause_lines() -> None:
    assert root_cause(PY_ERROR) == "ValueError: invalid literal for int() with base 10: 'corrupt'"
    stage_reason = "Job aborted due to stage failure: Task 5 failed: " + PY_ERROR
    assert root_cause(stage_reason).startswith("ValueError: invalid literal")
    assert root_cause(JAVA_ERROR) == "java.nio.file.AccessDeniedException: /data/out"
    assert root_cause("ExecutorLostFailure (executor 3 exited)\nmore") == (
        "ExecutorLostFailure (executor 3 exited)"
    )
    assert root_cause(None) == "" and len(root_cause("x" * 1000)) == 300


def test_message_cells_keep_the_whole_text() -> None:
    table = details_table(
        "task_failures", {"columns": ["cause", "example_error"], "rows": [["other", PY_ERROR]]}
    )
    assert table is not None
    cell = table.rows[0][1]
    assert cell.text.startswith("ValueError") and cell.full == PY_ERROR


def test_finding_values_in_their_unit() -> None:
    assert finding_value("task_failures", 0.05) == "5.0%"
    assert finding_value("stage_skew", 9.1) == "9.1×"
    assert finding_value("task_granularity", 68.0) == "68 ms"
    assert finding_value("unknown_heuristic", 0.25) == "0.25"


def test_compare_helpers() -> None:
    assert change_class("duration_ms", 5) == "worse" and change_class("duration_ms", -5) == "better"
    assert change_class("input_bytes", 10**9) == "" and change_class("duration_ms", 0) == ""
    for key in ("spark.app.id", "spark.app.startTime", "spark.app.submitTime", "spark.driver.port"):
        assert is_per_run_setting(key)
    assert not is_per_run_setting("spark.sql.shuffle.partitions")


def test_axis_scale_fits_the_values() -> None:
    assert axis_scale("ms", [7_770, 13_137]) == (1000.0, "seconds")
    assert axis_scale("ms", [300_000]) == (60_000.0, "minutes")
    assert axis_scale("ms", [3 * 3_600_000]) == (3_600_000.0, "hours")
    assert axis_scale("bytes", [5 * 1024**3]) == (1024.0**3, "GiB")
    assert axis_scale("bytes", [5 * 1024**2]) == (1024.0**2, "MiB")


def test_one_line_description() -> None:
    doc = "Disk spill: how much a stage spilled compared with the data it processed.\n\nMore."
    assert (
        one_line(doc, "Disk spill")
        == "How much a stage spilled compared with the data it processed."
    )
