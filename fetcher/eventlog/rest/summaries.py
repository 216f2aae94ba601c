"""Quantile summaries: ``taskSummary`` over a stage attempt's tasks (the stored, negated values of
tasks that did not succeed fall out), the per-executor summaries and their distributions."""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.replay import metrics as mx
from fetcher.eventlog.replay.entities import ExecStageSummary
from fetcher.eventlog.replay.status import StatusReplay
from fetcher.eventlog.rest.tasks import _getting_result_time, _index_value, _rows

# ------------------------------------------------------------------------------------ summaries


def _pick(values: list[int], indices: list[int]) -> list[float]:
    n = len(values)
    return [float(values[i]) if i < n else float("nan") for i in indices]


def task_summary(
    r: StatusReplay, key: tuple[int, int], quantiles: list[float]
) -> dict[str, Any] | None:
    """AppStatusStore.taskSummary: quantiles over the stage attempt's stored tasks."""
    rows = _rows(r, key)
    count = sum(1 for t in rows if _index_value(t, mx.RUN) >= 0)
    if count <= 0:
        return None
    indices = [min(int(q * count), count - 1) for q in quantiles]
    now = r.last_update_time or 0

    def dist(i: int) -> list[float]:
        vals = sorted(v for v in (_index_value(t, i) for t in rows) if v >= 0)
        return _pick(vals, indices)

    def dist_of(fn) -> list[float]:
        vals = sorted(v for v in (fn(t) for t in rows) if v >= 0)
        return _pick(vals, indices)

    has = mx.F_HAS_METRICS
    m = mx.T_METRICS

    def sched(t: tuple[int, ...]) -> int:
        if not t[mx.T_FLAGS] & has:
            return -1
        return max(
            0,
            t[mx.T_DURATION]
            - t[m + mx.RUN]
            - t[m + mx.DESER]
            - t[m + mx.SER]
            - _getting_result_time(t[mx.T_LAUNCH], t[mx.T_FETCH], t[mx.T_DURATION], now),
        )

    def getting(t: tuple[int, ...]) -> int:
        if not t[mx.T_FLAGS] & has:
            return -1
        return _getting_result_time(t[mx.T_LAUNCH], t[mx.T_FETCH], t[mx.T_DURATION], now)

    # Spark 4.0.1 sums the *stored* values here (negated for tasks that did not succeed).
    def total_reads(t: tuple[int, ...]) -> int:
        if not t[mx.T_FLAGS] & has:
            return -1
        return _index_value(t, mx.SR_LOCAL_BYTES) + _index_value(t, mx.SR_REMOTE_BYTES)

    def total_blocks(t: tuple[int, ...]) -> int:
        if not t[mx.T_FLAGS] & has:
            return -1
        return _index_value(t, mx.SR_LOCAL_BLOCKS) + _index_value(t, mx.SR_REMOTE_BLOCKS)

    return {
        "quantiles": list(quantiles),
        "duration": dist_of(lambda t: t[mx.T_DURATION]),
        "executorDeserializeTime": dist(mx.DESER),
        "executorDeserializeCpuTime": dist(mx.DESER_CPU),
        "executorRunTime": dist(mx.RUN),
        "executorCpuTime": dist(mx.CPU),
        "resultSize": dist(mx.RESULT_SIZE),
        "jvmGcTime": dist(mx.GC),
        "resultSerializationTime": dist(mx.SER),
        "gettingResultTime": dist_of(getting),
        "schedulerDelay": dist_of(sched),
        "peakExecutionMemory": dist(mx.PEAK_MEM),
        "memoryBytesSpilled": dist(mx.MEM_SPILL),
        "diskBytesSpilled": dist(mx.DISK_SPILL),
        "inputMetrics": {"bytesRead": dist(mx.IN_BYTES), "recordsRead": dist(mx.IN_RECS)},
        "outputMetrics": {"bytesWritten": dist(mx.OUT_BYTES), "recordsWritten": dist(mx.OUT_RECS)},
        "shuffleReadMetrics": {
            "readBytes": dist_of(total_reads),
            "readRecords": dist(mx.SR_RECS),
            "remoteBlocksFetched": dist(mx.SR_REMOTE_BLOCKS),
            "localBlocksFetched": dist(mx.SR_LOCAL_BLOCKS),
            "fetchWaitTime": dist(mx.SR_WAIT),
            "remoteBytesRead": dist(mx.SR_REMOTE_BYTES),
            "remoteBytesReadToDisk": dist(mx.SR_REMOTE_DISK),
            "totalBlocksFetched": dist_of(total_blocks),
            "remoteReqsDuration": dist(mx.SR_REQ_DUR),
            "shufflePushReadMetricsDist": {
                "corruptMergedBlockChunks": dist(22),
                "mergedFetchFallbackCount": dist(23),
                "remoteMergedBlocksFetched": dist(24),
                "localMergedBlocksFetched": dist(25),
                "remoteMergedChunksFetched": dist(26),
                "localMergedChunksFetched": dist(27),
                "remoteMergedBytesRead": dist(28),
                "localMergedBytesRead": dist(29),
                "remoteMergedReqsDuration": dist(30),
            },
        },
        "shuffleWriteMetrics": {
            "writeBytes": dist(mx.SW_BYTES),
            "writeRecords": dist(mx.SW_RECS),
            "writeTime": dist(mx.SW_TIME),
        },
    }


