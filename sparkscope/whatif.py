"""What-if glue between the database and the pure numerics in `sparkscope.advisor`.

`load_run` turns one stored application into an `AppRun` (or says what is missing);
`history_points` lists a recurring application's runs; `refit_models` fits and stores the
history-calibrated model of every name touched by a fetch (never on a page load).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from heuristics import sparkconf
from sparkscope.advisor.simulate import AppRun, StageRun
from sparkscope.db import now_ms
from sparkscope.models import (
    Application,
    EnvironmentProperty,
    Executor,
    Stage,
    StageTaskDistribution,
    Task,
    WhatIfModel,
)


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


def spark_props(session: Session, application_pk: int) -> dict[str, str]:
    rows = session.execute(
        select(EnvironmentProperty.name, EnvironmentProperty.value).where(
            EnvironmentProperty.application_id == application_pk,
            EnvironmentProperty.section == "spark",
        )
    )
    return {n: v or "" for n, v in rows}


def run_facts(session: Session, app: Application) -> RunFacts:
    props = spark_props(session, app.id)
    execs = list(
        session.execute(
            select(Executor.is_driver, Executor.total_cores).where(
                Executor.application_id == app.id
            )
        )
    )
    workers = [c for d, c in execs if not d]
    # local[N] runs tasks in the driver; local-cluster[...] has real executors.
    local = not workers
    if local:
        cores = max([c for d, c in execs if d] or [1]) or 1
        executors = 1
    else:
        cores = max(1, sorted(workers)[len(workers) // 2])
        executors = len(workers)
    dynamic = props.get("spark.dynamicAllocation.enabled", "").strip().lower() == "true"
    max_exec = props.get("spark.dynamicAllocation.maxExecutors")
    gib = 1024.0**3
    return RunFacts(
        executors=executors,
        cores=cores,
        executor_gb=(
            sparkconf.executor_memory_bytes(props) + sparkconf.executor_overhead_bytes(props)
        )
        / gib,
        driver_cores=0 if local else sparkconf.driver_cores(props),
        driver_gb=(sparkconf.driver_memory_bytes(props) + sparkconf.driver_overhead_bytes(props))
        / gib,
        dynamic=dynamic,
        max_executors=int(max_exec) if max_exec and max_exec.strip().isdigit() else None,
        input_bytes=int(app.input_bytes or 0),
        duration_ms=int(app.duration_ms or 0),
    )


def load_run(session: Session, app: Application) -> tuple[AppRun, RunFacts]:
    """The stored run as simulation input; WhatIfUnavailable names what is missing."""
    if not app.completed:
        raise WhatIfUnavailable("the application is still running: only finished runs are sized")
    if not app.start_time_ms or not app.end_time_ms:
        raise WhatIfUnavailable("the application has no start or end time")
    facts = run_facts(session, app)
    stages = list(
        session.execute(
            select(
                Stage.stage_id,
                Stage.attempt_id,
                Stage.status,
                Stage.num_tasks,
                Stage.executor_run_time_ms,
                Stage.submission_time_ms,
                Stage.completion_time_ms,
                Stage.input_bytes,
            )
            .where(Stage.application_id == app.id)
            .order_by(Stage.stage_id, Stage.attempt_id)
        )
    )
    failed = [s.stage_id for s in stages if s.status == "FAILED"]
    if failed:
        shown = ", ".join(str(i) for i in failed[:5])
        raise WhatIfUnavailable(
            f"{len(failed)} failed stage attempt(s) (stage {shown}): a re-run's time is not"
            " what this run shows"
        )
    ran = [s for s in stages if s.num_tasks > 0 and s.status == "COMPLETE"]
    if not ran:
        raise WhatIfUnavailable("no completed stage with tasks")
    dists = {
        (d.stage_id, d.attempt_id): d
        for d in session.execute(
            select(
                StageTaskDistribution.stage_id,
                StageTaskDistribution.attempt_id,
                StageTaskDistribution.quantiles,
                StageTaskDistribution.metrics,
            ).where(StageTaskDistribution.application_id == app.id)
        )
    }
    missing = [s.stage_id for s in ran if (s.stage_id, s.attempt_id) not in dists]
    if missing:
        raise WhatIfUnavailable(
            f"{len(missing)} of {len(ran)} stages have no task-time distribution (a History"
            " Server before Spark 3.4 without taskSummary, or an old fetch)"
        )
    slowest: dict[tuple[int, int], list[float]] = {}
    for sid, att, run_ms in session.execute(
        select(Task.stage_id, Task.stage_attempt_id, Task.executor_run_time_ms).where(
            Task.application_id == app.id,
            Task.kept_because.in_(("slowest", "both")),
            Task.status == "SUCCESS",
        )
    ):
        slowest.setdefault((sid, att), []).append(float(run_ms or 0))
    timeline = _executor_timeline(session, app) if facts.dynamic else None
    out = []
    for s in ran:
        d = dists[(s.stage_id, s.attempt_id)]
        run_q = d.metrics.get("executor_run_time_ms")
        if not run_q:
            raise WhatIfUnavailable(f"stage {s.stage_id} has no executor run-time distribution")
        out.append(
            StageRun(
                stage_id=s.stage_id,
                num_tasks=s.num_tasks,
                run_time_ms=float(s.executor_run_time_ms),
                quantiles=tuple(float(q) for q in d.quantiles),
                run_q=tuple(float(v) for v in run_q),
                duration_q=tuple(float(v) for v in d.metrics.get("duration_ms") or ()),
                slowest_ms=tuple(slowest.get((s.stage_id, s.attempt_id), ())),
                submitted_ms=int(s.submission_time_ms or app.start_time_ms),
                completed_ms=int(s.completion_time_ms or app.end_time_ms),
                input_bytes=int(s.input_bytes),
                observed_slots=_slots_at(timeline, s, facts.cores) if timeline else 0,
            )
        )
    run = AppRun(
        start_ms=int(app.start_time_ms),
        end_ms=int(app.end_time_ms),
        executors=facts.executors,
        cores=facts.cores,
        stages=tuple(out),
        dynamic=facts.dynamic,
    )
    return run, facts


def _executor_timeline(session: Session, app: Application) -> list[tuple[int, int]]:
    """(add, remove) times of the executors (not the driver), the remove time of a live one
    being the application's end."""
    end = int(app.end_time_ms or 0)
    return [
        (int(a or app.start_time_ms or 0), int(r or end))
        for a, r in session.execute(
            select(Executor.add_time_ms, Executor.remove_time_ms).where(
                Executor.application_id == app.id, Executor.is_driver.is_(False)
            )
        )
    ]


