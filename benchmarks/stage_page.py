"""A stage page's worth of rows for one fleet stage (the synthetic fleet stores stage totals only):
a 21-point task distribution of every metric the History Server summarises, the 200 slowest
tasks the fetcher keeps at most, and 100 executors' summaries, so that the web benchmark measures
the stage page at the size a large stage reaches."""

from __future__ import annotations

from sqlalchemy import Engine, delete, insert, select

from sparkscope.models.application import (
    Application,
    Stage,
    StageExecutor,
    StageTaskDistribution,
    Task,
)

#: The metrics a History Server's task summary holds, as the fetcher names them.
METRICS = (
    "duration_ms executor_deserialize_time_ms executor_deserialize_cpu_time_ns"
    " executor_run_time_ms executor_cpu_time_ns result_size_bytes jvm_gc_time_ms"
    " result_serialization_time_ms getting_result_time_ms scheduler_delay_ms"
    " peak_execution_memory_bytes memory_bytes_spilled disk_bytes_spilled input_bytes"
    " input_records output_bytes output_records shuffle_read_bytes shuffle_read_records"
    " shuffle_fetch_wait_ms shuffle_remote_bytes_read shuffle_write_bytes shuffle_write_records"
    " shuffle_write_time_ns"
).split()
GRID = [round(i * 0.05, 2) for i in range(21)]
KEPT_TASKS = 200
EXECUTORS = 100


def attach_stage(engine: Engine, app_id: str, stage_id: int = 0) -> str:
    """Replace the stage's distribution, kept tasks and executor summaries; returns its path."""
    with engine.begin() as conn:
        pk = conn.scalar(select(Application.id).where(Application.app_id == app_id))
        if (
            pk is None
            or conn.scalar(
                select(Stage.stage_id).where(Stage.application_id == pk, Stage.stage_id == stage_id)
            )
            is None
        ):
            raise SystemExit(f"no stage {stage_id} of {app_id!r} in the fleet")
        for model, column in (
            (StageTaskDistribution, StageTaskDistribution.stage_id),
            (StageExecutor, StageExecutor.stage_id),
            (Task, Task.stage_id),
        ):
            conn.execute(delete(model).where(model.application_id == pk, column == stage_id))
        metrics = {
            name: [float((k + 1) * (i + 1) * 1000) for i in range(len(GRID))]
            for k, name in enumerate(METRICS)
        }
        key = {"application_id": pk, "stage_id": stage_id}
        conn.execute(
            insert(StageTaskDistribution),
            [{**key, "attempt_id": 0, "quantiles": GRID, "metrics": metrics}],
        )
        conn.execute(
            insert(StageExecutor),
            [
                {**key, "attempt_id": 0, "executor_id": str(e), "task_time_ms": 60_000 + e}
                for e in range(1, EXECUTORS + 1)
            ],
        )
        conn.execute(
            insert(Task),
            [
                {
                    **key,
                    "stage_attempt_id": 0,
                    "task_id": t,
                    "index": t,
                    "attempt": 0,
                    "executor_id": str(1 + t % EXECUTORS),
                    "host": f"worker-{t % EXECUTORS}.example",
                    "status": "FAILED" if t % 50 == 0 else "SUCCESS",
                    "kept_because": "failed" if t % 50 == 0 else "slowest",
                    "launch_time_ms": 1_700_000_000_000 + t,
                    "duration_ms": 300_000 - t * 100,
                    "executor_run_time_ms": 290_000 - t * 100,
                    "jvm_gc_time_ms": 1_000,
                    "error_message": "java.lang.OutOfMemoryError\n\tat x" if t % 50 == 0 else None,
                }
                for t in range(KEPT_TASKS)
            ],
        )
    return f"/apps/{app_id}/stages/{stage_id}/0"
