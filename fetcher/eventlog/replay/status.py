"""Replay of listener events into the state the History Server's AppStatusStore would hold.

This follows the rules of Spark's ``AppStatusListener`` when it replays a log (``live = false``):
an entity is written to the store only by an ``update`` call (``liveUpdate`` / ``maybeUpdate``
write nothing when replaying), and every entity still live at the end of the log is flushed.
Stages, executors, executor-stage summaries and tasks are never changed after their last write,
so the store keeps references to them; a job can change after its last write (a stage that ends
after its job), so jobs are stored as snapshots.

Tasks are kept compactly: one packed int64 row per task (see :mod:`fetcher.eventlog.replay.metrics`),
grouped by stage attempt, with strings interned; error messages and user accumulators on the side.
"""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.replay.entities import LiveJob, LiveRDD, StageInfo
from fetcher.eventlog.replay.executors import ExecutorEvents
from fetcher.eventlog.replay.state import DRIVER
from fetcher.eventlog.replay.tasks import TaskEvents


class StatusReplay(ExecutorEvents, TaskEvents):
    """Feed events with :meth:`handle`; call :meth:`finish` at the end of the log."""

    def __init__(self, last_update_time: int | None = None) -> None:
        super().__init__(last_update_time)
        self._handlers = {
            "SparkListenerLogStart": self._log_start,
            "SparkListenerResourceProfileAdded": self._resource_profile,
            "SparkListenerApplicationStart": self._app_start,
            "SparkListenerEnvironmentUpdate": self._environment,
            "SparkListenerApplicationEnd": self._app_end,
            "SparkListenerExecutorAdded": self._executor_added,
            "SparkListenerExecutorRemoved": self._executor_removed,
            "SparkListenerExecutorBlacklisted": self._executor_excluded,
            "SparkListenerExecutorExcluded": self._executor_excluded,
            "SparkListenerExecutorUnblacklisted": self._executor_unexcluded,
            "SparkListenerExecutorUnexcluded": self._executor_unexcluded,
            "SparkListenerExecutorBlacklistedForStage": self._executor_excluded_stage,
            "SparkListenerExecutorExcludedForStage": self._executor_excluded_stage,
            "SparkListenerNodeBlacklistedForStage": self._node_excluded_stage,
            "SparkListenerNodeExcludedForStage": self._node_excluded_stage,
            "SparkListenerNodeBlacklisted": self._node_excluded,
            "SparkListenerNodeExcluded": self._node_excluded,
            "SparkListenerNodeUnblacklisted": self._node_unexcluded,
            "SparkListenerNodeUnexcluded": self._node_unexcluded,
            "SparkListenerJobStart": self._job_start,
            "SparkListenerJobEnd": self._job_end,
            "SparkListenerStageSubmitted": self._stage_submitted,
            "SparkListenerTaskStart": self._task_start,
            "SparkListenerTaskGettingResult": self._task_getting_result,
            "SparkListenerTaskEnd": self._task_end,
            "SparkListenerStageCompleted": self._stage_completed,
            "SparkListenerBlockManagerAdded": self._block_manager_added,
            "SparkListenerBlockManagerRemoved": self._noop,
            "SparkListenerUnpersistRDD": self._unpersist,
            "SparkListenerExecutorMetricsUpdate": self._executor_metrics_update,
            "SparkListenerStageExecutorMetrics": self._stage_executor_metrics,
            "SparkListenerBlockUpdated": self._block_updated,
        }

    # -- application ---------------------------------------------------------------------------

    def _log_start(self, e: dict[str, Any]) -> None:
        self.app.spark_version = e.get("Spark Version")

    def _resource_profile(self, e: dict[str, Any]) -> None:
        rp_id = e.get("Resource Profile Id", 0)
        ereq = e.get("Executor Resource Requests") or {}
        treq = e.get("Task Resource Requests") or {}
        self.resource_profiles[rp_id] = {
            "id": rp_id,
            "executorResources": {
                name: {
                    "resourceName": r.get("Resource Name", name),
                    "amount": r.get("Amount", 0),
                    "discoveryScript": r.get("Discovery Script", ""),
                    "vendor": r.get("Vendor", ""),
                }
                for name, r in ereq.items()
            },
            "taskResources": {
                name: {
                    "resourceName": r.get("Resource Name", name),
                    "amount": float(r.get("Amount", 0)),
                }
                for name, r in treq.items()
            },
        }
        cpus = treq.get("cpus")
        if cpus is not None:
            self._rp_cpus[rp_id] = int(float(cpus.get("Amount", 1)))

    def _app_start(self, e: dict[str, Any]) -> None:
        a = self.app
        a.app_id = e.get("App ID")
        a.name = e.get("App Name")
        a.attempt_id = e.get("App Attempt ID")
        a.start_time = e.get("Timestamp")
        a.spark_user = e.get("User")
        a.end_time = -1
        a.completed = False
        logs = e.get("Driver Logs")
        if logs is not None:
            d = self.live_executors.get(DRIVER)
            if d is not None:
                d.executor_logs = dict(logs)
                d.attributes = dict(e.get("Driver Attributes") or {})
                self._write_executor(d)

    def _environment(self, e: dict[str, Any]) -> None:
        jvm = e.get("JVM Information") or {}
        self.environment = {
            "runtime": {
                "javaVersion": jvm.get("Java Version"),
                "javaHome": jvm.get("Java Home"),
                "scalaVersion": jvm.get("Scala Version"),
            },
            "sparkProperties": _pairs(e.get("Spark Properties")),
            "hadoopProperties": _pairs(e.get("Hadoop Properties")),
            "systemProperties": _pairs(e.get("System Properties")),
            "metricsProperties": _pairs(e.get("Metrics Properties")),
            "classpathEntries": _pairs(e.get("Classpath Entries")),
        }
        for k, v in self.environment["sparkProperties"]:
            if k == "spark.task.cpus":
                try:
                    self.default_cpus_per_task = int(v)
                except ValueError:
                    pass

    def _app_end(self, e: dict[str, Any]) -> None:
        self.app.end_time = e.get("Timestamp", -1)
        self.app.completed = True

    # -- jobs and stages -----------------------------------------------------------------------

    def _job_start(self, e: dict[str, Any]) -> None:
        infos = [StageInfo.from_json(s) for s in e.get("Stage Infos") or []]
        num_tasks = sum(s.num_tasks for s in infos if s.completion_time is None)
        last = max(infos, key=lambda s: s.stage_id) if infos else None
        props = e.get("Properties") or {}
        tags_s = props.get("spark.job.tags")
        tags = sorted({t for t in tags_s.split(",") if t}) if tags_s is not None else []
        sql_id = props.get("spark.sql.execution.id")
        job = LiveJob(
            job_id=e["Job ID"],
            name=last.name if last else "",
            description=props.get("spark.job.description"),
            submission_time=e["Submission Time"] if e.get("Submission Time", 0) > 0 else None,
            stage_ids=list(e.get("Stage IDs") or []),
            job_group=props.get("spark.jobGroup.id"),
            job_tags=tags,
            num_tasks=num_tasks,
            sql_execution_id=int(sql_id) if sql_id is not None else None,
        )
        self.live_jobs[job.job_id] = job
        for info in infos:
            st = self._get_or_create_stage(info)
            st.jobs.append(job)
            st.job_ids.add(job.job_id)
            self.stage_parents.setdefault(info.stage_id, list(info.parent_ids))

    def _job_end(self, e: dict[str, Any]) -> None:
        job = self.live_jobs.pop(e["Job ID"], None)
        if job is None:
            return
        for key in list(self.live_stages):
            st = self.live_stages[key]
            if key[0] in job.stage_ids and st.status == "PENDING":
                st.status = "SKIPPED"
                job.skipped_stages.add(st.info.stage_id)
                job.skipped_tasks += st.info.num_tasks
                del self.live_stages[key]
                self._write_stage(st)
        result = (e.get("Job Result") or {}).get("Result")
        job.status = "SUCCEEDED" if result == "JobSucceeded" else "FAILED"
        t = e.get("Completion Time", 0)
        job.completion_time = t if t > 0 else None
        self._write_job(job)

    def _stage_submitted(self, e: dict[str, Any]) -> None:
        info = StageInfo.from_json(e["Stage Info"])
        st = self._get_or_create_stage(info)
        st.status = "ACTIVE"
        props = e.get("Properties") or {}
        st.scheduling_pool = props.get("spark.scheduler.pool") or "default"
        st.jobs = [j for j in self.live_jobs.values() if info.stage_id in j.stage_ids]
        st.job_ids = {j.job_id for j in st.jobs}
        st.description = props.get("spark.job.description")
        for job in st.jobs:
            job.completed_stages.discard(info.stage_id)
            job.active_stages += 1
        self.stage_parents.setdefault(info.stage_id, list(info.parent_ids))
        for rdd in e["Stage Info"].get("RDD Info") or []:
            level = rdd.get("Storage Level") or {}
            if (level.get("Use Disk") or level.get("Use Memory")) and level.get(
                "Replication", 1
            ) > 0:
                if rdd["RDD ID"] not in self.live_rdds:
                    self.live_rdds[rdd["RDD ID"]] = LiveRDD(bool(level.get("Use Off Heap")))

    def _stage_completed(self, e: dict[str, Any]) -> None:
        info = StageInfo.from_json(e["Stage Info"])
        key = (info.stage_id, info.attempt)
        st = self.live_stages.get(key)
        if st is None:
            return
        st.info = info
        for es in st.executor_summaries.values():
            self._write_esummary(st, es)
        if info.failure_reason is not None:
            st.status = "FAILED"
        elif info.submission_time is not None:
            st.status = "COMPLETE"
        else:
            st.status = "SKIPPED"
        for job in st.jobs:
            if st.status == "COMPLETE":
                job.completed_stages.add(info.stage_id)
            elif st.status == "SKIPPED":
                job.skipped_stages.add(info.stage_id)
                job.skipped_tasks += info.num_tasks
            else:
                job.failed_stages += 1
            job.active_stages -= 1
        for eid in st.excluded_executors:
            ex = self.live_executors.get(eid)
            if ex is not None:
                ex.excluded_in_stages.discard(info.stage_id)
        self._write_stage(st)
        if st.active_tasks == 0:
            del self.live_stages[key]
        self.dead_executors = {
            k: x
            for k, x in self.dead_executors.items()
            if any(
                (s.info.submission_time or 0) < (x.remove_time or 0)
                for s in self.live_stages.values()
            )
        }

    # -- end of log ----------------------------------------------------------------------------

    def finish(self) -> None:
        """Flush every entity still live, as the tracking store's close does."""
        for st in self.live_stages.values():
            self._write_stage(st)
            for es in st.executor_summaries.values():
                self._write_esummary(st, es)
        for job in self.live_jobs.values():
            self._write_job(job)
        for ex in self.live_executors.values():
            self._write_executor(ex)
        self._finish_tasks()


def _pairs(value: Any) -> list[list[str]]:
    """An environment section (a JSON object, or a list of pairs in old logs) as [key, value]s."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [[k, v] for k, v in value.items()]
    return [[p[0], p[1]] for p in value]
