"""Task metrics as flat int tuples, in one fixed order, and the task row layout."""

from __future__ import annotations

import struct
from typing import Any

#: (REST name path, event-log JSON path) of every task metric the SHS keeps, in TaskMetrics order.
TASK_METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("executorDeserializeTime", ("Executor Deserialize Time",)),
    ("executorDeserializeCpuTime", ("Executor Deserialize CPU Time",)),
    ("executorRunTime", ("Executor Run Time",)),
    ("executorCpuTime", ("Executor CPU Time",)),
    ("resultSize", ("Result Size",)),
    ("jvmGcTime", ("JVM GC Time",)),
    ("resultSerializationTime", ("Result Serialization Time",)),
    ("memoryBytesSpilled", ("Memory Bytes Spilled",)),
    ("diskBytesSpilled", ("Disk Bytes Spilled",)),
    ("peakExecutionMemory", ("Peak Execution Memory",)),
    ("inputMetrics.bytesRead", ("Input Metrics", "Bytes Read")),
    ("inputMetrics.recordsRead", ("Input Metrics", "Records Read")),
    ("outputMetrics.bytesWritten", ("Output Metrics", "Bytes Written")),
    ("outputMetrics.recordsWritten", ("Output Metrics", "Records Written")),
    ("shuffleReadMetrics.remoteBlocksFetched", ("Shuffle Read Metrics", "Remote Blocks Fetched")),
    ("shuffleReadMetrics.localBlocksFetched", ("Shuffle Read Metrics", "Local Blocks Fetched")),
    ("shuffleReadMetrics.fetchWaitTime", ("Shuffle Read Metrics", "Fetch Wait Time")),
    ("shuffleReadMetrics.remoteBytesRead", ("Shuffle Read Metrics", "Remote Bytes Read")),
    (
        "shuffleReadMetrics.remoteBytesReadToDisk",
        ("Shuffle Read Metrics", "Remote Bytes Read To Disk"),
    ),
    ("shuffleReadMetrics.localBytesRead", ("Shuffle Read Metrics", "Local Bytes Read")),
    ("shuffleReadMetrics.recordsRead", ("Shuffle Read Metrics", "Total Records Read")),
    ("shuffleReadMetrics.remoteReqsDuration", ("Shuffle Read Metrics", "Remote Requests Duration")),
    (
        "push.corruptMergedBlockChunks",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Corrupt Merged Block Chunks"),
    ),
    (
        "push.mergedFetchFallbackCount",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Merged Fetch Fallback Count"),
    ),
    (
        "push.remoteMergedBlocksFetched",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Merged Remote Blocks Fetched"),
    ),
    (
        "push.localMergedBlocksFetched",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Merged Local Blocks Fetched"),
    ),
    (
        "push.remoteMergedChunksFetched",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Merged Remote Chunks Fetched"),
    ),
    (
        "push.localMergedChunksFetched",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Merged Local Chunks Fetched"),
    ),
    (
        "push.remoteMergedBytesRead",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Merged Remote Bytes Read"),
    ),
    (
        "push.localMergedBytesRead",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Merged Local Bytes Read"),
    ),
    (
        "push.remoteMergedReqsDuration",
        ("Shuffle Read Metrics", "Push Based Shuffle", "Merged Remote Requests Duration"),
    ),
    ("shuffleWriteMetrics.bytesWritten", ("Shuffle Write Metrics", "Shuffle Bytes Written")),
    ("shuffleWriteMetrics.writeTime", ("Shuffle Write Metrics", "Shuffle Write Time")),
    ("shuffleWriteMetrics.recordsWritten", ("Shuffle Write Metrics", "Shuffle Records Written")),
)
N_METRICS = len(TASK_METRICS)
M = {name: i for i, (name, _) in enumerate(TASK_METRICS)}

# Indices used often.
DESER, DESER_CPU, RUN, CPU, RESULT_SIZE, GC, SER = 0, 1, 2, 3, 4, 5, 6
MEM_SPILL, DISK_SPILL, PEAK_MEM = 7, 8, 9
IN_BYTES, IN_RECS, OUT_BYTES, OUT_RECS = 10, 11, 12, 13
SR_REMOTE_BLOCKS, SR_LOCAL_BLOCKS, SR_WAIT, SR_REMOTE_BYTES, SR_REMOTE_DISK = 14, 15, 16, 17, 18
SR_LOCAL_BYTES, SR_RECS, SR_REQ_DUR = 19, 20, 21
PUSH_FIRST, PUSH_LAST = 22, 30
SW_BYTES, SW_TIME, SW_RECS = 31, 32, 33

ZERO_METRICS: tuple[int, ...] = (0,) * N_METRICS


