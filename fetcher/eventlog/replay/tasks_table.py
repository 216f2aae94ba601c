"""Started tasks and the packed rows of stored ones."""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.replay import metrics as mx


class LiveTask:
    """A started task: the ``TaskInfo`` fields kept until it ends (or the log ends)."""

    __slots__ = (
        "attempt",
        "executor",
        "getting_result_time",
        "host",
        "index",
        "launch",
        "locality",
        "partition",
        "speculative",
        "stage_key",
        "task_id",
    )

    def __init__(self, info: dict[str, Any], stage_key: tuple[int, int]) -> None:
        self.task_id = info["Task ID"]
        self.index = info["Index"]
        self.attempt = info.get("Attempt", 0)
        self.partition = info.get("Partition ID", -1)
        self.launch = info.get("Launch Time", 0)
        self.executor = info.get("Executor ID", "")
        self.host = info.get("Host", "")
        self.locality = info.get("Locality", "")
        self.speculative = bool(info.get("Speculative", False))
        self.getting_result_time = info.get("Getting Result Time", 0)
        self.stage_key = stage_key


class TaskTable:
    """The stored tasks of one stage attempt: packed rows, in the order they were written."""

    __slots__ = ("accums", "count", "errors", "rows")

    def __init__(self) -> None:
        self.rows = bytearray()
        self.count = 0
        self.errors: dict[int, str] = {}
        self.accums: dict[int, list[dict[str, Any]]] = {}

    def append(self, values: tuple[int, ...] | list[int]) -> None:
        self.rows += mx.ROW.pack(*values)
        self.count += 1

    def iter_rows(self):
        return mx.ROW.iter_unpack(self.rows)
