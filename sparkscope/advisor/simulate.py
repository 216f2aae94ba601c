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
the total-work bound; start-up as observed. History (see calibrate) corrects what these miss.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

#: Random order of tasks inside a stage, the same on every call.
SEED = 20261130


@dataclass(frozen=True)
class StageRun:
    """One stage attempt as observed."""

    stage_id: int
    num_tasks: int
    run_time_ms: float  # total executor run time
    quantiles: tuple[float, ...]  # the quantile grid, ascending
    run_q: tuple[float, ...]  # executor run time at each quantile
    duration_q: tuple[float, ...] = ()  # task duration at each quantile (for the overhead)
    slowest_ms: tuple[float, ...] = ()  # executor run times of the slowest tasks
    submitted_ms: int = 0
    completed_ms: int = 0
    input_bytes: int = 0
    observed_slots: int = 0  # slots alive while it ran (0: the application's)


@dataclass(frozen=True)
class AppRun:
    """One application run as observed."""

    start_ms: int
    end_ms: int
    executors: int
    cores: int
    stages: tuple[StageRun, ...]
    dynamic: bool = False


@dataclass
class Bucket:
    """Stages of similar task counts, simulated together: a matrix of slot times, one row per
    stage in a seeded random order, padded with zero-length tasks."""

    index: Any  # stage indexes (numpy int array)
    tasks: Any  # [stages, width] slot times
    scan: Any  # bool per row: reads input (more tasks with more input, not longer ones)


@dataclass
class Plan:
    """Everything about one run that does not depend on the slot count, built once."""

    app: AppRun
    order: list[int]  # stage indexes by submission
    preds: list[list[int]]  # frontier predecessors
    gap_ms: list[float]  # release delay after the last predecessor (or offset from start)
    buckets: list[Bucket]
    longest_ms: list[float]  # longest task of each stage
    stage_adjust_ms: list[float] = field(default_factory=list)
    tail_ms: float = 0.0
    startup_ms: float = 0.0  # application start -> first stage submitted
    driver_only_ms: float = 0.0
    total_work_ms: float = 0.0


def _interp_matrix(n: int, quantiles: tuple[float, ...]) -> tuple[Any, Any]:
    """The linear map from values at the quantiles to n sorted task times, and which task
    indexes the quantiles pin exactly."""
    import numpy as np

    q = np.asarray(quantiles, dtype=float)
    idx = np.minimum(np.floor(q * n + 1e-9), n - 1)
    # For a repeated index the later quantile counts (values are ascending).
    keep = np.append(idx[1:] != idx[:-1], True)
    cols = np.flatnonzero(keep)
    xp = idx[keep]
    m = np.zeros((n, len(q)))
    eye = np.eye(len(cols))
    for k, c in enumerate(cols):
        m[:, c] = np.interp(np.arange(n, dtype=float), xp, eye[k])
    known = np.zeros(n, dtype=bool)
    known[xp.astype(int)] = True
    return m, known


def rebuild_group(stages: list[StageRun]) -> Any:
    """Run times (ms) of every task of stages with the same task count and quantile grid, sorted
    ascending per row: quantiles interpolated, the slowest tasks put on top, the rest scaled so
    each stage's run time adds up to its total."""
    import numpy as np

    n = stages[0].num_tasks
    m, known = _interp_matrix(n, stages[0].quantiles)
    vals = np.maximum.accumulate(np.array([s.run_q for s in stages], dtype=float), axis=1)
    times = vals @ m.T
    known = np.broadcast_to(known, times.shape).copy()
    for r, s in enumerate(stages):
        if s.slowest_ms:
            slow = np.sort(np.asarray(s.slowest_ms, dtype=float))[-n:]
            k = len(slow)
            slow[-1] = max(slow[-1], vals[r, -1])
            times[r, n - k :] = slow
            known[r, n - k :] = True
    totals = np.array([s.run_time_ms for s in stages], dtype=float)
    body = np.where(known, 0.0, times)
    have = body.sum(axis=1)
    rest = totals - np.where(known, times, 0.0).sum(axis=1)
    factor = np.where((have > 0) & (rest > 0), rest / np.maximum(have, 1e-12), 1.0)
    factor = np.clip(factor, 0.5, 2.0)
    times = np.where(known, times, times * factor[:, None])
    return np.maximum(times, 0.0)


def rebuild_tasks(stage: StageRun) -> Any:
    """Run times of one stage's tasks (sorted ascending)."""
    import numpy as np

    if stage.num_tasks <= 0:
        return np.zeros(0)
    return rebuild_group([stage])[0]


