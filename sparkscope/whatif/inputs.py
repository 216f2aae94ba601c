"""The what-if input of one run: gathered from a fetched bundle (stored at fetch time, encoded)
or from the tables (older fetches), and turned into an `AppRun` plus the facts sizing needs.

Stored encoded (zlib-compressed marshal of plain tuples) because reading 2,000 stages'
quantile JSON on a request costs far more than the simulation itself.
"""

from __future__ import annotations

import marshal
import struct
import zlib
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from heuristics import sparkconf
from sparkscope.advisor.whatif.stageplan import AppRun, StageRun
from sparkscope.analysis.assembly import doubles_packer

FORMAT = "whatif-1"
PROP_PREFIXES = ("spark.executor.", "spark.driver.", "spark.dynamicAllocation.", "spark.master")
GIB = 1024.0**3


class WhatIfUnavailable(Exception):
    """The application lacks what a what-if needs; the message says what."""


@dataclass(frozen=True)
class RunFacts:
    """What sizing needs about a run besides its stages."""

    executors: int
    cores: int
    executor_gb: float
    driver_cores: int
    driver_gb: float
    dynamic: bool
    max_executors: int | None
    input_bytes: int
    duration_ms: int


def from_bundle(bundle: Any, spark_properties: Mapping[str, str]) -> dict[str, Any]:
    """The input of a fetched application, from its parsed rows in memory, for :func:`encode`:
    the distributions' run and duration quantiles stay the parsed lists (see :func:`_raw_dist`),
    which ``encode`` converts as :func:`_dist` would. ``spark_properties``: the ``spark`` section
    of its environment by name, a missing value as '' (the heuristic inputs' own)."""
    e = bundle.entry
    props = {k: v for k, v in spark_properties.items() if k.startswith(PROP_PREFIXES)}
    slowest: dict[tuple[int, int], list[float]] = {}
    for t in bundle.tasks:
        if t["kept_because"] in ("slowest", "both") and t["status"] == "SUCCESS":
            key = (t["stage_id"], t["stage_attempt_id"])
            slowest.setdefault(key, []).append(float(t["executor_run_time_ms"] or 0))
    return {
        "completed": bool(e.completed),
        "start": e.start_time_ms,
        "end": e.end_time_ms,
        "duration": int(e.duration_ms or 0),
        "input_bytes": int(sum(s["input_bytes"] for s in bundle.stages)),
        "props": props,
        "executors": [
            (bool(x["is_driver"]), int(x["total_cores"]), x["add_time_ms"], x["remove_time_ms"])
            for x in bundle.executors
        ],
        "stages": [
            (
                s["stage_id"],
                s["attempt_id"],
                s["status"],
                int(s["num_tasks"]),
                float(s["executor_run_time_ms"]),
                s["submission_time_ms"],
                s["completion_time_ms"],
                int(s["input_bytes"]),
            )
            for s in bundle.stages
        ],
        "dists": {
            (d["stage_id"], d["attempt_id"]): _raw_dist(d["quantiles"], d["metrics"])
            for d in bundle.distributions
        },
        "slowest": {k: tuple(v) for k, v in slowest.items()},
        # what an event-log source adds: every task's run time, the stage DAG, stage -> job
        "tasks": dict(getattr(bundle, "task_run_ms", None) or {}),
        "parents": dict(getattr(bundle, "stage_parents", None) or {}),
        "stage_job": _stage_jobs(bundle.jobs),
    }


