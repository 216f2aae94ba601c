"""The slot-count-independent part of the what-if simulation: each stage's tasks rebuilt from
what the fetcher stores, and the order and dependencies of the stages (see
`sparkscope.advisor.whatif.simulate` for the method and its assumptions)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from sparkscope.advisor.intervals import union_length

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
    # every task's executor run time, ascending (an event-log source has them): used instead of
    # the quantiles when there is one per task
    task_ms: tuple[float, ...] = ()
    job_id: int | None = None  # the first job the stage ran in (for the DAG below)


@dataclass(frozen=True)
class AppRun:
    """One application run as observed."""

    start_ms: int
    end_ms: int
    executors: int
    cores: int
    stages: tuple[StageRun, ...]
    dynamic: bool = False
    # stage id -> parent stage ids as the event log states them (empty: not known); a stage then
    # waits only for its real ancestors among the stages of its own job
    parents: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class Bucket:
    """Stages of similar task counts, simulated together: a matrix of slot times, one row per
    stage in a seeded random order, padded with zero-length tasks."""

    index: Any  # stage indexes (numpy int array)
    tasks: Any  # [stages, width] slot times
    scan: Any  # bool per row: reads input (more tasks with more input, not longer ones)


@dataclass
class StagePlan:
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
    # The order cut into (head, chain) pieces: each stage of a chain waits only for the one
    # before it, so a chain's finish times are cumulative sums.
    segments: list[tuple[int, list[int]]] = field(default_factory=list)
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
    for r, s in enumerate(stages):
        if len(s.task_ms) == n:  # every task known: no rebuilding
            times[r] = np.sort(np.asarray(s.task_ms, dtype=float))
    return np.maximum(times, 0.0)


def rebuild_tasks(stage: StageRun) -> Any:
    """Run times of one stage's tasks (sorted ascending)."""
    import numpy as np

    if stage.num_tasks <= 0:
        return np.zeros(0)
    return rebuild_group([stage])[0]


def _overheads(stages: list[StageRun]) -> Any:
    """Per stage, the median task's time beyond its run time (deserialisation, scheduler delay,
    result fetch): a task holds its slot that much longer."""
    import numpy as np

    out = np.zeros(len(stages))
    for k, s in enumerate(stages):
        if s.duration_q and s.run_q:
            mid = len(s.run_q) // 2
            out[k] = max(0.0, s.duration_q[mid] - s.run_q[mid])
    return out


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
        if hi == 0 or (hi == 1 and by_comp[0] == i):
            preds.append([])
            gaps.append(float(max(0, s.submitted_ms - app.start_ms)))
            continue
        # A dependency that completed before another dependency was submitted is reached
        # through that one: keep those completed after the latest dependency's submission.
        lo = bisect_right(comps, latest_sub[hi - 1], 0, hi)
        front = [j for j in by_comp[lo:hi] if j != i] or [by_comp[hi - 1]]
        if app.parents:
            # nothing left (every earlier stage ran beside it): the observed order stands
            front = _with_real_parents(app, i, front, by_comp[:hi]) or front
        last = max(stages[j].completed_ms for j in front)
        preds.append(front)
        gaps.append(float(max(0, s.submitted_ms - last)))
    return preds, gaps


def _ancestors(parents: dict[int, list[int]], stage_id: int) -> set[int]:
    out: set[int] = set()
    todo = list(parents.get(stage_id, ()))
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(parents.get(p, ()))
    return out


def _with_real_parents(app: AppRun, i: int, front: list[int], done: list[int]) -> list[int]:
    """The time-based predecessors of stage ``i`` corrected by the real DAG: a predecessor of the
    same job that is no ancestor ran beside it, not before it (dropped); one of an earlier job
    stays (the driver submits a job after the one before it); the latest-completing real
    ancestors among the stages completed before it was submitted are added."""
    stages = app.stages
    s = stages[i]
    ancestors = _ancestors(app.parents, s.stage_id)
    kept = [
        j
        for j in front
        if stages[j].stage_id in ancestors
        or stages[j].job_id is None
        or stages[j].job_id != s.job_id
    ]
    real = [j for j in done if j != i and stages[j].stage_id in ancestors]
    if real:
        newest = max(stages[j].completed_ms for j in real)
        kept += [j for j in real if stages[j].completed_ms == newest and j not in kept]
    return kept


def prepare_plan(app: AppRun) -> StagePlan:
    """Order, dependencies, gaps and task matrices of a run (independent of N); the per-stage
    adjustments to the observed run are added by `simulate.build_plan`."""
    import numpy as np

    stages = app.stages
    order = sorted(range(len(stages)), key=lambda i: (stages[i].submitted_ms, stages[i].stage_id))
    preds, gaps = _dependencies(app)
    groups: dict[tuple[int, tuple[float, ...]], list[int]] = {}
    for i, s in enumerate(stages):
        if s.num_tasks > 0:
            groups.setdefault((s.num_tasks, s.quantiles), []).append(i)
    longest = np.zeros(len(stages))
    parts: dict[int, list[tuple[list[int], Any]]] = {}
    for (n, _q), idx in groups.items():
        members = [stages[i] for i in idx]
        times = rebuild_group(members) + _overheads(members)[:, None]
        longest[idx] = times[:, -1]
        parts.setdefault(1 << max(0, (n - 1).bit_length()), []).append((idx, times))
    rng = np.random.default_rng(SEED)
    buckets = []
    for width, chunks in sorted(parts.items()):
        idx_all = [i for idx, _t in chunks for i in idx]
        mat = np.zeros((len(idx_all), width))
        row = 0
        for idx, times in chunks:
            mat[row : row + len(idx), : times.shape[1]] = times
            row += len(idx)
        mat = rng.permuted(mat, axis=1)
        buckets.append(
            Bucket(
                index=np.asarray(idx_all, dtype=int),
                tasks=mat,
                scan=np.array([stages[i].input_bytes > 0 for i in idx_all], dtype=bool),
            )
        )
    last_end = max((s.completed_ms for s in stages), default=app.start_ms)
    plan = StagePlan(
        app=app,
        order=order,
        preds=preds,
        gap_ms=gaps,
        buckets=buckets,
        longest_ms=[float(x) for x in longest],
        tail_ms=float(max(0, app.end_ms - last_end)),
        total_work_ms=float(sum(float(b.tasks.sum()) for b in buckets)),
    )
    plan.driver_only_ms = _driver_only(app)
    plan.startup_ms = min((g for g, p in zip(gaps, preds, strict=True) if not p), default=0.0)
    plan.segments = _segments(order, preds)
    return plan


def _segments(order: list[int], preds: list[list[int]]) -> list[tuple[int, list[int]]]:
    out: list[tuple[int, list[int]]] = []
    for t, i in enumerate(order):
        if out and t > 0 and preds[i] == [order[t - 1]]:
            out[-1][1].append(i)
        else:
            out.append((i, []))
    return out


def _driver_only(app: AppRun) -> float:
    """Application time covered by no stage (start-up, driver work, gaps)."""
    covered = union_length((s.submitted_ms, s.completed_ms) for s in app.stages)
    return float(max(0, app.end_ms - app.start_ms - covered))
