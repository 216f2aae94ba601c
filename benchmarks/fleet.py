"""Fill PostgreSQL with N synthetic Spark applications shaped like real ones, fast (COPY).

Per application: a few stages, executors plus the driver, Spark properties and findings stored
under the current heuristics fingerprint (so pages do not re-score them). On top: one application
with 2,000 stages and one name with 1,000 runs, the worst cases of the application and history
pages.

    python -m benchmarks.fleet --apps 100000 --database-url postgresql+psycopg2://...
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, func, select, text

from sparkscope import migrate
from sparkscope.accounting import day_summary as summary
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.results import impact_of
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine, now_ms
from sparkscope.models.application import Application

DAY_MS = 86_400_000
GIB = 1024**3
BIG_APP_ID = "application_bench_2000_stages"
RECURRING_NAME = "nightly revenue rollup (eu-west/1)"
RECURRING_RUNS = 1000
BIG_STAGES = 2000
CHUNK_APPS = 10_000

USERS = [f"user{i:03d}" for i in range(200)]
QUEUES = ["etl", "adhoc", "ml", "reporting", "streaming", "default", None]
NAME_STEMS = [
    "daily_sales_etl",
    "customer revenue",
    "sessionize.events",
    "ml/feature-build",
    "report: weekly kpis",
    "inventory_sync",
    "fraud-scoring",
    "clickstream agg",
]
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


def _names(rng: random.Random, count: int) -> list[str]:
    return [f"{rng.choice(NAME_STEMS)} #{i}" for i in range(count)]


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


def _flush(engine: Engine, rows: Rows) -> None:
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


def recurring_compare_ids(conn: Connection) -> list[str]:
    """The app ids of the two latest runs of the recurring application (the compare page's)."""
    return list(
        conn.execute(
            select(Application.app_id)
            .where(Application.name == RECURRING_NAME)
            .order_by(Application.start_time_ms.desc())
            .limit(2)
        )
        .scalars()
        .all()
    )


def generate(database_url: str, apps: int = 100_000, seed: int = 42) -> dict[str, object]:
    """Migrate and fill the database; returns what was made (ids of the worst cases included)."""
    started = time.perf_counter()
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    fingerprint = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).fingerprint
    rng = random.Random(seed)
    now = now_ms()
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO history_server (id, name, url, created_at_ms) VALUES "
                "(1, 'prod', 'http://shs-prod.example:18080', :t), "
                "(2, 'research', 'http://shs-research.example:18080', :t)"
            ),
            {"t": now},
        )
    names = _names(rng, max(10, apps // 50))
    recurring = min(RECURRING_RUNS, max(1, apps // 10))
    rows = Rows([], [], [], [], [], [])
    for pk in range(1, apps + 1):
        if pk == 1:
            app_id, name, stages = BIG_APP_ID, "wide job with many stages", BIG_STAGES
            start = now - 3 * DAY_MS
        elif pk <= 1 + recurring:
            run = pk - 2
            app_id, name, stages = f"application_bench_recurring_{run:04d}", RECURRING_NAME, 4
            start = now - (recurring - run) * DAY_MS // 4  # four runs a day
        else:
            app_id = f"application_{1_700_000_000_000 + pk}_{pk % 10_000:04d}"
            name, stages = rng.choice(names), rng.choice((2, 3, 4, 5, 6, 8))
            start = now - rng.randint(0, 90 * DAY_MS)
        server_id = 1 if pk % 5 else 2
        make_app_rows(rows, pk, server_id, app_id, name, start, stages, fingerprint, rng)
        if pk % CHUNK_APPS == 0:
            _flush(engine, rows)
            rows = Rows([], [], [], [], [], [])
    _flush(engine, rows)
    with engine.begin() as conn:
        summary.rebuild(conn)  # the dashboard's per-day summary, in one pass of SQL
        conn.execute(text("SELECT setval('history_server_id_seq', 2)"))
        conn.execute(text("SELECT setval('application_id_seq', :n)"), {"n": apps})
    # VACUUM sets the visibility map, so count and distinct-name scans can be index-only.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    with engine.connect() as conn:
        stored = conn.scalar(select(func.count()).select_from(Application))
        compare_ids = recurring_compare_ids(conn)
    engine.dispose()
    return {
        "apps": stored,
        "seconds": round(time.perf_counter() - started, 1),
        "big_app_id": BIG_APP_ID,
        "recurring_name": RECURRING_NAME,
        "recurring_runs": recurring,
        "compare": compare_ids,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: generate a fleet into --database-url."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=100_000)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    print(json.dumps(generate(args.database_url, args.apps, args.seed), indent=2))


if __name__ == "__main__":
    main()
