"""The rows of one synthetic application of a benchmark fleet (benchmarks/fleet.py), per table:
the application, its stages, executors plus the driver, Spark properties and findings stored
under the given heuristics fingerprint; and their COPY into PostgreSQL, a chunk at a time."""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from sparkscope.analysis.results import impact_of

GIB = 1024**3

USERS = [f"user{i:03d}" for i in range(200)]
QUEUES = ["etl", "adhoc", "ml", "reporting", "streaming", "default", None]
HEURISTICS = [
    "stage_skew",
    "disk_spill",
    "executor_gc",
    "task_failures",
    "executor_memory",
    "task_granularity",
    "shuffle_fetch_wait",
    "config",
]
# Worst-severity mix of a real fleet: most runs are fine.
SEVERITY_WEIGHTS = [60, 20, 10, 7, 3]

APP_COLUMNS = (
    "id",
    "server_id",
    "app_id",
    "attempt_id",
    "name",
    "spark_user",
    "queue",
    "spark_version",
    "start_time_ms",
    "end_time_ms",
    "duration_ms",
    "last_updated_ms",
    "completed",
    "fetched_at_ms",
    "num_jobs",
    "num_failed_jobs",
    "num_stages",
    "num_failed_stages",
    "num_tasks",
    "num_failed_tasks",
    "num_executors",
    "executor_run_time_ms",
    "executor_cpu_time_ns",
    "jvm_gc_time_ms",
    "input_bytes",
    "output_bytes",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "worst_severity",
    "analysis_fingerprint",
    "allocated_core_hours",
    "wasted_core_hours",
    "impact_core_hours",
)
STAGE_COLUMNS = (
    "application_id",
    "stage_id",
    "attempt_id",
    "name",
    "status",
    "num_tasks",
    "num_complete_tasks",
    "num_failed_tasks",
    "submission_time_ms",
    "first_task_launched_time_ms",
    "completion_time_ms",
    "executor_run_time_ms",
    "executor_cpu_time_ns",
    "jvm_gc_time_ms",
    "input_bytes",
    "output_bytes",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
)
EXECUTOR_COLUMNS = (
    "application_id",
    "executor_id",
    "is_driver",
    "host_port",
    "total_cores",
    "max_memory_bytes",
    "add_time_ms",
    "remove_time_ms",
    "total_duration_ms",
    "total_gc_time_ms",
    "total_tasks",
    "failed_tasks",
    "completed_tasks",
    "total_input_bytes",
    "total_shuffle_read_bytes",
    "total_shuffle_write_bytes",
    "peak_jvm_heap_bytes",
    "peak_jvm_offheap_bytes",
)
ENV_COLUMNS = ("application_id", "section", "name", "value")
RESULT_COLUMNS = (
    "application_id",
    "heuristic",
    "severity",
    "value",
    "title",
    "impact_core_hours",
    "impact_wall_seconds",
)
ANALYSIS_COLUMNS = ("application_id", "analyzed_at_ms", "results")


@dataclass
class Rows:
    """Rows of one chunk, per table."""

    application: list[tuple[object, ...]]
    stage: list[tuple[object, ...]]
    executor: list[tuple[object, ...]]
    environment_property: list[tuple[object, ...]]
    analysis_result: list[tuple[object, ...]]
    analysis: list[tuple[object, ...]]


def _result(heuristic: str, severity: int, rng: random.Random) -> dict[str, object]:
    value = round(rng.uniform(1.0, 20.0), 2)
    core_hours = round(rng.uniform(0.0, 5.0), 3) if severity else None
    wall_s = round(rng.uniform(0.0, 900.0), 1) if severity else None
    return {
        "name": heuristic,
        "severity": severity,
        "value": value,
        "title": f"{heuristic.replace('_', ' ')}: measured {value}",
        "thresholds": {"low": 2.0, "moderate": 4.0, "severe": 8.0, "critical": 16.0},
        "details": {"columns": ["stage", "value"], "rows": [[1, value], [2, value / 2]]},
        "advice": "Synthetic advice." if severity > 1 else "",
        "impact": None
        if core_hours is None
        else {"wall_seconds": wall_s, "core_hours": core_hours, "formula": "synthetic"},
    }


def _finding_row(pk: int, result: dict[str, Any]) -> tuple[object, ...]:
    impact = result["impact"] or {}
    return (
        pk,
        result["name"],
        result["severity"],
        result["value"],
        result["title"],
        impact.get("core_hours"),
        impact.get("wall_seconds"),
    )