def _slots_at(timeline: list[tuple[int, int]], stage: Any, cores: int) -> int:
    """Slots alive at the middle of a stage, from the observed add/remove timeline."""
    a = stage.submission_time_ms or 0
    b = stage.completion_time_ms or a
    mid = (a + b) // 2
    alive = sum(1 for add, rem in timeline if add <= mid < rem)
    return max(1, alive) * max(1, cores)


# ------------------------------------------------------------------------------------- history

#: Runs of one name a model is fitted on (the newest).
MAX_HISTORY_RUNS = 40


def history_runs(
    session: Session, server_id: int, name: str, exclude_pk: int | None = None
) -> list[dict[str, Any]]:
    """Usable runs of a name on a server (completed, no failed stage, with distributions),
    oldest first, each with its size, input, duration, work, start-up and simulation plan."""
    from sparkscope.advisor.simulate import build_plan

    apps = session.scalars(
        select(Application)
        .where(
            Application.server_id == server_id,
            Application.name == name,
            Application.completed.is_(True),
        )
        .order_by(Application.start_time_ms.desc())
        .limit(MAX_HISTORY_RUNS)
    ).all()
    out = []
    for a in reversed(apps):
        if a.id == exclude_pk or not a.duration_ms:
            continue
        try:
            run, f = load_run(session, a)
        except WhatIfUnavailable:
            continue
        plan = build_plan(run)
        out.append(
            {
                "pk": a.id,
                "app_id": a.app_id,
                "start_ms": a.start_time_ms,
                "executors": (f.max_executors or f.executors) if f.dynamic else f.executors,
                "cores": f.cores,
                "input_bytes": f.input_bytes,
                "duration_ms": f.duration_ms,
                "work_ms": sum(st.run_time_ms for st in run.stages),
                "startup_ms": plan.startup_ms,
                "plan": plan,
                "facts": f,
            }
        )
    return out


def refit_models(session: Session, server_id: int, names: Iterable[str]) -> int:
    """Fit and store the calibration of each name (at fetch/analyze time, never on a page)."""
    from sparkscope.advisor.combine import fit_calibration

    count = 0
    for name in sorted(set(names)):
        runs = history_runs(session, server_id, name)
        session.execute(
            delete(WhatIfModel).where(WhatIfModel.server_id == server_id, WhatIfModel.name == name)
        )
        if not runs:
            continue
        cal = fit_calibration(runs)
        session.add(
            WhatIfModel(
                server_id=server_id,
                name=name,
                fitted_at_ms=now_ms(),
                n_train=len(runs),
                model=json.dumps(cal.to_dict()),
            )
        )
        count += 1
    return count


def stored_calibration(session: Session, server_id: int, name: str) -> Any:
    """The stored calibration of a name, or an empty one (simulation as observed)."""
    from sparkscope.advisor.combine import Calibration

    row = session.scalar(
        select(WhatIfModel).where(WhatIfModel.server_id == server_id, WhatIfModel.name == name)
    )
    return Calibration() if row is None else Calibration.from_dict(json.loads(row.model))


def refit_after_fetch(factory: Any, server_id: int, names: Iterable[str]) -> None:
    """Refit the models of the names a fetch touched, in one transaction; a failure is logged
    and never fails the fetch (the models are refitted by the next fetch or `whatif-fit`)."""
    import logging

    from sqlalchemy.exc import SQLAlchemyError

    names = sorted(set(names))
    if not names:
        return
    try:
        with factory() as session, session.begin():
            refit_models(session, server_id, names)
    except (SQLAlchemyError, ValueError, ArithmeticError) as exc:
        logging.getLogger("sparkscope.whatif").warning("what-if models not refitted: %s", exc)
