"""Compute and store the predictions of recurring runs (the write side; pages only read them).

:func:`refresh_session` is the pipeline's predictions step (after a fetch run and in ``sparkscope
analyze``). It finds the runs whose prediction is missing or stale (new run, re-fetched run:
``fetched_at_ms`` changed) and the keys that lost a run (deleted: fewer stored predictions than
the key's forecast counted), then recomputes, per key, every run from the earliest changed one
on: later runs depended on it. Everything a run's prediction uses started before it.
"""

from __future__ import annotations

import functools
import logging
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.advisor.predict import amdahl, candidates, classaware, rolling, verdict
from sparkscope.advisor.predict.changes import finding_changes, what_changed
from sparkscope.advisor.predict.features import recurring_key
from sparkscope.advisor.predict.rolling import PredictedRun
from sparkscope.config.loader import PredictionConfig
from sparkscope.db import now_ms
from sparkscope.models.application import Application
from sparkscope.models.predictions import RecurringForecast, RunPrediction
from sparkscope.prediction.plan_causes import plan_changes
from sparkscope.prediction.runs import (
    BATCH,
    RunRow,
    StoredRun,
    earlier_features,
    findings_of,
    load_runs,
    stored_runs,
)
from sparkscope.prediction.server_models import amdahl_share, class_model, pools, size_elasticity
from sparkscope.prediction.window import FeatureLoader, PredictionRows, Reach

log = logging.getLogger(__name__)


@dataclass
class RefreshStats:
    keys: int = 0
    runs: int = 0


def refresh_server(
    factory: sessionmaker[Session],
    server_id: int,
    settings: PredictionConfig,
    full: bool = False,
) -> RefreshStats:
    """Bring the predictions of one server up to date (all of them when ``full``), in one
    transaction of its own."""
    with factory() as session, session.begin():
        return refresh_session(session, server_id, settings, full)


def refresh_session(
    session: Session, server_id: int, prediction_config: PredictionConfig, full: bool = False
) -> RefreshStats:
    """Bring the predictions of one server up to date in the caller's transaction."""
    stats = RefreshStats()
    started = now_ms()
    if full:
        session.execute(delete(RunPrediction).where(RunPrediction.server_id == server_id))
        session.execute(delete(RecurringForecast).where(RecurringForecast.server_id == server_id))
    dirty_rows = session.execute(
        select(Application.id, Application.name, Application.start_time_ms)
        .outerjoin(RunPrediction, RunPrediction.application_id == Application.id)
        .where(
            Application.server_id == server_id,
            (RunPrediction.application_id.is_(None))
            | (RunPrediction.fetched_at_ms != Application.fetched_at_ms)
            # stored before "what changed" was kept (migration 0012): computed once more
            | (RunPrediction.changes.is_(None)),
        )
    ).all()
    first_dirty: dict[str, int] = {}
    dirty_ids: dict[str, list[int]] = defaultdict(list)
    for pk, name, start in dirty_rows:
        key = recurring_key(name, prediction_config.key_patterns)
        dirty_ids[key].append(pk)
        first_dirty[key] = min(first_dirty.get(key, start or 0), start or 0)
    # Keys that lost a run since their forecast was computed: recompute them from the start.
    for key in _shrunk_keys(session, server_id):
        first_dirty[key] = -1
    if not first_dirty:
        return stats
    stale = [pk for pks in dirty_ids.values() for pk in pks]
    for i in range(0, len(stale), 1000):
        session.execute(
            delete(RunPrediction).where(RunPrediction.application_id.in_(stale[i : i + 1000]))
        )
    # vectors only: each run's features are read again when its turn comes (FeatureLoader)
    fresh: dict[int, StoredRun] = {}
    for i in range(0, len(stale), BATCH):
        fresh.update((r.id, _as_stored(r)) for r in load_runs(session, stale[i : i + BATCH]))
    pool, fpool = pools(session, server_id, started)
    model = class_model(session, server_id, min(first_dirty.values()), prediction_config)
    # learnt once per refresh, when a key first needs it (Options.amdahl, Options.elasticity)
    before = min(first_dirty.values())
    shares = functools.cache(lambda: amdahl_share(session, server_id, before))
    elastic = functools.cache(lambda: size_elasticity(session, server_id, before))
    for key, since in first_dirty.items():
        # taken out of ``fresh``: a key's runs are let go of as its loop passes them
        new_runs = [fresh.pop(pk) for pk in dirty_ids.pop(key, ()) if pk in fresh]
        stats.runs += _refresh_key(
            session, server_id, key, since, new_runs, prediction_config, pool, fpool, model, shares,
            elastic,
        )  # fmt: skip
        stats.keys += 1
    return stats


