"""Executor, block-manager, exclusion and block-update events of the replay."""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.replay.entities import LiveExecutor
from fetcher.eventlog.replay.metrics import executor_metrics_from_json
from fetcher.eventlog.replay.state import DRIVER, ReplayState


def _exec_memory(ex: LiveExecutor, off_heap: bool, mem_delta: int, disk_delta: int) -> None:
    """``updateExecutorMemoryDiskInfo``: deltas applied, never below zero."""
    if ex.total_on_heap >= 0:
        if off_heap:
            ex.used_off_heap = max(0, ex.used_off_heap + mem_delta)
        else:
            ex.used_on_heap = max(0, ex.used_on_heap + mem_delta)
    ex.memory_used = max(0, ex.memory_used + mem_delta)
    ex.disk_used = max(0, ex.disk_used + disk_delta)


class ExecutorEvents(ReplayState):
    """Handlers of the executor-side events."""

    # -- executors -----------------------------------------------------------------------------

    def _executor_added(self, e: Any) -> None:
        info = e.get("Executor Info") or {}
        ex = self._get_or_create_executor(e["Executor ID"], e.get("Timestamp", 0))
        ex.host = info.get("Host")
        ex.is_active = True
        ex.total_cores = info.get("Total Cores", 0)
        rp_id = info.get("Resource Profile Id", 0)
        cpus = self._rp_cpus.get(rp_id, self.default_cpus_per_task) or 1
        ex.max_tasks = ex.total_cores // cpus
        ex.executor_logs = dict(info.get("Log Urls") or {})
        ex.resources = {
            name: {"name": r.get("name", name), "addresses": list(r.get("addresses") or [])}
            for name, r in (info.get("Resources") or {}).items()
        }
        ex.attributes = dict(info.get("Attributes") or {})
        ex.resource_profile_id = rp_id
        self.executor_events.append(
            {
                "executorId": ex.executor_id,
                "event": "added",
                "time": e.get("Timestamp"),
                "host": ex.host,
                "totalCores": ex.total_cores,
            }
        )

    def _executor_removed(self, e: Any) -> None:
        exec_id = e["Executor ID"]
        self.executor_events.append(
            {
                "executorId": exec_id,
                "event": "removed",
                "time": e.get("Timestamp"),
                "reason": e.get("Removed Reason"),
            }
        )
        ex = self.live_executors.pop(exec_id, None)
        if ex is None:
            return
        ex.is_active = False
        ex.remove_time = e.get("Timestamp")
        ex.remove_reason = e.get("Removed Reason")
        self._write_executor(ex)
        for rdd in self.live_rdds.values():
            rdd.dists.pop(exec_id, None)
            for block in [b for b, h in rdd.partitions.items() if exec_id in h]:
                rdd.partitions[block].remove(exec_id)
                if not rdd.partitions[block]:
                    del rdd.partitions[block]
        if any(
            (s.info.submission_time or 0) < (ex.remove_time or 0) for s in self.live_stages.values()
        ):
            self.dead_executors[exec_id] = ex

    def _set_excluded(self, ex: LiveExecutor, excluded: bool) -> None:
        ex.is_excluded = excluded

    def _executor_excluded(self, e: Any) -> None:
        ex = self.live_executors.get(e.get("executorId") or e.get("Executor ID"))
        if ex is not None:
            self._set_excluded(ex, True)

    def _executor_unexcluded(self, e: Any) -> None:
        ex = self.live_executors.get(e.get("executorId") or e.get("Executor ID"))
        if ex is not None:
            self._set_excluded(ex, False)

    def _excluded_for_stage(self, stage_id: int, attempt: int, exec_ids: list[str]) -> None:
        st = self.live_stages.get((stage_id, attempt))
        if st is not None:
            for eid in exec_ids:
                st.executor_summary(eid).is_excluded = True
            st.excluded_executors.update(exec_ids)

    def _executor_excluded_stage(self, e: Any) -> None:
        eid = e.get("executorId")
        sid, attempt_id = e.get("stageId"), e.get("stageAttemptId")
        self._excluded_for_stage(sid, attempt_id, [eid])
        ex = self.live_executors.get(eid)
        if ex is not None:
            ex.excluded_in_stages.add(sid)

    def _node_excluded_stage(self, e: Any) -> None:
        host = e.get("hostId")
        sid, attempt_id = e.get("stageId"), e.get("stageAttemptId")
        ids = [
            x.executor_id
            for x in self.live_executors.values()
            if x.host == host and x.executor_id != DRIVER
        ]
        self._excluded_for_stage(sid, attempt_id, ids)
        for x in self.live_executors.values():
            if x.hostname == host and x.executor_id != DRIVER:
                x.excluded_in_stages.add(sid)

    def _node_excluded(self, e: Any) -> None:
        self._node_set(e.get("hostId"), True)

    def _node_unexcluded(self, e: Any) -> None:
        self._node_set(e.get("hostId"), False)

    def _node_set(self, host: str | None, excluded: bool) -> None:
        for x in self.live_executors.values():
            if x.hostname == host and x.executor_id != DRIVER:
                x.is_excluded = excluded

    def _block_manager_added(self, e: Any) -> None:
        bm: Any = e.get("Block Manager ID") or {}
        ex = self._get_or_create_executor(bm.get("Executor ID"), e.get("Timestamp", 0))
        ex.host_port = f"{bm.get('Host')}:{bm.get('Port')}"
        if e.get("Maximum Onheap Memory") is not None:
            ex.total_on_heap = e["Maximum Onheap Memory"]
            ex.total_off_heap = e.get("Maximum Offheap Memory", 0)
            ex.used_on_heap = 0
            ex.used_off_heap = 0
        ex.is_active = True
        ex.max_memory = e.get("Maximum Memory", 0)

    def _executor_metrics_update(self, e: Any) -> None:
        for upd in e.get("Executor Metrics Updated") or []:
            values = executor_metrics_from_json(upd.get("Executor Metrics"))
            ex = self.live_executors.get(e.get("Executor ID"))
            if ex is not None and ex.peaks.update(values):
                self._write_executor(ex)
            self._stage_peaks(
                upd.get("Stage ID"), upd.get("Stage Attempt ID"), e.get("Executor ID"), values
            )

    def _stage_executor_metrics(self, e: Any) -> None:
        eid = e.get("Executor ID")
        values = executor_metrics_from_json(e.get("Executor Metrics"))
        ex = self.live_executors.get(eid) or self.dead_executors.get(eid)
        if ex is not None and ex.peaks.update(values):
            self._write_executor(ex)
        self._stage_peaks(e.get("Stage ID"), e.get("Stage Attempt ID"), eid, values)

    def _stage_peaks(
        self, sid: int | None, attempt_id: int | None, eid: str | None, values: list[int] | None
    ) -> None:
        st = self.live_stages.get((sid, attempt_id))  # type: ignore[arg-type]
        if st is None or eid is None:
            return
        if st.peaks.update(values):
            self._write_stage(st)
        es = st.executor_summary(eid)
        if es.peaks.update(values):
            self._write_esummary(st, es)

    def _block_updated(self, e: Any) -> None:
        info = e.get("Block Updated Info") or {}
        bm: Any = info.get("Block Manager ID") or {}
        exec_id = bm.get("Executor ID")
        block = str(info.get("Block ID", ""))
        level = info.get("Storage Level") or {}
        use_disk, use_mem = bool(level.get("Use Disk")), bool(level.get("Use Memory"))
        off_heap = bool(level.get("Use Off Heap"))
        valid = (use_disk or use_mem) and level.get("Replication", 1) > 0
        disk_delta = info.get("Disk Size", 0) * (1 if use_disk else -1)
        mem_delta = info.get("Memory Size", 0) * (1 if use_mem else -1)
        ex = self.live_executors.get(exec_id)
        if block.startswith("rdd_"):
            try:
                rdd_id = int(block.split("_")[1])
            except (IndexError, ValueError):
                return
            if ex is not None:
                _exec_memory(ex, off_heap, mem_delta, disk_delta)
            blocks_delta = 0
            rdd = self.live_rdds.get(rdd_id)
            if rdd is not None:
                holders = rdd.partitions.setdefault(block, [])
                if valid:
                    if exec_id not in holders:
                        blocks_delta = 1
                        holders.append(exec_id)
                else:
                    blocks_delta = -1
                    if exec_id in holders:
                        holders.remove(exec_id)
                if not holders:
                    del rdd.partitions[block]
                if ex is not None:
                    if ex.rdd_blocks + blocks_delta > 0:
                        d = rdd.dists.setdefault(exec_id, [0, 0, 0, 0])  # mem, disk, on, off
                        d[0] = max(0, d[0] + mem_delta)
                        d[1] = max(0, d[1] + disk_delta)
                        if ex.total_on_heap >= 0:
                            i = 3 if off_heap else 2
                            d[i] = max(0, d[i] + mem_delta)
                    else:
                        rdd.dists.pop(exec_id, None)
            if ex is not None:
                ex.rdd_blocks += blocks_delta
        elif block.startswith("broadcast_"):
            if ex is not None:
                _exec_memory(ex, off_heap, mem_delta, disk_delta)

    def _unpersist(self, e: Any) -> None:
        rdd = self.live_rdds.pop(e.get("RDD ID"), None)
        if rdd is None:
            return
        for holders in rdd.partitions.values():
            for eid in holders:
                ex = self.live_executors.get(eid)
                if ex is not None:
                    ex.rdd_blocks -= 1
        for eid, (mem, disk, on, off) in rdd.dists.items():
            ex = self.live_executors.get(eid)
            if ex is None:
                continue
            if ex.total_on_heap >= 0:
                if rdd.off_heap:
                    ex.used_off_heap = max(0, ex.used_off_heap - off)
                else:
                    ex.used_on_heap = max(0, ex.used_on_heap - on)
            ex.memory_used = max(0, ex.memory_used - mem)
            ex.disk_used = max(0, ex.disk_used - disk)
