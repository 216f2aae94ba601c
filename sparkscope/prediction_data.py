"""Stored rows -> run features and the runs of a recurring key (the read side of predictions).

One query per table for a batch of applications, like :func:`sparkscope.analysis.load_app_data`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sparkscope.advisor.features import KEY_SETTINGS, RunFeatures, run_features
from sparkscope.models import Application, EnvironmentProperty, Executor, Job, Stage

BATCH = 2000
_APP_COLUMNS = (
    "id",
    "server_id",
    "name",
    "start_time_ms",
    "duration_ms",
    "completed",
    "fetched_at_ms",
    "input_bytes",
    "output_bytes",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
    "num_tasks",
    "num_stages",
    "num_jobs",
    "num_executors",
    "num_failed_tasks",
    "num_failed_stages",
    "num_failed_jobs",
    "spark_version",
)
_PROPS = (*KEY_SETTINGS, "sun.java.command")
_STAGE_COLUMNS = (
    "stage_id",
    "attempt_id",
    "name",
    "status",
    "num_tasks",
    "input_bytes",
    "input_records",
    "shuffle_read_bytes",
    "executor_run_time_ms",
)


@dataclass
class RunRow:
    """One run as the prediction code sees it."""

    id: int
    server_id: int
    name: str
    start_time_ms: int
    duration_ms: int | None
    succeeded: bool
    fetched_at_ms: int
    features: RunFeatures


def succeeded(app: dict[str, Any]) -> bool:
    """A run that may train a model: completed, no failed job, a positive duration."""
    return bool(
        app.get("completed")
        and not app.get("num_failed_jobs")
        and (app.get("duration_ms") or 0) > 0
    )


def load_runs(session: Session, application_ids: Sequence[int]) -> list[RunRow]:
    """Runs with their features, built from the stored rows."""
    out: list[RunRow] = []
    ids = list(application_ids)
    for i in range(0, len(ids), BATCH):
        out.extend(_load_batch(session, ids[i : i + BATCH]))
    return out


def _load_batch(session: Session, ids: list[int]) -> list[RunRow]:
    apps = [
        dict(r)
        for r in session.execute(
            select(*(getattr(Application, c) for c in _APP_COLUMNS)).where(Application.id.in_(ids))
        ).mappings()
    ]
    props: dict[int, dict[tuple[str, str], str | None]] = defaultdict(dict)
    for pk, section, name, value in session.execute(
        select(
            EnvironmentProperty.application_id,
            EnvironmentProperty.section,
            EnvironmentProperty.name,
            EnvironmentProperty.value,
        ).where(EnvironmentProperty.application_id.in_(ids), EnvironmentProperty.name.in_(_PROPS))
    ):
        props[pk][(section, name)] = value
    execs: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for pk, is_driver, cores in session.execute(
        select(Executor.application_id, Executor.is_driver, Executor.total_cores).where(
            Executor.application_id.in_(ids)
        )
    ):
        execs[pk].append({"is_driver": is_driver, "total_cores": cores})
    first_job = dict(
        session.execute(
            select(Job.application_id, func.min(Job.submission_time_ms))
            .where(Job.application_id.in_(ids))
            .group_by(Job.application_id)
        ).all()
    )
    stages: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in session.execute(
        select(Stage.application_id, *(getattr(Stage, c) for c in _STAGE_COLUMNS)).where(
            Stage.application_id.in_(ids)
        )
    ).mappings():
        d = dict(r)
        stages[d.pop("application_id")].append(d)
    return [
        RunRow(
            id=a["id"],
            server_id=a["server_id"],
            name=a["name"],
            start_time_ms=int(a["start_time_ms"] or 0),
            duration_ms=a["duration_ms"],
            succeeded=succeeded(a),
            fetched_at_ms=int(a["fetched_at_ms"] or 0),
            features=run_features(
                a, props[a["id"]], execs[a["id"]], stages[a["id"]], first_job.get(a["id"])
            ),
        )
        for a in apps
    ]
