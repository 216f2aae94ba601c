"""Task rows as ``TaskData`` JSON, the ``taskList`` answer and its sort orders."""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.formats import shs_date
from fetcher.eventlog.params import BadRequest
from fetcher.eventlog.replay import metrics as mx
from fetcher.eventlog.replay.status import StatusReplay

# ----------------------------------------------------------------------------------------- tasks


def _metric_value(row: tuple[int, ...], i: int) -> int:
    return row[mx.T_METRICS + i]


def _index_value(row: tuple[int, ...], i: int) -> int:
    """What TaskDataWrapper stores for metric i: negated (v * -1 - 1) when the task did not succeed."""
    if not row[mx.T_FLAGS] & mx.F_HAS_METRICS:
        return -1
    v = row[mx.T_METRICS + i]
    return v if row[mx.T_STATUS] == mx.S_SUCCESS else -v - 1


def _getting_result_time(launch: int, fetch: int, duration: int, now: int) -> int:
    if fetch > 0:
        return launch + duration - fetch if duration > 0 else now - fetch
    return 0


def _scheduler_delay(row: tuple[int, ...], now: int) -> int:
    """AppStatusUtils.schedulerDelay on a TaskData (0 until the task finished)."""
    status = row[mx.T_STATUS]
    duration = row[mx.T_DURATION]
    if (
        status not in (mx.S_FAILED, mx.S_KILLED, mx.S_SUCCESS)
        or not row[mx.T_FLAGS] & mx.F_HAS_METRICS
        or duration <= 0
    ):
        return 0
    m = mx.T_METRICS
    return max(
        0,
        duration
        - row[m + mx.RUN]
        - row[m + mx.DESER]
        - row[m + mx.SER]
        - _getting_result_time(row[mx.T_LAUNCH], row[mx.T_FETCH], duration, now),
    )


def _task_metrics_json(row: tuple[int, ...]) -> dict[str, Any]:
    v = row[mx.T_METRICS :]
    return {
        "executorDeserializeTime": v[0],
        "executorDeserializeCpuTime": v[1],
        "executorRunTime": v[2],
        "executorCpuTime": v[3],
        "resultSize": v[4],
        "jvmGcTime": v[5],
        "resultSerializationTime": v[6],
        "memoryBytesSpilled": v[7],
        "diskBytesSpilled": v[8],
        "peakExecutionMemory": v[9],
        "inputMetrics": {"bytesRead": v[10], "recordsRead": v[11]},
        "outputMetrics": {"bytesWritten": v[12], "recordsWritten": v[13]},
        "shuffleReadMetrics": {
            "remoteBlocksFetched": v[14],
            "localBlocksFetched": v[15],
            "fetchWaitTime": v[16],
            "remoteBytesRead": v[17],
            "remoteBytesReadToDisk": v[18],
            "localBytesRead": v[19],
            "recordsRead": v[20],
            "remoteReqsDuration": v[21],
            "shufflePushReadMetrics": {
                "corruptMergedBlockChunks": v[22],
                "mergedFetchFallbackCount": v[23],
                "remoteMergedBlocksFetched": v[24],
                "localMergedBlocksFetched": v[25],
                "remoteMergedChunksFetched": v[26],
                "localMergedChunksFetched": v[27],
                "remoteMergedBytesRead": v[28],
                "localMergedBytesRead": v[29],
                "remoteMergedReqsDuration": v[30],
            },
        },
        "shuffleWriteMetrics": {"bytesWritten": v[31], "writeTime": v[32], "recordsWritten": v[33]},
    }


def task_json(
    r: StatusReplay,
    row: tuple[int, ...],
    errors: dict[int, str],
    accums: dict[int, list[dict[str, Any]]],
) -> dict[str, Any]:
    now = r.last_update_time or 0
    s = r.strings
    tid = row[mx.T_ID]
    d: dict[str, Any] = {
        "taskId": tid,
        "index": row[mx.T_INDEX],
        "attempt": row[mx.T_ATTEMPT],
        "partitionId": row[mx.T_PARTITION],
        "launchTime": shs_date(row[mx.T_LAUNCH]),
    }
    if row[mx.T_FETCH] > 0:
        d["resultFetchStart"] = shs_date(row[mx.T_FETCH])
    if row[mx.T_DURATION] > 0:
        d["duration"] = row[mx.T_DURATION]
    executor_id = s[row[mx.T_EXEC]]
    d.update(
        {
            "executorId": executor_id,
            "host": s[row[mx.T_HOST]],
            "status": mx.STATUSES[row[mx.T_STATUS]],
            "taskLocality": s[row[mx.T_LOCALITY]],
            "speculative": bool(row[mx.T_FLAGS] & mx.F_SPECULATIVE),
            "accumulatorUpdates": list(accums.get(tid, [])),
        }
    )
    if tid in errors:
        d["errorMessage"] = errors[tid]
    if row[mx.T_FLAGS] & mx.F_HAS_METRICS:
        d["taskMetrics"] = _task_metrics_json(row)
    ex = r.executors.get(executor_id)
    d["executorLogs"] = dict(ex.executor_logs) if ex is not None else {}
    d["schedulerDelay"] = _scheduler_delay(row, now)
    duration = row[mx.T_DURATION] if row[mx.T_DURATION] > 0 else -1
    d["gettingResultTime"] = _getting_result_time(row[mx.T_LAUNCH], row[mx.T_FETCH], duration, now)
    return d


def _rows(r: StatusReplay, key: tuple[int, int]) -> list[tuple[int, ...]]:
    table = r.tasks.get(key)
    return list(table.iter_rows()) if table is not None else []


def task_list(
    r: StatusReplay,
    key: tuple[int, int],
    offset: int,
    length: int,
    sort_by: str,
    statuses: list[str],
) -> list[dict[str, Any]]:
    table = r.tasks.get(key)
    if table is None:
        return []
    rows = list(table.iter_rows())
    if sort_by == "ID":
        rows.sort(key=lambda t: t[mx.T_ID])
    elif sort_by == "INCREASING_RUNTIME":
        rows.sort(key=lambda t: (_index_value(t, mx.RUN), t[mx.T_ID]))
    elif sort_by == "DECREASING_RUNTIME":
        rows.sort(key=lambda t: (_index_value(t, mx.RUN), t[mx.T_ID]), reverse=True)
    elif sort_by == "ID_DESC":
        rows.sort(key=lambda t: t[mx.T_ID], reverse=True)
    if statuses:
        wanted = {s.upper() for s in statuses}
        rows = [t for t in rows if mx.STATUSES[t[mx.T_STATUS]] in wanted]
    rows = rows[offset : offset + length] if length >= 0 else rows[offset:]
    return [task_json(r, t, table.errors, table.accums) for t in rows]


def parse_sort(text: str | None) -> str:
    if text is None:
        return "ID"
    t = text.strip()
    if t == "runtime":
        return "INCREASING_RUNTIME"
    if t == "-runtime":
        return "DECREASING_RUNTIME"
    up = t.upper()
    if up in ("ID", "INCREASING_RUNTIME", "DECREASING_RUNTIME"):
        return up
    raise BadRequest(f"Illegal sort value {text!r}")