def _refresh_key(
    session: Session,
    server_id: int,
    key: str,
    since: int,
    new_runs: Sequence[StoredRun],
    prediction_config: PredictionConfig,
    pool: Mapping[str, Sequence[float]],
    fpool: Sequence[float],
    model: classaware.ClassAware | None,
    shares: Callable[[], amdahl.Share | None] = lambda: None,
    elastic: Callable[[], Any] = lambda: None,
) -> int:
    import numpy as np

    runs = stored_runs(session, server_id, key, since)
    redo = [r.pk for r in runs if r.point is None and r.start >= since]
    for j in range(0, len(redo), 1000):
        session.execute(
            delete(RunPrediction).where(RunPrediction.application_id.in_(redo[j : j + 1000]))
        )
    runs += new_runs
    runs.sort(key=lambda r: (r.start, r.pk))
    if not runs:
        session.execute(
            delete(RecurringForecast).where(
                RecurringForecast.server_id == server_id, RecurringForecast.key == key
            )
        )
        return 0
    X = np.array([r.vector for r in runs], dtype=float)
    y = np.array([float(r.duration or 0) for r in runs])
    ok = np.array([r.good for r in runs], dtype=bool)
    t = np.array([float(r.start) for r in runs])
    for r in runs:
        r.vector = []  # in X now
    loader = FeatureLoader(session, runs, since)
    points: list[PredictedRun | None] = []
    reach = Reach(runs, points)
    rows = PredictionRows(session)
    at = now_ms()
    todo = [i for i, r in enumerate(runs) if r.start >= since or r.features is not None]
    class_pred = model.predict(X[todo]) if model is not None and todo else None
    extras = dict(zip(todo, class_pred, strict=True)) if class_pred is not None else {}
    # Each computed run against the latest successful run before it (its findings, one query).
    previous_good: dict[int, StoredRun | None] = {}
    latest: StoredRun | None = None
    for i, r in enumerate(runs):
        previous_good[i] = latest
        latest = r if r.good else latest
    found = findings_of(
        session,
        [pk for i in todo for pk in (runs[i].pk, getattr(previous_good[i], "pk", None)) if pk],
    )
    for i, r in enumerate(runs):
        if r.start < since and r.features is None:
            points.append(r.point)
            reach.passed(i)
            continue
        extra = {"class_gbdt": float(extras[i])} if i in extras else None
        class_train = None
        anchor = rolling.anchor_runs(ok, i) if extra is not None else None
        if anchor is not None and model is not None:
            class_train = list(model.predict(X[anchor]))  # a new key's few runs anchor it
        p = rolling.predict_run(
            X,
            y,
            ok,
            t,
            i,
            points,
            prediction_config.level,
            pool,
            fpool,
            extra,
            prediction_config.min_history,
            class_train,
            shares() if candidates.OPTIONS.amdahl and ok[:i].sum() < amdahl.FIT_RUNS else None,
            elastic if candidates.OPTIONS.elasticity else None,
        )
        points.append(p)
        f = rolling.forecast_interval(p, points, y, ok, i, prediction_config.level, fpool)
        v, excess = verdict.verdict(
            r.duration,
            p.low,
            p.high,
            p.expected,
            int(ok[:i].sum()),
            prediction_config.min_history,
            prediction_config.margin,
        )
        loader.load(i)
        assert r.features is not None
        earlier = earlier_features(session, runs, i)
        before = previous_good[i]
        before_found = None if before is None else found.get(before.pk, set())
        changes = {
            "against": None
            if before is None
            else {"application_id": before.pk, "runs": len(earlier)},
            "items": what_changed(r.features, earlier)
            + finding_changes(found.get(r.pk, set()), before_found),
        }
        causes: list[str] = []
        if v == "regression":
            causes = verdict.causes(r.features, earlier)
            if before_found is not None:
                causes += [
                    f"new finding: {h}" for h in sorted(found.get(r.pk, set()) - before_found)
                ]
            causes += plan_changes(session, r.pk, [q.pk for q in runs[:i] if q.good][-5:])
        rows.add(
            dict(
                application_id=r.pk,
                server_id=server_id,
                key=key,
                start_time_ms=r.start,
                duration_ms=r.duration,
                succeeded=r.good,
                fetched_at_ms=r.fetched,
                features=r.features.to_json(),
                vector=X[i].tolist(),
                candidates=_clean(p.predictions),
                forecasts={**_clean(p.forecasts), "_model": p.forecast_model},
                forecast_ms=_num(f[0]) if f else None,
                expected_ms=_num(p.expected),
                low_ms=_num(p.low),
                high_ms=_num(p.high),
                level=prediction_config.level,
                model=p.model or "",
                n_train=p.n_train,
                verdict=v,
                regime=p.regime.kind,
                regime_ratio=_num(p.regime.stored_ratio),
                regime_feature=p.regime.feature or None,
                difficulty=float(p.difficulty),
                excess_pct=_num(excess),
                causes=causes,
                changes=changes,
                computed_at_ms=at,
            )
        )
        reach.passed(i)
    rows.flush()  # before the forecast counts the key's rows
    basis = rolling.next_basis(
        X, y, ok, points, prediction_config.level, pool, prediction_config.min_history
    )
    _store_forecast(
        session,
        server_id,
        key,
        X,
        y,
        ok,
        t,
        points,
        prediction_config,
        fpool,
        len(runs),
        since,
        basis,
    )
    return rows.written


