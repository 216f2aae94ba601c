"""What only an event log holds, stored beside the History Server's rows, and the per-source
record of the logs read (the event-log watermark).

* ``stage_task_times``: every task attempt of a stage attempt, as packed integer columns (one
  zlib-compressed blob per stage attempt; :func:`encode_task_times` / :func:`decode_task_times`);
* ``stage_parent``: the stage DAG as the log states it (parent stage ids, skipped stages too);
* ``eventlog_file``: one row per log file or rolling folder of an event-log source, with the size
  and modification time it had when it was last read; a log whose (size, modification time)
  is unchanged is not read again.
"""

from __future__ import annotations

import zlib
from array import array
from dataclasses import dataclass

from sqlalchemy import BigInteger, ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from sparkscope.models.base import Base, _app_fk

#: Encoding version of ``stage_task_times.data``.
TASK_TIMES_FORMAT = "tasks-1"
#: Tasks kept per stage attempt (the History Server's own default of spark.ui.retainedTasks);
#: a stage attempt with more keeps its first ones by launch and says how many it had.
MAX_TASKS_PER_STAGE = 100_000
#: The packed columns, in order (status: 0 success, 1 failed, 2 killed, 3 other).
TASK_TIME_COLUMNS = (
    "task_id",
    "index",
    "attempt",
    "launch_offset_ms",  # launch time minus the stage attempt's first launch
    "duration_ms",
    "executor_run_time_ms",
    "executor_cpu_time_ms",
    "jvm_gc_time_ms",
    "shuffle_fetch_wait_ms",
    "executor",  # index into the blob's executor ids
    "status",
    "speculative",
)
STATUS_CODES = {"SUCCESS": 0, "FAILED": 1, "KILLED": 2}


class StageTaskTimes(Base):
    """Every task attempt of one stage attempt (event-log sources only), packed."""

    __tablename__ = "stage_task_times"
    __table_args__ = {"comment": "all task times of a stage attempt, from the event log"}

    application_id: Mapped[int] = _app_fk()
    stage_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage id")
    attempt_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage attempt id")
    num_tasks: Mapped[int] = mapped_column(Integer, comment="task attempts the log holds")
    num_stored: Mapped[int] = mapped_column(Integer, comment="task attempts in data (capped)")
    first_launch_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="first task launch, epoch ms (launch offsets count from it)"
    )
    format: Mapped[str] = mapped_column(String(16), comment="encoding version")
    data: Mapped[bytes] = mapped_column(
        LargeBinary, comment="zlib: executor ids, then int64 columns (TASK_TIME_COLUMNS)"
    )


class StageParent(Base):
    """One edge of the stage DAG: ``stage_id`` reads the output of ``parent_id``."""

    __tablename__ = "stage_parent"
    __table_args__ = {"comment": "stage DAG edges from the event log (skipped stages included)"}

    application_id: Mapped[int] = _app_fk()
    stage_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage id")
    parent_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="parent stage id")


class EventLogFile(Base):
    """One event log of an event-log source as last read: the source's watermark."""

    __tablename__ = "eventlog_file"
    __table_args__ = {"comment": "event logs read per source, with the size and time read at"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id of the event-log source",
    )
    path: Mapped[str] = mapped_column(String(2000), primary_key=True, comment="log path or URL")
    size: Mapped[int] = mapped_column(BigInteger, comment="bytes when read (all files)")
    mtime_ms: Mapped[int] = mapped_column(BigInteger, comment="modification time when read")
    app_id: Mapped[str] = mapped_column(String(255), comment="application id the log holds")
    attempt_id: Mapped[str] = mapped_column(String(64), comment="attempt id ('' when none)")
    state: Mapped[str] = mapped_column(String(16), comment="loaded or failed")
    read_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when read, epoch ms")


@dataclass(frozen=True)
class TaskTimes:
    """The decoded tasks of one stage attempt: one list per column of TASK_TIME_COLUMNS."""

    executors: tuple[str, ...]
    columns: dict[str, list[int]]
    first_launch_ms: int | None

    def __len__(self) -> int:
        return len(self.columns["task_id"])


def encode_task_times(executors: list[str], rows: list[tuple[int, ...]]) -> bytes:
    """Rows in TASK_TIME_COLUMNS order -> one compressed blob (column-major int64s)."""
    head = "\n".join(executors).encode()
    cols = array("q")
    for k in range(len(TASK_TIME_COLUMNS)):
        cols.extend(r[k] for r in rows)
    body = len(head).to_bytes(4, "little") + head + len(rows).to_bytes(4, "little")
    return zlib.compress(body + cols.tobytes(), 6)


def decode_task_times(blob: bytes, first_launch_ms: int | None = None) -> TaskTimes:
    """The inverse of :func:`encode_task_times`."""
    raw = zlib.decompress(blob)
    n_head = int.from_bytes(raw[:4], "little")
    head = raw[4 : 4 + n_head].decode()
    pos = 4 + n_head
    n = int.from_bytes(raw[pos : pos + 4], "little")
    cols = array("q")
    cols.frombytes(raw[pos + 4 :])
    columns = {name: cols[k * n : (k + 1) * n].tolist() for k, name in enumerate(TASK_TIME_COLUMNS)}
    return TaskTimes(tuple(head.split("\n")) if head else (), columns, first_launch_ms)
