"""Task events of the replay: start, getting result, end (stored as packed rows), and the
tasks still running when the log ends."""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.replay import metrics as mx
from fetcher.eventlog.replay.metrics import executor_metrics_from_json, metrics_from_json
from fetcher.eventlog.replay.reasons import error_string, user_accumulables
from fetcher.eventlog.replay.state import ReplayState
from fetcher.eventlog.replay.tasks_table import LiveTask, TaskTable


class TaskEvents(ReplayState):
    """Handlers of the task events."""

    # -- tasks ---------------------------------------------------------------------------------

    def _task_start(self, e: dict[str, Any]) -> None:
        info = e["Task Info"]
        key = (e["Stage ID"], e.get("Stage Attempt ID", 0))
        task = LiveTask(info, key)
        self.live_tasks[task.task_id] = task
        st = self.live_stages.get(key)
        if st is not None:
            if task.speculative:
                if st.spec is None:
                    st.spec = self.speculation[key] = [0, 0, 0, 0, 0]
                st.spec[1] += 1  # active
                st.spec[0] += 1  # tasks
            st.active_tasks += 1
            if st.first_launch_time is None or task.launch < st.first_launch_time:
                st.first_launch_time = task.launch
            st.locality[task.locality] = st.locality.get(task.locality, 0) + 1
            st.active_per_executor[task.executor] = st.active_per_executor.get(task.executor, 0) + 1
            for job in st.jobs:
                job.active_tasks += 1
        ex = self.live_executors.get(task.executor)
        if ex is not None:
            ex.active_tasks += 1
            ex.total_tasks += 1

    def _task_getting_result(self, e: dict[str, Any]) -> None:
        task = self.live_tasks.get(e["Task Info"]["Task ID"])
        if task is not None:
            task.getting_result_time = e["Task Info"].get("Getting Result Time", 0)

    def _task_end(self, e: dict[str, Any]) -> None:
        info = e.get("Task Info")
        if info is None:
            return
        reason = e.get("Task End Reason") or {}
        kind = reason.get("Reason")
        task_id = info["Task ID"]
        task = self.live_tasks.pop(task_id, None)
        finish = info.get("Finish Time", 0)
        launch = info.get("Launch Time", 0)
        duration = finish - launch if finish else 0
        delta: tuple[int, ...] | None = None
        if task is not None:
            delta = metrics_from_json(e.get("Task Metrics"))
            self._store_task(task, info, reason, delta)

        if kind == "Success":
            completed, failed, killed, active = 1, 0, 0, 1
        elif kind in ("TaskKilled", "TaskCommitDenied"):
            completed, failed, killed, active = 0, 0, 1, 1
        elif kind == "Resubmitted":
            completed, failed, killed, active = 0, 1, 0, 0
        else:
            completed, failed, killed, active = 0, 1, 0, 1

        key = (e["Stage ID"], e.get("Stage Attempt ID", 0))
        exec_id = info.get("Executor ID", "")
        task_peaks = executor_metrics_from_json(e.get("Task Executor Metrics"))
        if task_peaks is None:
            task_peaks = [0] * mx.N_EXEC_METRICS
        st = self.live_stages.get(key)
        if st is not None:
            if delta is not None:
                mx.add(st.metrics, delta)
            st.active_tasks -= active
            st.completed_tasks += completed
            if completed:
                st.completed_indices.add(info["Index"])
            st.failed_tasks += failed
            st.killed_tasks += killed
            if killed:
                _count_killed(st.killed_summary, reason)
            st.active_per_executor[exec_id] = st.active_per_executor.get(exec_id, 0) - active
            st.peaks.update(task_peaks)
            es = st.executor_summary(exec_id)
            es.peaks.update(task_peaks)
            remove = st.active_tasks == 0 and st.status in ("COMPLETE", "FAILED")
            if remove:
                self._write_stage(st)
            packed = (e["Stage ID"] << 32) | info["Index"]
            for job in st.jobs:
                job.active_tasks -= active
                job.completed_tasks += completed
                if completed:
                    job.completed_indices.add(packed)
                job.failed_tasks += failed
                job.killed_tasks += killed
                if killed:
                    _count_killed(job.killed_summary, reason)
                if remove:
                    self._write_job(job)
            es.task_time += duration
            es.succeeded += completed
            es.failed += failed
            es.killed += killed
            if delta is not None:
                mx.add(es.metrics, delta)
            if st.active_per_executor[exec_id] == 0:
                self._write_esummary(st, es)
            if info.get("Speculative") and st.spec is not None:
                st.spec[1] -= 1
                st.spec[2] += completed
                st.spec[3] += failed
                st.spec[4] += killed
            if remove:
                del self.live_stages[key]

        ex = self.live_executors.get(exec_id)
        if ex is not None:
            ex.active_tasks -= active
            ex.completed_tasks += completed
            ex.failed_tasks += failed
            ex.total_duration += duration
            ex.peaks.update(task_peaks)
            if kind != "Resubmitted":
                m = delta if delta is not None else metrics_from_json(e.get("Task Metrics"))
                ex.total_gc_time += m[mx.GC]
                ex.total_input_bytes += m[mx.IN_BYTES]
                ex.total_shuffle_read += m[mx.SR_LOCAL_BYTES] + m[mx.SR_REMOTE_BYTES]
                ex.total_shuffle_write += m[mx.SW_BYTES]
            if ex.active_tasks == 0:
                self._write_executor(ex)

    def _store_task(
        self, task: LiveTask, info: dict[str, Any], reason: dict[str, Any], metrics: tuple[int, ...]
    ) -> None:
        finish = info.get("Finish Time", 0)
        failed = bool(info.get("Failed", False))
        killed = bool(info.get("Killed", False))
        getting = info.get("Getting Result Time", 0)
        launch = info.get("Launch Time", task.launch)
        if finish:
            status = mx.S_FAILED if failed else mx.S_KILLED if killed else mx.S_SUCCESS
            duration = finish - launch
        else:
            status = mx.S_GET_RESULT if getting else mx.S_RUNNING
            duration = (self.last_update_time or 0) - launch
        flags = mx.F_HAS_METRICS | (mx.F_SPECULATIVE if info.get("Speculative") else 0)
        table = self.tasks.get(task.stage_key)
        if table is None:
            table = self.tasks[task.stage_key] = TaskTable()
        table.append(
            (
                task.task_id,
                info.get("Index", task.index),
                info.get("Attempt", task.attempt),
                info.get("Partition ID", task.partition),
                launch,
                getting if getting else -1,
                duration,
                self.intern(info.get("Executor ID", task.executor)),
                self.intern(info.get("Host", task.host)),
                status,
                self.intern(info.get("Locality", task.locality)),
                flags,
                *metrics,
            )
        )
        err = error_string(reason)
        if err is not None:
            table.errors[task.task_id] = err
        accs = user_accumulables(info.get("Accumulables") or [])
        if accs:
            table.accums[task.task_id] = accs

    def _finish_tasks(self) -> None:
        """Store the tasks still running when the log ends, as the SHS shows them."""
        now = self.last_update_time or 0
        for task in self.live_tasks.values():
            table = self.tasks.get(task.stage_key)
            if table is None:
                table = self.tasks[task.stage_key] = TaskTable()
            getting = task.getting_result_time
            table.append(
                (
                    task.task_id,
                    task.index,
                    task.attempt,
                    task.partition,
                    task.launch,
                    getting if getting else -1,
                    now - task.launch,
                    self.intern(task.executor),
                    self.intern(task.host),
                    mx.S_GET_RESULT if getting else mx.S_RUNNING,
                    self.intern(task.locality),
                    mx.F_SPECULATIVE if task.speculative else 0,
                    *([-1] * mx.N_METRICS),
                )
            )


def _count_killed(summary: dict[str, int], reason: dict[str, Any]) -> None:
    kind = reason.get("Reason")
    if kind == "TaskKilled":
        text = reason.get("Kill Reason", "unknown reason")
    elif kind == "TaskCommitDenied":
        text = error_string(reason) or ""
    else:
        return
    summary[text] = summary.get(text, 0) + 1
