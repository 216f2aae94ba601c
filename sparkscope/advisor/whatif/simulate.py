"""Single-run what-if: replay one application's stages on N x C task slots.

Pure numerics (numpy, imported lazily). The input is what the fetcher stores per stage attempt:
the task-time quantiles (21 points of the 0.05 grid), the stage's total executor run time, its
slowest tasks, its submission / completion times, and per application the start, end and executor
timeline. Nothing here reads the database.

How a stage's tasks are rebuilt: the SHS answers a quantile q with the task at sorted index
``min(floor(q * n), n - 1)``, so on the 0.05 grid every task of a stage of at most 20 tasks is
known exactly; for bigger stages the tasks between known indices are interpolated, the stored
slowest tasks replace the top of the list, and the body is scaled so the stage's run time adds up
to its total. Each task then holds a slot for its run time plus the stage's median
non-run overhead (deserialisation, scheduler delay, result fetch).

How stages are ordered: stage B waits for stage A when A completed before B was submitted (the
stage DAG is not in the REST API; this is what the observed run shows). B is released after its
last such predecessor finishes plus the driver time observed between them; stages with no
predecessor keep their observed offset from the application's start (executor start-up and
driver work before the first job, as observed). Each stage's tasks run in waves on the slots
(a fixed, seeded order, so a straggler is not assumed to start first). A stage whose observed
wall time differs from its simulation at the observed slot count keeps that difference (stage
scheduling, shuffle registration) as a constant. The application ends when its last stage does
plus the observed driver time after it.

Assumptions (the limits): task times do not depend on N (no contention for CPU, disk or network,
no change in GC); the same partitioning; concurrent independent stages share slots only through
the total-work bound; start-up as observed. History (see calibrate), or the server's prior for
an application without history at other sizes, corrects what these miss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.whatif.limits import check_budget
from sparkscope.advisor.whatif.stageplan import AppRun, StagePlan, StageRun, prepare_plan

#: Beyond this many waves a stage's body is treated as fluid work (its tail stays task by task).
FLUID_WAVES = 8


def _waves(tasks: Any, slots: int) -> Any:
    """Makespan of each row's tasks (in order) on ``slots`` idle slots: each wave of ``slots``
    tasks goes to the slots that free first. Rows with more than `FLUID_WAVES` waves keep all
    but their last two waves as fluid work spread evenly over the slots."""
    import numpy as np

    rows, width = tasks.shape
    if slots <= 1:
        return tasks.sum(axis=1)
    if width <= slots:
        return tasks.max(axis=1)
    if math.ceil(width / slots) > FLUID_WAVES:
        tail = tasks[:, -2 * slots :]
        free = np.repeat(tasks[:, : -2 * slots].sum(axis=1, keepdims=True) / slots, slots, axis=1)
    else:
        tail = tasks
        free = np.zeros((rows, slots))
    for start in range(0, tail.shape[1], slots):
        chunk = tail[:, start : start + slots]
        free[:, : chunk.shape[1]] += chunk
        free.sort(axis=1)
    return free[:, -1].copy()


def makespans(
    plan: StagePlan, slots: list[int] | int, input_scale: float = 1.0, task_scale: float = 1.0
) -> list[float]:
    """Wall time of every stage's tasks on its slots (idle at its release). With more input,
    scan stages get more tasks of the same length (their tasks repeated), the others longer
    tasks; with less, scan stages get fewer tasks."""
    import numpy as np

    n = len(plan.app.stages)
    out = np.zeros(n)
    per_stage = np.full(n, slots, dtype=int) if isinstance(slots, int) else np.asarray(slots)
    for b in plan.buckets:
        check_budget()
        tasks = b.tasks
        if input_scale == 1.0:
            out[b.index] = _by_slots(tasks, per_stage[b.index])
            continue
        width = max(1, round(tasks.shape[1] * input_scale))
        scan, other = b.scan, ~b.scan
        out[b.index[scan]] = _by_slots(tasks[scan], per_stage[b.index[scan]], width)
        out[b.index[other]] = _by_slots(tasks[other] * input_scale, per_stage[b.index[other]])
    return list(out * task_scale)


def work_cells(
    plan: StagePlan, executors: list[int], cores: int | None = None, input_scale: float = 1.0
) -> int:
    """What simulating these sizes costs, in task cells: per size and stage, the tasks (or the
    slots of the waves built one by one, when fewer) a wave pass goes over. The measure of a
    request's work (:class:`~sparkscope.advisor.whatif.limits.Limits`), before doing it."""
    import numpy as np

    c = cores or plan.app.cores or 1
    slots = np.maximum(1, np.asarray(executors, dtype=np.int64) * c)
    built = (FLUID_WAVES + 2) * slots
    total = 0
    for b in plan.buckets:
        width = b.tasks.shape[1]
        wide = max(1, round(width * input_scale))
        scan = int(b.scan.sum())
        total += scan * int(np.minimum(wide, built).sum())
        total += (len(b.index) - scan) * int(np.minimum(width, built).sum())
    return total