def _stage_jobs(jobs: list[dict[str, Any]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for j in sorted(jobs, key=lambda j: j["job_id"]):
        for sid in j["stage_ids"] or []:
            out.setdefault(int(sid), int(j["job_id"]))
    return out


def _dist(quantiles: Any, metrics: dict[str, Any]) -> tuple[Any, ...]:
    run_q = metrics.get("executor_run_time_ms")
    dur_q = metrics.get("duration_ms")
    return (
        tuple(map(float, quantiles)),
        None if not run_q else tuple(map(float, run_q)),
        None if not dur_q else tuple(map(float, dur_q)),
    )


def _raw_dist(quantiles: Any, metrics: dict[str, Any]) -> tuple[Any, ...]:
    """:func:`_dist` with the run and duration quantiles left as they are (None when empty):
    :func:`_pack` converts them straight into bytes, without the float tuples in between."""
    return (
        tuple(map(float, quantiles)),
        metrics.get("executor_run_time_ms") or None,
        metrics.get("duration_ms") or None,
    )


def _pack(values: Any) -> bytes | None:
    """The float64 bytes of quantile values (None stays None), each value converted by float()."""
    if values is None:
        return None
    if type(values) is list or type(values) is tuple:  # struct converts numbers as float() does
        try:
            return doubles_packer(len(values))(*values)
        except struct.error:  # not all numbers: float() decides (and raises as it would)
            pass
    return array("d", tuple(map(float, values))).tobytes()


def _unpack(blob: bytes | None) -> tuple[float, ...] | None:
    if blob is None:
        return None
    values = array("d")
    values.frombytes(blob)
    return tuple(values)


def encode(data: dict[str, Any]) -> bytes:
    """Plain tuples, the float vectors as packed doubles (marshal reads bytes much faster than
    tuples of floats), zlib-compressed."""
    packed = dict(data)
    packed["dists"] = {
        k: (q, _pack(run_q), _pack(dur_q)) for k, (q, run_q, dur_q) in data["dists"].items()
    }
    packed["tasks"] = {k: array("q", v).tobytes() for k, v in data.get("tasks", {}).items()}
    return zlib.compress(marshal.dumps(packed), 1)


def decode(blob: bytes) -> dict[str, Any]:
    data: dict[str, Any] = marshal.loads(zlib.decompress(blob))
    grids: dict[Any, Any] = {}
    data["dists"] = {
        k: (grids.setdefault(q, q), _unpack(run_q), _unpack(dur_q))
        for k, (q, run_q, dur_q) in data["dists"].items()
    }
    tasks: dict[Any, tuple[float, ...]] = {}
    for k, blob in (data.get("tasks") or {}).items():
        values = array("q")
        values.frombytes(blob)
        tasks[k] = tuple(float(v) for v in values)
    data["tasks"] = tasks
    return data


def facts_of(data: dict[str, Any]) -> RunFacts:
    props = data["props"]
    conf = sparkconf.SparkConf.of(props)
    workers = [c for d, c, _a, _r in data["executors"] if not d]
    if workers:
        cores = max(1, sorted(workers)[len(workers) // 2])
        executors = len(workers)
        driver_cores = conf.driver_cores
    else:  # local[N]: the driver runs the tasks
        cores = max([c for d, c, _a, _r in data["executors"] if d] or [1]) or 1
        executors = 1
        driver_cores = 0
    max_exec = (props.get("spark.dynamicAllocation.maxExecutors") or "").strip()
    return RunFacts(
        executors=executors,
        cores=cores,
        executor_gb=(conf.executor_memory_bytes + conf.executor_overhead_bytes) / GIB,
        driver_cores=driver_cores,
        driver_gb=(conf.driver_memory_bytes + conf.driver_overhead_bytes) / GIB,
        dynamic=(props.get("spark.dynamicAllocation.enabled") or "").strip().lower() == "true",
        max_executors=int(max_exec) if max_exec.isascii() and max_exec.isdigit() else None,
        input_bytes=int(data["input_bytes"]),
        duration_ms=int(data["duration"]),
    )


def build(data: dict[str, Any]) -> tuple[AppRun, RunFacts]:
    """The run as simulation input; WhatIfUnavailable names what is missing."""
    if not data["completed"]:
        raise WhatIfUnavailable("the application is still running: only finished runs are sized")
    start, end = data["start"], data["end"]
    if start is None or end is None:
        raise WhatIfUnavailable("the application has no start or end time")
    facts = facts_of(data)
    stages = sorted(data["stages"])
    failed = [s[0] for s in stages if s[2] == "FAILED"]
    if failed:
        shown = ", ".join(str(i) for i in failed[:5])
        raise WhatIfUnavailable(
            f"{len(failed)} failed stage attempt(s) (stage {shown}): a re-run's time is not"
            " what this run shows"
        )
    ran = [s for s in stages if s[3] > 0 and s[2] == "COMPLETE"]
    if not ran:
        raise WhatIfUnavailable("no completed stage with tasks")
    dists = data["dists"]
    missing = [s for s in ran if not (dists.get((s[0], s[1])) or (None, None))[1]]
    if missing:
        raise WhatIfUnavailable(
            f"{len(missing)} of {len(ran)} stages have no task-time distribution (a History"
            " Server before Spark 3.4 without taskSummary, or an old fetch)"
        )
    timeline = None
    if facts.dynamic:
        timeline = [
            (int(a if a is not None else start), int(r if r is not None else end))
            for d, _c, a, r in data["executors"]
            if not d
        ]
    slowest = data["slowest"]
    every = data.get("tasks") or {}
    parents = data.get("parents") or {}
    stage_job = (data.get("stage_job") or {}) if parents else {}  # used with the real DAG only
    out = []
    for sid, attempt, _status, n, run_ms, sub, comp, input_bytes in ran:
        quantiles, run_q, dur_q = dists[(sid, attempt)]
        sub = int(sub if sub is not None else start)
        comp = int(comp if comp is not None else end)
        out.append(
            StageRun(
                stage_id=sid,
                num_tasks=n,
                run_time_ms=run_ms,
                quantiles=quantiles,
                run_q=run_q,
                duration_q=dur_q or (),
                slowest_ms=tuple(sorted(slowest.get((sid, attempt), ()), reverse=True)),
                submitted_ms=sub,
                completed_ms=comp,
                input_bytes=input_bytes,
                observed_slots=_slots_at(timeline, sub, comp, facts.cores) if timeline else 0,
                task_ms=tuple(every.get((sid, attempt), ())),
                job_id=stage_job.get(sid),
            )
        )
    run = AppRun(
        start_ms=int(start),
        end_ms=int(end),
        executors=facts.executors,
        cores=facts.cores,
        stages=tuple(out),
        dynamic=facts.dynamic,
        parents={int(k): list(v) for k, v in parents.items()},
    )
    return run, facts


def _slots_at(timeline: list[tuple[int, int]], sub: int, comp: int, cores: int) -> int:
    """Slots alive at the middle of a stage, from the observed add/remove timeline."""
    mid = (sub + comp) // 2
    alive = sum(1 for add, rem in timeline if add <= mid < rem)
    return max(1, alive) * max(1, cores)
