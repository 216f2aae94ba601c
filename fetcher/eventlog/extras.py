"""What only the event log has: every task compactly, the real stage DAG, executor add/remove times.

These are kept apart from the SHS-equivalent answers: the fetcher can store them as extras without
changing what it loads from the REST-shaped documents.
"""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.replay import metrics as mx
from fetcher.eventlog.replay.status import StatusReplay

#: Columns of :func:`task_records` rows, in order.
TASK_COLUMNS = (
    "stage_id",
    "stage_attempt_id",
    "task_id",
    "index",
    "attempt",
    "executor_id",
    "host",
    "launch_time_ms",
    "duration_ms",
    "status",
    "speculative",
    "executor_run_time_ms",
    "executor_cpu_time_ns",
    "executor_deserialize_time_ms",
    "jvm_gc_time_ms",
    "result_size_bytes",
    "peak_execution_memory_bytes",
    "input_bytes",
    "input_records",
    "output_bytes",
    "output_records",
    "shuffle_read_bytes",
    "shuffle_read_records",
    "shuffle_fetch_wait_ms",
    "shuffle_write_bytes",
    "shuffle_write_records",
    "shuffle_write_time_ns",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
)


def iter_task_rows(r: StatusReplay):
    """Every stored task as a tuple in :data:`TASK_COLUMNS` order (stage, attempt, then write order)."""
    s = r.strings
    base = mx.T_METRICS
    for (sid, attempt_id), table in sorted(r.tasks.items()):
        for t in table.iter_rows():
            m = t[base:]
            has = t[mx.T_FLAGS] & mx.F_HAS_METRICS

            def g(i: int) -> int | None:
                return m[i] if has else None  # noqa: B023

            yield (
                sid,
                attempt_id,
                t[mx.T_ID],
                t[mx.T_INDEX],
                t[mx.T_ATTEMPT],
                s[t[mx.T_EXEC]],
                s[t[mx.T_HOST]],
                t[mx.T_LAUNCH],
                t[mx.T_DURATION],
                mx.STATUSES[t[mx.T_STATUS]],
                bool(t[mx.T_FLAGS] & mx.F_SPECULATIVE),
                g(mx.RUN),
                g(mx.CPU),
                g(mx.DESER),
                g(mx.GC),
                g(mx.RESULT_SIZE),
                g(mx.PEAK_MEM),
                g(mx.IN_BYTES),
                g(mx.IN_RECS),
                g(mx.OUT_BYTES),
                g(mx.OUT_RECS),
                (m[mx.SR_LOCAL_BYTES] + m[mx.SR_REMOTE_BYTES]) if has else None,
                g(mx.SR_RECS),
                g(mx.SR_WAIT),
                g(mx.SW_BYTES),
                g(mx.SW_RECS),
                g(mx.SW_TIME),
                g(mx.MEM_SPILL),
                g(mx.DISK_SPILL),
            )


def task_records(r: StatusReplay) -> list[dict[str, Any]]:
    """Every task as a dict with :data:`TASK_COLUMNS` keys."""
    return [dict(zip(TASK_COLUMNS, row, strict=False)) for row in iter_task_rows(r)]


def stage_dag(r: StatusReplay) -> dict[int, list[int]]:
    """Stage id -> parent stage ids, from the stage infos of job starts and stage submissions."""
    return {sid: list(parents) for sid, parents in sorted(r.stage_parents.items())}


def executor_timeline(r: StatusReplay) -> list[dict[str, Any]]:
    """One entry per executor: added / removed times (ms), host, cores, removal reason."""
    out: dict[str, dict[str, Any]] = {}
    for ev in r.executor_events:
        e = out.setdefault(
            ev["executorId"],
            {
                "executorId": ev["executorId"],
                "addTime": None,
                "removeTime": None,
                "host": None,
                "totalCores": None,
                "removeReason": None,
            },
        )
        if ev["event"] == "added":
            e["addTime"], e["host"], e["totalCores"] = ev["time"], ev["host"], ev["totalCores"]
        else:
            e["removeTime"], e["removeReason"] = ev["time"], ev.get("reason")
    for eid, ex in r.executors.items():
        if eid not in out:  # the driver (and executors known from block managers only)
            out[eid] = {
                "executorId": eid,
                "addTime": ex.add_time,
                "removeTime": ex.remove_time,
                "host": ex.hostname,
                "totalCores": ex.total_cores,
                "removeReason": ex.remove_reason,
            }
    return sorted(out.values(), key=lambda e: (e["addTime"] or 0, e["executorId"]))