#: Rows of a task matrix simulated at once: bounds the slot matrix a wave sorts (cells).
_CHUNK_CELLS = 1 << 21


def _by_slots(tasks: Any, slots: Any, width: int | None = None) -> Any:
    """Makespan of each row on its slot count; ``width``: the row's tasks repeated up to that
    many (or cut to it), without building the longer rows."""
    import numpy as np

    out = np.zeros(tasks.shape[0])
    if tasks.shape[0] == 0:
        return out
    for count in np.unique(slots):
        rows = np.flatnonzero(slots == count)
        n = int(count)
        cells = max(1, min(width or tasks.shape[1], FLUID_WAVES * n) + 2 * n)
        step = max(1, _CHUNK_CELLS // cells)
        for i in range(0, len(rows), step):
            check_budget()
            chunk = rows[i : i + step]
            out[chunk] = _repeated_waves(tasks[chunk], n, width)
    return out


def _repeated_waves(tasks: Any, slots: int, width: int | None) -> Any:
    """`_waves` of each row repeated (or cut) to ``width`` tasks, building at most the part
    that is not fluid work."""
    import numpy as np

    own = tasks.shape[1]
    if width is None or width == own:
        return _waves(tasks, slots)
    if width < own:
        return _waves(tasks[:, :width], slots)
    if slots <= 1:
        return _repeated_sums(tasks, width)
    if width <= slots:
        return tasks.max(axis=1)
    if math.ceil(width / slots) <= FLUID_WAVES:
        return _waves(tasks[:, np.arange(width) % own], slots)
    # Fluid work up to the last two waves, which run task by task (as `_waves` does).
    body = width - 2 * slots
    free = np.repeat((_repeated_sums(tasks, body) / slots)[:, None], slots, axis=1)
    tail = tasks[:, np.arange(body, width) % own]
    for start in range(0, tail.shape[1], slots):
        free[:, : min(slots, tail.shape[1] - start)] += tail[:, start : start + slots]
        free.sort(axis=1)
    return free[:, -1].copy()


def _repeated_sums(tasks: Any, width: int) -> Any:
    """Sum of each row's first ``width`` tasks of the row repeated."""
    own = tasks.shape[1]
    full, rest = divmod(width, own)
    return full * tasks.sum(axis=1) + tasks[:, :rest].sum(axis=1)


def stage_makespan(tasks: Any, slots: int) -> float:
    """Wall time of one stage's tasks (in their order) on ``slots`` idle slots."""
    import numpy as np

    arr = np.asarray(tasks, dtype=float)
    if arr.size == 0:
        return 0.0
    return float(_waves(arr[None, :], slots)[0])


def slots_for(app: AppRun, executors: int, cores: int | None, stage: StageRun) -> int:
    """Task slots a stage gets with ``executors`` executors of ``cores`` cores. Under dynamic
    allocation ``executors`` is maxExecutors and a stage gets only the executors its tasks ask
    for."""
    c = cores or app.cores or 1
    n = executors
    if app.dynamic:
        n = min(executors, max(1, math.ceil(stage.num_tasks / c)))
    return max(1, n * c)


@dataclass(frozen=True)
class SimResult:
    """A simulated run."""

    duration_ms: float
    floor_ms: float
    executor_core_ms: float  # slot-time held by executors (for cost)


def build_plan(app: AppRun) -> StagePlan:
    """The plan of a run, each stage keeping what its observed wall time adds to its simulation
    at the observed slot count (stage scheduling, shuffle registration)."""
    plan = prepare_plan(app)
    observed = max(1, app.executors * app.cores)
    slots = [s.observed_slots or observed for s in app.stages]
    spans = makespans(plan, slots)
    plan.stage_adjust_ms = [
        max(float(max(0, s.completed_ms - s.submitted_ms)) - spans[i], -0.5 * spans[i])
        for i, s in enumerate(app.stages)
    ]
    return plan


def simulate(
    plan: StagePlan,
    executors: int,
    cores: int | None = None,
    input_scale: float = 1.0,
    task_scale: float = 1.0,
    startup_ms: float | None = None,
) -> SimResult:
    """Predicted wall time of the planned run with ``executors`` x ``cores`` slots.

    ``task_scale`` multiplies every task time (contention learnt from history) and
    ``startup_ms`` replaces the observed time before the first stage (start-up of that many
    executors, learnt from history); the defaults keep the run as observed.
    """
    return simulate_sizes(plan, [executors], cores, input_scale, [task_scale], [startup_ms])[0]


def simulate_sizes(
    plan: StagePlan,
    executors: list[int],
    cores: int | None = None,
    input_scale: float = 1.0,
    task_scales: list[float] | None = None,
    startups: list[float | None] | None = None,
) -> list[SimResult]:
    """`simulate` for several executor counts at once: the stage graph is walked once with a
    vector of finish times (one per size)."""
    import numpy as np

    app = plan.app
    stages = app.stages
    k = len(executors)
    c = cores or app.cores or 1
    scales = np.asarray(task_scales if task_scales is not None else [1.0] * k, dtype=float)
    shifts = np.array([0.0 if s is None else s - plan.startup_ms for s in (startups or [None] * k)])
    spans = np.zeros((len(stages), k))
    slots_used: list[Any] = []
    for j, n in enumerate(executors):
        check_budget()
        if app.dynamic:
            slots: list[int] | int = [slots_for(app, n, c, s) for s in stages]
            slots_used.append(np.asarray(slots, dtype=float))
        else:
            slots = max(1, n * c)
        spans[:, j] = makespans(plan, slots, input_scale, float(scales[j]))
    spans = np.maximum(spans + np.asarray(plan.stage_adjust_ms)[:, None], 0.0)
    long_scale = np.array(
        [
            plan.longest_ms[i] * (input_scale if input_scale > 1 and not s.input_bytes else 1.0)
            for i, s in enumerate(stages)
        ]
    )
    finish = np.zeros((len(stages), k))
    chain = np.zeros((len(stages), k))
    gaps = np.asarray(plan.gap_ms)
    for head, tail in plan.segments:
        p = plan.preds[head]
        if not p:
            release = np.maximum(gaps[head] + shifts, 0.0)
            ready = release
        else:
            release = finish[p].max(axis=0) + gaps[head]
            ready = chain[p].max(axis=0) + gaps[head]
        finish[head] = release + spans[head]
        chain[head] = ready + long_scale[head] * scales
        if tail:
            # A chain of stages each waiting for the one before: cumulative sums.
            finish[tail] = finish[head] + np.cumsum(gaps[tail][:, None] + spans[tail], axis=0)
            chain[tail] = chain[head] + np.cumsum(
                gaps[tail][:, None] + long_scale[tail][:, None] * scales, axis=0
            )
    end = (finish.max(axis=0) if len(stages) else np.zeros(k)) + plan.tail_ms
    floor = (chain.max(axis=0) if len(stages) else np.zeros(k)) + plan.tail_ms
    total_slots = np.array([max(1, n * c) for n in executors], dtype=float)
    bound = plan.driver_only_ms + shifts + plan.total_work_ms * input_scale * scales / total_slots
    duration = np.maximum(np.maximum(end, bound), floor)
    out = []
    for j in range(k):
        if app.dynamic:
            # Idle executors are released: only the stages' slot time counts.
            held = float((spans[:, j] * slots_used[j]).sum())
        else:
            held = float(duration[j] * total_slots[j])
        out.append(SimResult(float(duration[j]), float(floor[j]), held))
    return out


def floor_ms(plan: StagePlan, input_scale: float = 1.0) -> float:
    """The longest chain of stages (each as long as its longest task) plus the driver time
    around it: no slot count can beat it."""
    return simulate(plan, 1 << 20, 1, input_scale).floor_ms