def _esummaries(r: StatusReplay, key: tuple[int, int]) -> dict[str, ExecStageSummary]:
    sid, attempt_id = key
    return {eid: es for (s, a, eid), es in r.exec_stage.items() if s == sid and a == attempt_id}


def executor_stage_json(es: ExecStageSummary) -> dict[str, Any]:
    m = es.metrics
    d: dict[str, Any] = {
        "taskTime": es.task_time,
        "failedTasks": es.failed,
        "succeededTasks": es.succeeded,
        "killedTasks": es.killed,
        "inputBytes": m[mx.IN_BYTES],
        "inputRecords": m[mx.IN_RECS],
        "outputBytes": m[mx.OUT_BYTES],
        "outputRecords": m[mx.OUT_RECS],
        "shuffleRead": m[mx.SR_REMOTE_BYTES] + m[mx.SR_LOCAL_BYTES],
        "shuffleReadRecords": m[mx.SR_RECS],
        "shuffleWrite": m[mx.SW_BYTES],
        "shuffleWriteRecords": m[mx.SW_RECS],
        "memoryBytesSpilled": m[mx.MEM_SPILL],
        "diskBytesSpilled": m[mx.DISK_SPILL],
        "isBlacklistedForStage": es.is_excluded,
    }
    if es.peaks.is_set:
        d["peakMemoryMetrics"] = es.peaks.as_json()
    d["isExcludedForStage"] = es.is_excluded
    return d


def executor_metrics_distributions(
    r: StatusReplay, key: tuple[int, int], quantiles: list[float]
) -> dict[str, Any] | None:
    summaries = list(_esummaries(r, key).values())
    if not summaries:
        return None
    count = len(summaries)
    indices = [min(int(q * count), count - 1) for q in quantiles]

    def dist(fn) -> list[float]:
        vals = sorted(float(fn(es)) for es in summaries)
        return [vals[i] for i in indices]

    def mdist(i: int) -> list[float]:
        return dist(lambda es: es.metrics[i])

    peaks = [es.peaks.v for es in summaries if es.peaks.is_set]
    pcount = len(peaks)
    pidx = [min(int(q * pcount), pcount - 1) for q in quantiles]
    peak_json: dict[str, list[float]] = {}
    for i, name in enumerate(mx.EXECUTOR_METRICS):
        vals = sorted(p[i] for p in peaks)
        peak_json[name] = [float(vals[j]) for j in pidx] if pcount else []
    return {
        "quantiles": list(quantiles),
        "taskTime": dist(lambda es: es.task_time),
        "failedTasks": dist(lambda es: es.failed),
        "succeededTasks": dist(lambda es: es.succeeded),
        "killedTasks": dist(lambda es: es.killed),
        "inputBytes": mdist(mx.IN_BYTES),
        "inputRecords": mdist(mx.IN_RECS),
        "outputBytes": mdist(mx.OUT_BYTES),
        "outputRecords": mdist(mx.OUT_RECS),
        "shuffleRead": dist(
            lambda es: es.metrics[mx.SR_REMOTE_BYTES] + es.metrics[mx.SR_LOCAL_BYTES]
        ),
        "shuffleReadRecords": mdist(mx.SR_RECS),
        "shuffleWrite": mdist(mx.SW_BYTES),
        "shuffleWriteRecords": mdist(mx.SW_RECS),
        "memoryBytesSpilled": mdist(mx.MEM_SPILL),
        "diskBytesSpilled": mdist(mx.DISK_SPILL),
        "peakMemoryMetrics": peak_json,
    }