def _as_stored(r: RunRow) -> StoredRun:
    return StoredRun(
        r.id,
        r.start_time_ms,
        r.duration_ms,
        r.succeeded,
        r.fetched_at_ms,
        r.features.vector(),
    )


def _store_forecast(
    session: Session,
    server_id: int,
    key: str,
    X: Any,
    y: Any,
    ok: Any,
    t: Any,
    points: list[PredictedRun | None],
    prediction_config: PredictionConfig,
    fpool: Sequence[float],
    nstored_runs: int,
    since: int,
    basis: dict[str, Any] | None = None,
) -> None:
    """The forecast of the run after the last one, stored for the key (with ``basis``: what it
    needs to answer for a next run of another size, see advisor.predict.nextrun)."""
    fc = rolling.next_forecast(X, y, ok, t, points, prediction_config.level, fpool)
    total = nstored_runs
    if since >= 0:  # the stored slice may not start at the key's first run
        total = (
            session.scalar(
                select(func.count()).where(
                    RunPrediction.server_id == server_id, RunPrediction.key == key
                )
            )
            or nstored_runs
        )
    idx = ok.nonzero()[0]
    next_start = None
    if len(idx) > 1:
        gaps = sorted(float(g) for g in (t[idx][1:] - t[idx][:-1]))
        next_start = int(t[-1] + gaps[len(gaps) // 2])
    session.execute(
        delete(RecurringForecast).where(
            RecurringForecast.server_id == server_id, RecurringForecast.key == key
        )
    )
    session.add(
        RecurringForecast(
            server_id=server_id,
            key=key,
            n_runs=total,
            expected_ms=_num(fc[0]) if fc else None,
            low_ms=_num(fc[1]) if fc else None,
            high_ms=_num(fc[2]) if fc else None,
            level=prediction_config.level,
            model=fc[3] if fc else "",
            next_start_ms=next_start,
            basis=basis,
            computed_at_ms=now_ms(),
        )
    )


def _num(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def _clean(d: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in d.items() if v is not None and math.isfinite(v)}


def _shrunk_keys(session: Session, server_id: int) -> list[str]:
    """Keys with fewer stored predictions than their forecast counted (a run was deleted).

    Two totals first (one query); the per-key counts only when they differ (stale rows of re-fetched runs
    are still stored at this point, so a re-fetch alone does not trigger it).
    """
    totals = session.execute(
        select(
            select(func.count()).where(RunPrediction.server_id == server_id).scalar_subquery(),
            select(func.coalesce(func.sum(RecurringForecast.n_runs), 0))
            .where(RecurringForecast.server_id == server_id)
            .scalar_subquery(),
        )
    ).one()
    stored, counted = int(totals[0] or 0), int(totals[1] or 0)
    if stored >= counted:
        return []
    counts = dict(
        session.execute(
            select(RunPrediction.key, func.count())
            .where(RunPrediction.server_id == server_id)
            .group_by(RunPrediction.key)
        ).all()
    )
    return [
        key
        for key, n in session.execute(
            select(RecurringForecast.key, RecurringForecast.n_runs).where(
                RecurringForecast.server_id == server_id
            )
        ).all()
        if counts.get(key, 0) < n
    ]