def _overhead_ms(stage: StageRun) -> float:
    if not stage.duration_q or not stage.run_q:
        return 0.0
    mid = len(stage.run_q) // 2
    return max(0.0, float(stage.duration_q[mid]) - float(stage.run_q[mid]))


def _dependencies(app: AppRun) -> tuple[list[list[int]], list[float]]:
    """Frontier predecessors of each stage and its release delay (see the module docstring)."""
    stages = app.stages
    by_comp = sorted(range(len(stages)), key=lambda i: (stages[i].completed_ms, i))
    comps = [stages[i].completed_ms for i in by_comp]
    # Running maximum of submission times over the completion order: the latest-submitted
    # dependency among those completed by a point.
    latest_sub = []
    cur = -(1 << 62)
    for i in by_comp:
        cur = max(cur, stages[i].submitted_ms)
        latest_sub.append(cur)
    preds: list[list[int]] = []
    gaps: list[float] = []
    for i, s in enumerate(stages):
        hi = bisect_right(comps, s.submitted_ms)
        deps = [j for j in by_comp[max(0, hi - 64) : hi] if j != i]
        if hi == 0 or not deps:
            preds.append([])
            gaps.append(float(max(0, s.submitted_ms - app.start_ms)))
            continue
        # A dependency that completed before another dependency was submitted is reached
        # through that one: keep those completed after the latest dependency's submission.
        lo = bisect_right(comps, latest_sub[hi - 1], 0, hi)
        front = [j for j in by_comp[lo:hi] if j != i] or [by_comp[hi - 1]]
        last = max(stages[j].completed_ms for j in front)
        preds.append(front)
        gaps.append(float(max(0, s.submitted_ms - last)))
    return preds, gaps


def build_plan(app: AppRun) -> Plan:
    """Order, dependencies, gaps and task matrices of a run (independent of N)."""
    import numpy as np

    stages = app.stages
    order = sorted(range(len(stages)), key=lambda i: (stages[i].submitted_ms, stages[i].stage_id))
    preds, gaps = _dependencies(app)
    groups: dict[tuple[int, tuple[float, ...]], list[int]] = {}
    for i, s in enumerate(stages):
        if s.num_tasks > 0:
            groups.setdefault((s.num_tasks, s.quantiles), []).append(i)
    rows: dict[int, Any] = {}
    for (_n, _q), idx in groups.items():
        times = rebuild_group([stages[i] for i in idx])
        for k, i in enumerate(idx):
            rows[i] = times[k] + _overhead_ms(stages[i])
    rng = np.random.default_rng(SEED)
    by_width: dict[int, list[int]] = {}
    for i in rows:
        by_width.setdefault(1 << max(0, (stages[i].num_tasks - 1).bit_length()), []).append(i)
    buckets = []
    for width, idx in sorted(by_width.items()):
        mat = np.zeros((len(idx), width))
        for k, i in enumerate(idx):
            r = rows[i]
            mat[k, : len(r)] = r
        mat[:, :] = rng.permuted(mat, axis=1)
        buckets.append(
            Bucket(
                index=np.asarray(idx, dtype=int),
                tasks=mat,
                scan=np.array([stages[i].input_bytes > 0 for i in idx], dtype=bool),
            )
        )
    longest = [float(rows[i].max()) if i in rows else 0.0 for i in range(len(stages))]
    last_end = max((s.completed_ms for s in stages), default=app.start_ms)
    plan = Plan(
        app=app,
        order=order,
        preds=preds,
        gap_ms=gaps,
        buckets=buckets,
        longest_ms=longest,
        tail_ms=float(max(0, app.end_ms - last_end)),
        total_work_ms=float(sum(float(b.tasks.sum()) for b in buckets)),
    )
    plan.driver_only_ms = _driver_only(app)
    plan.startup_ms = min((g for g, p in zip(gaps, preds, strict=True) if not p), default=0.0)
    observed = max(1, app.executors * app.cores)
    slots = [s.observed_slots or observed for s in stages]
    spans = makespans(plan, slots)
    plan.stage_adjust_ms = [
        max(float(max(0, s.completed_ms - s.submitted_ms)) - spans[i], -0.5 * spans[i])
        for i, s in enumerate(stages)
    ]
    return plan


