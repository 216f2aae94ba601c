"""What predictions read from the database: run features built from the stored rows (one query
per table for a batch, like :func:`sparkscope.analysis.inputs.from_tables`), and a key's stored
predictions (the class-aware model and the residual pools are in
:mod:`sparkscope.prediction.server_models`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Text, cast, func, select
from sqlalchemy.orm import Session

from sparkscope.advisor.predict import rolling
from sparkscope.advisor.predict.features import (
    KEY_SETTINGS,
    RunFeatures,
    padded,
    recurring_key,
    run_features,
)
from sparkscope.advisor.predict.regimes import Regime
from sparkscope.advisor.predict.rolling import PredictedRun
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application, EnvironmentProperty, Executor, Job, Stage
from sparkscope.models.predictions import RunPrediction
from sparkscope.models.summary import ApplicationName

BATCH = 2000


def names_of_keys(
    session: Session, keys: Iterable[str], patterns: Sequence[str]
) -> dict[str, list[str]]:
    """The stored application names (any server) whose recurring key (``recurring_key``, the
    one the predictions use) is one of ``keys``: one scan of the distinct names."""
    wanted = set(keys)
    out: dict[str, list[str]] = defaultdict(list)
    for name in session.scalars(select(ApplicationName.name)):
        key = recurring_key(name, patterns)
        if key in wanted:
            out[key].append(name)
    return {k: sorted(ns) for k, ns in out.items()}


def key_names(
    session: Session, key: str, patterns: Sequence[str], server_id: int | None = None
) -> dict[int, list[str]]:
    """The stored names of a recurring key, per server that ran them."""
    names = names_of_keys(session, [key], patterns).get(key, [])
    out: dict[int, list[str]] = defaultdict(list)
    for i in range(0, len(names), 1000):
        query = (
            select(Application.server_id, Application.name)
            .where(Application.name.in_(names[i : i + 1000]))
            .distinct()
        )
        if server_id is not None:
            query = query.where(Application.server_id == server_id)
        for sid, name in session.execute(query):
            out[sid].append(name)
    return {sid: sorted(ns) for sid, ns in out.items()}


#: Earlier runs read per key: the training window plus the residuals of the earliest of them.
HISTORY = rolling.WINDOW + rolling.RESIDUAL_RUNS
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


def load_runs(
    session: Session, application_ids: Sequence[int], numbers_only: bool = False
) -> list[RunRow]:
    """Runs with their features, built from the stored rows. ``numbers_only``: only what the
    feature vector needs (stages summed by the database; no per-stage work, no shape), for the
    backtest over runs that have no stored prediction."""
    out: list[RunRow] = []
    ids = list(application_ids)
    for i in range(0, len(ids), BATCH):
        out.extend(_load_batch(session, ids[i : i + BATCH], numbers_only))
    return out


def _load_batch(session: Session, ids: list[int], numbers_only: bool = False) -> list[RunRow]:
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
    first_job: dict[int, int] = {}
    jobs: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for pk, submitted, completed, description in session.execute(
        select(
            Job.application_id, Job.submission_time_ms, Job.completion_time_ms, Job.description
        ).where(Job.application_id.in_(ids))
    ):
        if submitted is not None:
            first_job[pk] = min(first_job.get(pk, submitted), submitted)
        if description:
            jobs[pk].append(
                {"description": description, "submitted": submitted, "completed": completed}
            )
    stages: dict[int, list[dict[str, Any]]] = defaultdict(list)
    if numbers_only:
        for pk, records in session.execute(
            select(Stage.application_id, func.sum(Stage.input_records))
            .where(Stage.application_id.in_(ids), Stage.status != "SKIPPED")
            .group_by(Stage.application_id)
        ):
            stages[pk].append({"input_records": int(records or 0), "num_tasks": 1})
    else:
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
                a,
                props[a["id"]],
                execs[a["id"]],
                stages[a["id"]],
                first_job.get(a["id"]),
                jobs[a["id"]],
            ),
        )
        for a in apps
    ]


# ------------------------------------------------------------- stored predictions


@dataclass
class StoredRun:
    """One run of a key while its predictions are refreshed."""

    pk: int
    start: int
    duration: int | None
    good: bool
    fetched: int
    vector: list[float]
    features: RunFeatures | None = None  # needed only for runs computed now
    point: PredictedRun | None = None  # stored, for runs kept as they are


def _json_text(column: Any) -> Any:
    """A JSON column read as its text: :func:`_parse` decodes it several times faster than the
    driver's per-value ``json.loads`` (a key's history is a few hundred vectors)."""
    return cast(column, Text)


def _parse(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN or Infinity, which json.dumps writes and orjson refuses
        return json.loads(text)


_BASE_COLUMNS = (
    RunPrediction.application_id,
    RunPrediction.start_time_ms,
    RunPrediction.duration_ms,
    RunPrediction.succeeded,
    RunPrediction.fetched_at_ms,
    _json_text(RunPrediction.vector),
)
_POINT_COLUMNS = (
    _json_text(RunPrediction.candidates),
    _json_text(RunPrediction.forecasts),
    RunPrediction.model,
    RunPrediction.expected_ms,
    RunPrediction.low_ms,
    RunPrediction.high_ms,
    RunPrediction.n_train,
    RunPrediction.difficulty,
    RunPrediction.regime,
    RunPrediction.regime_ratio,
    RunPrediction.regime_feature,
)


def stored_runs(session: Session, server_id: int, key: str, since: int) -> list[StoredRun]:
    """The key's stored runs: those from ``since`` on (recomputed now, with their features),
    the ``RESIDUAL_RUNS`` before with their points (selection and intervals read them) and the
    older ones of the training window with their feature vector only (one query for both)."""
    where = (RunPrediction.server_id == server_id, RunPrediction.key == key)
    before = session.execute(
        select(*_BASE_COLUMNS, *_POINT_COLUMNS)
        .where(*where, RunPrediction.start_time_ms < since)
        .order_by(RunPrediction.start_time_ms.desc())
        .limit(HISTORY)
    ).all()
    after = session.execute(
        select(*_BASE_COLUMNS, _json_text(RunPrediction.features))
        .where(*where, RunPrediction.start_time_ms >= since)
        .order_by(RunPrediction.start_time_ms)
    ).all()
    out = [_stored_run(r) for r in reversed(before[rolling.RESIDUAL_RUNS :])]
    row: Any
    for row in reversed(before[: rolling.RESIDUAL_RUNS]):
        cands, fcs, model, expected, low, high, n_train, diff, kind, ratio, feature = row[6:]
        cands, fcs = _parse(cands), _parse(fcs)
        forecasts = dict(fcs or {})
        fmodel = str(forecasts.pop("_model", ""))
        point = PredictedRun(
            dict(cands or {}), model, expected, low, high, n_train, forecasts, fmodel
        )
        point.difficulty = float(diff or 1.0)
        point.regime = Regime.stored(kind, ratio, feature)
        out.append(_stored_run(row, point=point))
    out.extend(_stored_run(r, features=RunFeatures.from_json(_parse(r[6]) or {})) for r in after)
    return out


def _stored_run(row: Any, **extra: Any) -> StoredRun:
    pk, start, duration, good, fetched, vector = row[:6]
    return StoredRun(pk, start, duration, good, fetched, padded(_parse(vector) or []), **extra)


def earlier_features(session: Session, runs: list[StoredRun], i: int) -> list[RunFeatures]:
    """Features of the latest five successful runs before run ``i`` (for the causes)."""
    chosen = [r for r in runs[:i] if r.good][-5:]
    missing = [r.pk for r in chosen if r.features is None]
    if missing:
        stored: dict[int, Any] = dict(
            session.execute(
                select(RunPrediction.application_id, RunPrediction.features).where(
                    RunPrediction.application_id.in_(missing)
                )
            ).all()
        )
        for r in chosen:
            if r.features is None and r.pk in stored:
                r.features = RunFeatures.from_json(stored[r.pk])
    return [r.features for r in chosen if r.features is not None]


def findings_of(session: Session, application_pks: Sequence[int]) -> dict[int, set[str]]:
    """The heuristics that found something (above NONE) in each of these runs."""
    out: dict[int, set[str]] = defaultdict(set)
    pks = sorted(set(application_pks))
    for i in range(0, len(pks), 1000):
        for pk, heuristic in session.execute(
            select(AnalysisResult.application_id, AnalysisResult.heuristic).where(
                AnalysisResult.application_id.in_(pks[i : i + 1000])
            )
        ):
            out[pk].add(heuristic)
    return out
