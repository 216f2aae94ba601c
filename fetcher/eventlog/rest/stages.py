"""``/stages`` and one stage attempt, with details and summaries."""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.formats import shs_date
from fetcher.eventlog.params import DEFAULT_QUANTILES, parse_quantiles
from fetcher.eventlog.replay import metrics as mx
from fetcher.eventlog.replay.entities import LiveStage
from fetcher.eventlog.replay.reasons import user_accumulables
from fetcher.eventlog.replay.status import StatusReplay
from fetcher.eventlog.rest.summaries import (
    _esummaries,
    executor_metrics_distributions,
    executor_stage_json,
    task_summary,
)
from fetcher.eventlog.rest.tasks import task_list

# ---------------------------------------------------------------------------------------- stages

STAGE_TOTALS = (
    ("executorDeserializeTime", mx.DESER),
    ("executorDeserializeCpuTime", mx.DESER_CPU),
    ("executorRunTime", mx.RUN),
    ("executorCpuTime", mx.CPU),
    ("resultSize", mx.RESULT_SIZE),
    ("jvmGcTime", mx.GC),
    ("resultSerializationTime", mx.SER),
    ("memoryBytesSpilled", mx.MEM_SPILL),
    ("diskBytesSpilled", mx.DISK_SPILL),
    ("peakExecutionMemory", mx.PEAK_MEM),
    ("inputBytes", mx.IN_BYTES),
    ("inputRecords", mx.IN_RECS),
    ("outputBytes", mx.OUT_BYTES),
    ("outputRecords", mx.OUT_RECS),
    ("shuffleRemoteBlocksFetched", mx.SR_REMOTE_BLOCKS),
    ("shuffleLocalBlocksFetched", mx.SR_LOCAL_BLOCKS),
    ("shuffleFetchWaitTime", mx.SR_WAIT),
    ("shuffleRemoteBytesRead", mx.SR_REMOTE_BYTES),
    ("shuffleRemoteBytesReadToDisk", mx.SR_REMOTE_DISK),
    ("shuffleLocalBytesRead", mx.SR_LOCAL_BYTES),
)
STAGE_TOTALS_2 = (
    ("shuffleReadRecords", mx.SR_RECS),
    ("shuffleCorruptMergedBlockChunks", 22),
    ("shuffleMergedFetchFallbackCount", 23),
    ("shuffleMergedRemoteBlocksFetched", 24),
    ("shuffleMergedLocalBlocksFetched", 25),
    ("shuffleMergedRemoteChunksFetched", 26),
    ("shuffleMergedLocalChunksFetched", 27),
    ("shuffleMergedRemoteBytesRead", 28),
    ("shuffleMergedLocalBytesRead", 29),
    ("shuffleRemoteReqsDuration", mx.SR_REQ_DUR),
    ("shuffleMergedRemoteReqsDuration", 30),
    ("shuffleWriteBytes", mx.SW_BYTES),
    ("shuffleWriteTime", mx.SW_TIME),
    ("shuffleWriteRecords", mx.SW_RECS),
)


def stage_json(
    r: StatusReplay,
    st: LiveStage,
    *,
    details: bool = False,
    task_statuses: list[str] | None = None,
    with_summaries: bool = False,
    quantiles: list[float] | None = None,
) -> dict[str, Any]:
    info = st.info
    d: dict[str, Any] = {
        "status": st.status,
        "stageId": info.stage_id,
        "attemptId": info.attempt,
        "numTasks": info.num_tasks,
        "numActiveTasks": st.active_tasks,
        "numCompleteTasks": st.completed_tasks,
        "numFailedTasks": st.failed_tasks,
        "numKilledTasks": st.killed_tasks,
        "numCompletedIndices": len(st.completed_indices),
    }
    if info.submission_time is not None:
        d["submissionTime"] = shs_date(info.submission_time)
    if st.first_launch_time is not None:
        d["firstTaskLaunchedTime"] = shs_date(st.first_launch_time)
    if info.completion_time is not None:
        d["completionTime"] = shs_date(info.completion_time)
    if info.failure_reason is not None:
        d["failureReason"] = info.failure_reason
    m = st.metrics
    for name, i in STAGE_TOTALS:
        d[name] = m[i]
    d["shuffleReadBytes"] = m[mx.SR_LOCAL_BYTES] + m[mx.SR_REMOTE_BYTES]
    for name, i in STAGE_TOTALS_2:
        d[name] = m[i]
    d["name"] = info.name
    if st.description is not None:
        d["description"] = st.description
    d["details"] = info.details
    d["schedulingPool"] = st.scheduling_pool
    d["rddIds"] = list(info.rdd_ids)
    d["accumulatorUpdates"] = user_accumulables(info.accumulables)
    key = st.key
    if details:
        tasks = task_list(r, key, 0, -1, "ID_DESC", task_statuses or [])
        d["tasks"] = {str(t["taskId"]): t for t in tasks}
        d["executorSummary"] = {
            eid: executor_stage_json(es) for eid, es in _esummaries(r, key).items()
        }
        spec = r.speculation.get(key)
        if spec is not None:
            d["speculationSummary"] = {
                "numTasks": spec[0],
                "numActiveTasks": spec[1],
                "numCompletedTasks": spec[2],
                "numFailedTasks": spec[3],
                "numKilledTasks": spec[4],
            }
    d["killedTasksSummary"] = dict(st.killed_summary)
    d["resourceProfileId"] = info.resource_profile_id
    if st.peaks.is_set:
        d["peakExecutorMetrics"] = st.peaks.as_json()
    if with_summaries:
        qs = quantiles if quantiles is not None else parse_quantiles(DEFAULT_QUANTILES)
        ts = task_summary(r, key, qs)
        if ts is not None:
            d["taskMetricsDistributions"] = ts
        ed = executor_metrics_distributions(r, key, qs)
        if ed is not None:
            d["executorMetricsDistributions"] = ed
    d["isShufflePushEnabled"] = info.push_enabled
    d["shuffleMergersCount"] = info.push_mergers
    return d


def stage_list(r: StatusReplay, statuses: list[str], **kw: Any) -> list[dict[str, Any]]:
    wanted = {s.upper() for s in statuses}
    out = []
    for key in sorted(r.stages, reverse=True):
        st = r.stages[key]
        if wanted and st.status not in wanted:
            continue
        out.append(stage_json(r, st, **kw))
    return out