def _driver_only(app: AppRun) -> float:
    """Application time covered by no stage (start-up, driver work, gaps)."""
    spans = sorted((s.submitted_ms, s.completed_ms) for s in app.stages)
    covered = 0
    cur_a: int | None = None
    cur_b = 0
    for a, b in spans:
        if cur_a is None or a > cur_b:
            if cur_a is not None:
                covered += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_a is not None:
        covered += cur_b - cur_a
    return float(max(0, app.end_ms - app.start_ms - covered))


def _waves(tasks: Any, slots: int) -> Any:
    """Makespan of each row's tasks (in order) on ``slots`` idle slots: each wave of ``slots``
    tasks goes to the slots that free first. Rows with more than 64 waves keep all but their
    last two waves as fluid work spread evenly over the slots."""
    import numpy as np

    rows, width = tasks.shape
    if slots <= 1:
        return tasks.sum(axis=1)
    if width <= slots:
        return tasks.max(axis=1)
    if math.ceil(width / slots) > 64:
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
    plan: Plan, slots: list[int] | int, input_scale: float = 1.0, task_scale: float = 1.0
) -> list[float]:
    """Wall time of every stage's tasks on its slots (idle at its release)."""
    import numpy as np

    n = len(plan.app.stages)
    out = np.zeros(n)
    per_stage = np.full(n, slots, dtype=int) if isinstance(slots, int) else np.asarray(slots)
    for b in plan.buckets:
        tasks = b.tasks
        if input_scale != 1.0:
            width = tasks.shape[1]
            wide = np.tile(tasks, (1, math.ceil(input_scale)))[
                :, : max(1, round(width * input_scale))
            ]
            longer = tasks * input_scale
            # Scan stages get more tasks of the same length, the others longer tasks.
            tasks = (
                np.where(b.scan[:, None], wide[:, :width], longer)
                if wide.shape[1] == width
                else None
            )
            if tasks is None:
                spans_scan = _by_slots(wide[b.scan], per_stage[b.index[b.scan]])
                spans_other = _by_slots(longer[~b.scan], per_stage[b.index[~b.scan]])
                out[b.index[b.scan]] = spans_scan
                out[b.index[~b.scan]] = spans_other
                continue
        out[b.index] = _by_slots(tasks, per_stage[b.index])
    return list(out * task_scale)


def _by_slots(tasks: Any, slots: Any) -> Any:
    import numpy as np

    out = np.zeros(tasks.shape[0])
    if tasks.shape[0] == 0:
        return out
    for p in np.unique(slots):
        rows = slots == p
        out[rows] = _waves(tasks[rows], int(p))
    return out


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


def simulate(
    plan: Plan,
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
    app = plan.app
    stages = app.stages
    c = cores or app.cores or 1
    shift = 0.0 if startup_ms is None else startup_ms - plan.startup_ms
    if app.dynamic:
        slots: list[int] | int = [slots_for(app, executors, c, s) for s in stages]
    else:
        slots = max(1, executors * c)
    spans = makespans(plan, slots, input_scale, task_scale)
    long_scale = task_scale * (input_scale if input_scale > 1 else 1.0)
    finish = [0.0] * len(stages)
    chain = [0.0] * len(stages)
    adjust = plan.stage_adjust_ms
    gaps = plan.gap_ms
    slot_time = 0.0
    for i in plan.order:
        span = max(0.0, spans[i] + adjust[i])
        p = plan.preds[i]
        if p:
            release = max(finish[j] for j in p) + gaps[i]
            ready = max(chain[j] for j in p) + gaps[i]
        else:
            release = max(0.0, gaps[i] + shift)
            ready = release
        finish[i] = release + span
        chain[i] = ready + plan.longest_ms[i] * (
            long_scale if not stages[i].input_bytes else task_scale
        )
        if app.dynamic:
            slot_time += span * slots[i]  # type: ignore[index]
    end = max(finish, default=0.0) + plan.tail_ms
    floor = max(chain, default=0.0) + plan.tail_ms
    work = plan.total_work_ms * input_scale * task_scale
    bound = plan.driver_only_ms + shift + work / max(1, executors * c)
    duration = max(end, bound, floor)
    if not app.dynamic:
        slot_time = duration * executors * c
    # Under dynamic allocation idle executors are released: only the stages' slot time counts.
    return SimResult(duration_ms=duration, floor_ms=floor, executor_core_ms=slot_time)


def floor_ms(plan: Plan, input_scale: float = 1.0) -> float:
    """The longest chain of stages (each as long as its longest task) plus the driver time
    around it: no slot count can beat it."""
    return simulate(plan, 1 << 20, 1, input_scale).floor_ms