def metrics_from_json(tm: dict[str, Any] | None) -> tuple[int, ...]:
    """``JsonProtocol.taskMetricsFromJson``: missing metrics (or no "Task Metrics") are zero."""
    if not tm:
        return ZERO_METRICS
    g = tm.get
    sr = g("Shuffle Read Metrics") or {}
    push = sr.get("Push Based Shuffle") or {}
    sw = g("Shuffle Write Metrics") or {}
    im = g("Input Metrics") or {}
    om = g("Output Metrics") or {}
    srg, pg = sr.get, push.get
    return (
        g("Executor Deserialize Time", 0),
        g("Executor Deserialize CPU Time", 0),
        g("Executor Run Time", 0),
        g("Executor CPU Time", 0),
        g("Result Size", 0),
        g("JVM GC Time", 0),
        g("Result Serialization Time", 0),
        g("Memory Bytes Spilled", 0),
        g("Disk Bytes Spilled", 0),
        g("Peak Execution Memory", 0),
        im.get("Bytes Read", 0),
        im.get("Records Read", 0),
        om.get("Bytes Written", 0),
        om.get("Records Written", 0),
        srg("Remote Blocks Fetched", 0),
        srg("Local Blocks Fetched", 0),
        srg("Fetch Wait Time", 0),
        srg("Remote Bytes Read", 0),
        srg("Remote Bytes Read To Disk", 0),
        srg("Local Bytes Read", 0),
        srg("Total Records Read", 0),
        srg("Remote Requests Duration", 0),
        pg("Corrupt Merged Block Chunks", 0),
        pg("Merged Fetch Fallback Count", 0),
        pg("Merged Remote Blocks Fetched", 0),
        pg("Merged Local Blocks Fetched", 0),
        pg("Merged Remote Chunks Fetched", 0),
        pg("Merged Local Chunks Fetched", 0),
        pg("Merged Remote Bytes Read", 0),
        pg("Merged Local Bytes Read", 0),
        pg("Merged Remote Requests Duration", 0),
        sw.get("Shuffle Bytes Written", 0),
        sw.get("Shuffle Write Time", 0),
        sw.get("Shuffle Records Written", 0),
    )


def add(a: list[int], b: tuple[int, ...] | list[int]) -> None:
    """a += b, element-wise, in place."""
    for i, v in enumerate(b):
        if v:
            a[i] += v


# ----------------------------------------------------------------------------------- task rows

#: Executor metric names in ExecutorMetricType order.
EXECUTOR_METRICS: tuple[str, ...] = (
    "JVMHeapMemory",
    "JVMOffHeapMemory",
    "OnHeapExecutionMemory",
    "OffHeapExecutionMemory",
    "OnHeapStorageMemory",
    "OffHeapStorageMemory",
    "OnHeapUnifiedMemory",
    "OffHeapUnifiedMemory",
    "DirectPoolMemory",
    "MappedPoolMemory",
    "ProcessTreeJVMVMemory",
    "ProcessTreeJVMRSSMemory",
    "ProcessTreePythonVMemory",
    "ProcessTreePythonRSSMemory",
    "ProcessTreeOtherVMemory",
    "ProcessTreeOtherRSSMemory",
    "MinorGCCount",
    "MinorGCTime",
    "MajorGCCount",
    "MajorGCTime",
    "TotalGCTime",
    "ConcurrentGCCount",
    "ConcurrentGCTime",
)
N_EXEC_METRICS = len(EXECUTOR_METRICS)


class Peaks:
    """``ExecutorMetrics`` peak values: unset until the first update (metrics(0) = -1)."""

    __slots__ = ("v",)

    def __init__(self) -> None:
        self.v = [-1] + [0] * (N_EXEC_METRICS - 1)

    def update(self, values: list[int] | None) -> bool:
        if values is None:
            return False
        changed = False
        v = self.v
        for i, x in enumerate(values):
            if x > v[i]:
                v[i] = x
                changed = True
        return changed

    @property
    def is_set(self) -> bool:
        return self.v[0] > -1

    def as_json(self) -> dict[str, int]:
        return dict(zip(EXECUTOR_METRICS, self.v, strict=False))


def executor_metrics_from_json(d: dict[str, Any] | None) -> list[int] | None:
    """``JsonProtocol.executorMetricsFromJson``: missing metrics are 0 (None if no object)."""
    if d is None:
        return None
    return [int(d.get(name, 0)) for name in EXECUTOR_METRICS]


# Row layout of a stored task (TaskDataWrapper), packed as little-endian int64s.
T_ID, T_INDEX, T_ATTEMPT, T_PARTITION, T_LAUNCH, T_FETCH, T_DURATION = 0, 1, 2, 3, 4, 5, 6
T_EXEC, T_HOST, T_STATUS, T_LOCALITY, T_FLAGS = 7, 8, 9, 10, 11
T_METRICS = 12
ROW = struct.Struct(f"<{T_METRICS + N_METRICS}q")
F_SPECULATIVE, F_HAS_METRICS = 1, 2
STATUSES = ("SUCCESS", "FAILED", "KILLED", "RUNNING", "GET RESULT", "UNKNOWN")
S_SUCCESS, S_FAILED, S_KILLED, S_RUNNING, S_GET_RESULT, S_UNKNOWN = range(6)