def make_app_rows(
    rows: Rows,
    pk: int,
    server_id: int,
    app_id: str,
    name: str,
    start_ms: int,
    num_stages: int,
    fingerprint: str,
    rng: random.Random,
) -> None:
    """Append one application with its stages, executors, properties and findings."""
    duration_ms = int(rng.lognormvariate(13.5, 1.0))  # median ~12 min, long tail
    end_ms = start_ms + duration_ms
    executors = rng.choice((2, 2, 4, 4, 8, 16))
    cores = rng.choice((2, 4, 4, 8))
    allocated = executors * cores * duration_ms / 3_600_000
    run_ms = int(allocated * 3_600_000 * rng.uniform(0.1, 0.9))
    wasted = allocated - run_ms / 3_600_000
    input_b = int(rng.lognormvariate(22, 2))
    shuffle_b = int(input_b * rng.uniform(0, 1.5))
    spill_b = int(shuffle_b * rng.choice((0, 0, 0, 0.5, 2.0)))
    worst = rng.choices(range(5), weights=SEVERITY_WEIGHTS)[0]
    tasks = num_stages * rng.choice((50, 200, 1000))
    gc_ms = int(run_ms * rng.uniform(0.01, 0.2))
    # The worst finding carries the app's worst severity; a couple of quieter ones go with it.
    fired = rng.sample(HEURISTICS, 3)
    levels = [worst, rng.randint(0, worst), 0]
    results = [_result(h, level, rng) for h, level in zip(fired, levels, strict=True)]
    rows.application.append(
        (
            pk,
            server_id,
            app_id,
            "",
            name,
            rng.choice(USERS),
            rng.choice(QUEUES),
            "4.0.1",
            start_ms,
            end_ms,
            duration_ms,
            end_ms,
            True,
            end_ms + 60_000,
            max(1, num_stages // 2),
            0,
            num_stages,
            0,
            tasks,
            rng.choice((0, 0, 0, 3)),
            executors,
            run_ms,
            run_ms * 700_000,
            gc_ms,
            input_b,
            input_b // 10,
            shuffle_b,
            shuffle_b,
            spill_b,
            spill_b // 3,
            worst,
            fingerprint,
            allocated,
            wasted,
            impact_of(results),
        )
    )
    step = max(1, duration_ms // (num_stages + 1))
    for s in range(num_stages):
        sub = start_ms + s * step
        share = 1 / num_stages
        rows.stage.append(
            (
                pk,
                s,
                0,
                f"stage {s} at job.py:{100 + s}",
                "COMPLETE",
                tasks // num_stages,
                tasks // num_stages,
                0,
                sub,
                sub + rng.randint(5, 2000),
                sub + step,
                int(run_ms * share),
                int(run_ms * share * 700_000),
                int(gc_ms * share),
                int(input_b * share),
                int(input_b * share / 10),
                int(shuffle_b * share),
                int(shuffle_b * share),
                int(spill_b * share),
                int(spill_b * share / 3),
            )
        )
    rows.executor.append(
        (
            pk,
            "driver",
            True,
            "driver:7077",
            0,
            2 * GIB,
            start_ms,
            None,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            GIB,
            100 * 2**20,
        )
    )
    for e in range(1, executors + 1):
        rows.executor.append(
            (
                pk,
                str(e),
                False,
                f"node{rng.randint(1, 400)}:4{e:04d}",
                cores,
                4 * GIB,
                start_ms + 5000,
                end_ms,
                run_ms // executors,
                gc_ms // executors,
                tasks // executors,
                0,
                tasks // executors,
                input_b // executors,
                shuffle_b // executors,
                shuffle_b // executors,
                rng.randint(1, 7) * GIB,
                200 * 2**20,
            )
        )
    props = {
        "spark.app.name": name,
        "spark.master": "yarn",
        "spark.executor.memory": f"{rng.choice((4, 8, 16))}g",
        "spark.executor.cores": str(cores),
        "spark.executor.instances": str(executors),
        "spark.sql.shuffle.partitions": str(rng.choice((200, 400, 2000))),
        "spark.dynamicAllocation.enabled": rng.choice(("true", "false")),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    }
    for key, value in props.items():
        rows.environment_property.append((pk, "spark", key, value))
    rows.analysis.append((pk, end_ms, json.dumps(results)))
    rows.analysis_result.extend(_finding_row(pk, r) for r in results if r["severity"])


def _copy(
    raw_conn: object, table: str, columns: Sequence[str], rows: Iterable[tuple[object, ...]]
) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf)
    for row in rows:
        writer.writerow(["\\N" if v is None else v for v in row])
    buf.seek(0)
    cur = raw_conn.cursor()  # type: ignore[attr-defined]
    # psycopg 3 (every PostgreSQL URL goes through it): COPY is a context that takes the data.
    with cur.copy(
        f"COPY {table} ({', '.join(columns)}) FROM STDIN WITH (FORMAT csv, NULL '\\N')"
    ) as copy:
        copy.write(buf.getvalue())
    cur.close()


def flush(engine: Engine, rows: Rows) -> None:
    """COPY one chunk's rows into their tables, in one transaction."""
    raw = engine.raw_connection()
    try:
        _copy(raw, "application", APP_COLUMNS, rows.application)
        _copy(raw, "stage", STAGE_COLUMNS, rows.stage)
        _copy(raw, "executor", EXECUTOR_COLUMNS, rows.executor)
        _copy(raw, "environment_property", ENV_COLUMNS, rows.environment_property)
        _copy(raw, "analysis_result", RESULT_COLUMNS, rows.analysis_result)
        _copy(raw, "analysis", ANALYSIS_COLUMNS, rows.analysis)
        raw.commit()
    finally:
        raw.close()
