"""What-if glue between the database and the pure numerics in `sparkscope.advisor`.

`load_run` turns one stored application into an `AppRun` (or says what is missing);
`history_points` lists a recurring application's runs; `refit_models` fits and stores the
history-calibrated model of every name touched by a fetch (never on a page load).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Table, delete, select
from sqlalchemy.orm import Session

from sparkscope import bulk
from sparkscope.advisor.predict.features import recurring_key
from sparkscope.advisor.whatif.limits import check_budget
from sparkscope.advisor.whatif.stageplan import AppRun
from sparkscope.db import now_ms
from sparkscope.models.application import (
    Application,
    EnvironmentProperty,
    Executor,
    Stage,
    StageTaskDistribution,
    Task,
)
from sparkscope.models.whatif import WhatIfCluster, WhatIfInput, WhatIfModel
from sparkscope.prediction.runs import names_of_keys
from sparkscope.whatif import inputs as wi
from sparkscope.whatif.inputs import RunFacts, WhatIfUnavailable

log = logging.getLogger(__name__)


def gather(session: Session, app: Application) -> dict[str, Any]:
    """The what-if input of a stored application read from its tables (fetches made before the
    encoded input existed)."""
    stages = [
        tuple(r)
        for r in session.execute(
            select(
                Stage.stage_id,
                Stage.attempt_id,
                Stage.status,
                Stage.num_tasks,
                Stage.executor_run_time_ms,
                Stage.submission_time_ms,
                Stage.completion_time_ms,
                Stage.input_bytes,
            ).where(Stage.application_id == app.id)
        )
    ]
    dists = {
        (sid, attempt): wi._dist(q, m)
        for sid, attempt, q, m in session.execute(
            select(
                StageTaskDistribution.stage_id,
                StageTaskDistribution.attempt_id,
                StageTaskDistribution.quantiles,
                StageTaskDistribution.metrics,
            ).where(StageTaskDistribution.application_id == app.id)
        )
    }
    slowest: dict[tuple[int, int], list[float]] = {}
    for sid, attempt, run_ms in session.execute(
        select(Task.stage_id, Task.stage_attempt_id, Task.executor_run_time_ms).where(
            Task.application_id == app.id,
            Task.kept_because.in_(("slowest", "both")),
            Task.status == "SUCCESS",
        )
    ):
        slowest.setdefault((sid, attempt), []).append(float(run_ms or 0))
    props = {
        n: v or ""
        for n, v in session.execute(
            select(EnvironmentProperty.name, EnvironmentProperty.value).where(
                EnvironmentProperty.application_id == app.id,
                EnvironmentProperty.section == "spark",
            )
        )
        if n.startswith(wi.PROP_PREFIXES)
    }
    executors = [
        (bool(d), int(c), a, r)
        for d, c, a, r in session.execute(
            select(
                Executor.is_driver,
                Executor.total_cores,
                Executor.add_time_ms,
                Executor.remove_time_ms,
            ).where(Executor.application_id == app.id)
        )
    ]
    return {
        "completed": bool(app.completed),
        "start": app.start_time_ms,
        "end": app.end_time_ms,
        "duration": int(app.duration_ms or 0),
        "input_bytes": int(app.input_bytes or 0),
        "props": props,
        "executors": executors,
        "stages": stages,
        "dists": dists,
        "slowest": {k: tuple(v) for k, v in slowest.items()},
    }


def load_run(session: Session, app: Application) -> tuple[AppRun, RunFacts]:
    """The stored run as simulation input (the encoded input stored at fetch time, else the
    tables); WhatIfUnavailable names what is missing."""
    row = session.execute(
        select(WhatIfInput.format, WhatIfInput.data).where(WhatIfInput.application_id == app.id)
    ).first()
    return _run_of(session, app, None if row is None else (row[0], row[1]))


def _run_of(
    session: Session, app: Application, stored: tuple[str, bytes] | None
) -> tuple[AppRun, RunFacts]:
    """:func:`load_run` from the stored (format, data) already read, if any."""
    data = wi.decode(stored[1]) if stored and stored[0] == wi.FORMAT else gather(session, app)
    return wi.build(data)


def encode_input(bundle: Any, spark_properties: Mapping[str, str]) -> bytes:
    """The encoded what-if input of a fetched application, from its rows in memory and its
    ``spark`` properties by name (see :func:`wi.from_bundle`)."""
    return wi.encode(wi.from_bundle(bundle, spark_properties))


def store_inputs(session: Session, encoded: Sequence[tuple[int, bytes]]) -> None:
    """Write the what-if inputs (application pk, :func:`encode_input`) of applications just
    loaded (fetch time; the load removed the inputs of the versions they replaced), in one bulk
    statement."""
    groups = [(pk, [{"format": wi.FORMAT, "data": blob}]) for pk, blob in encoded]
    bulk.write(session.connection(), _INPUTS, groups)


_INPUTS = bulk.layout(cast(Table, WhatIfInput.__table__))


# ------------------------------------------------------------------------------------- history

#: Runs of one recurring key a model is fitted on (the newest).
MAX_HISTORY_RUNS = 40


def history_runs(
    session: Session,
    server_id: int,
    key: str,
    exclude_pk: int | None = None,
    patterns: Sequence[str] = (),
    names: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Usable runs of a recurring key on a server (the predictions' key: the names that
    ``recurring_key(name, patterns)`` maps to ``key``; completed, no failed stage, with
    distributions), oldest first, each with its size, input, duration, work, start-up and
    simulation plan. ``names``: the key's names when the caller has them."""
    from sparkscope.advisor.whatif.simulate import build_plan

    if names is None:
        names = names_of_keys(session, [key], patterns).get(key, [])
    if not names:
        return []
    apps = session.scalars(
        select(Application)
        .where(
            Application.server_id == server_id,
            Application.name.in_(names),
            Application.completed.is_(True),
        )
        .order_by(Application.start_time_ms.desc())
        .limit(MAX_HISTORY_RUNS)
    ).all()
    usable = [a for a in reversed(apps) if a.id != exclude_pk and a.duration_ms]
    # The stored inputs of every run in one query, not one per run (this runs on a GET).
    stored = {
        pk: (fmt, data)
        for pk, fmt, data in session.execute(
            select(WhatIfInput.application_id, WhatIfInput.format, WhatIfInput.data).where(
                WhatIfInput.application_id.in_([a.id for a in usable])
            )
        )
    }
    out = []
    for a in usable:
        check_budget()  # this runs on a GET: under the request's time budget, if any
        try:
            run, f = _run_of(session, a, stored.get(a.id))
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


def key_histories(
    session: Session, patterns: Sequence[str] = (), keys: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """The usable runs (as :func:`history_runs`) of every recurring key of every server, or of
    the keys (or names) given, each with ``name``: (server id, key), the group the what-if
    evaluation predicts within."""
    wanted = set(keys)
    groups: dict[tuple[int, str], list[str]] = {}
    for server_id, name in session.execute(
        select(Application.server_id, Application.name).distinct()
    ):
        key = recurring_key(name, patterns)
        if not wanted or key in wanted or name in wanted:
            groups.setdefault((server_id, key), []).append(name)
    runs: list[dict[str, Any]] = []
    for (server_id, key), names in sorted(groups.items()):
        runs += [
            {**r, "name": (server_id, key)}
            for r in history_runs(session, server_id, key, patterns=patterns, names=names)
        ]
    return runs


def refit_models(
    session: Session, server_id: int, names: Iterable[str], patterns: Sequence[str] = ()
) -> int:
    """Fit and store the calibration of the recurring key of each name (at fetch/analyze time,
    never on a page); ``whatif_model.name`` holds the key."""
    return refit_keys(session, server_id, {recurring_key(n, patterns) for n in names}, patterns)


def refit_keys(
    session: Session, server_id: int, keys: Iterable[str], patterns: Sequence[str] = ()
) -> int:
    """Fit and store the calibration of each recurring key and then the server's prior; return
    how many keys have a model."""
    from sparkscope.advisor.whatif.combine import fit_calibration, prior_residuals
    from sparkscope.advisor.whatif.prior import fit_cluster_prior, key_overheads_terms

    count = 0
    keys = sorted(set(keys))
    groups = names_of_keys(session, keys, patterns)  # one scan of the names for every key
    terms = {name: t for (_, name), t in stored_prior_terms(session, server_id).items()}
    fresh: dict[str, tuple[float, ...]] = {}
    measurable: dict[str, list[dict[str, Any]]] = {}
    for key in keys:
        runs = history_runs(session, server_id, key, names=groups.get(key, []))
        session.execute(
            delete(WhatIfModel).where(WhatIfModel.server_id == server_id, WhatIfModel.name == key)
        )
        terms.pop(key, None)
        fresh[key] = ()
        if not runs:
            continue
        cal = fit_calibration(runs)
        contention, startup = key_overheads_terms(cal.overheads)
        terms[key] = (contention, startup)
        if contention is not None:
            measurable[key] = runs
        session.add(
            WhatIfModel(
                server_id=server_id,
                name=key,
                fitted_at_ms=now_ms(),
                n_train=len(runs),
                model=json.dumps(cal.to_dict()),
                contention=contention,
                startup_per_executor_ms=startup,
            )
        )
        count += 1
    # How the prior fitted without each key would have done on it (the prior's interval).
    for key, runs in measurable.items():
        prior = fit_cluster_prior([t for k, t in terms.items() if k != key])
        if prior is not None:
            fresh[key] = prior_residuals(runs, prior)
    _store_prior(session, server_id, list(terms.values()), fresh)
    return count


def stored_prior_terms(
    session: Session, server_id: int | None = None
) -> dict[tuple[int, str], tuple[Any, Any]]:
    """(server id, key) -> what its stored model says of contention and start-up
    (`key_overheads_terms`), of one server or all: the other keys' terms make a key's prior."""
    query = select(
        WhatIfModel.server_id,
        WhatIfModel.name,
        WhatIfModel.contention,
        WhatIfModel.startup_per_executor_ms,
    )
    if server_id is not None:
        query = query.where(WhatIfModel.server_id == server_id)
    return {(sid, name): (c, s) for sid, name, c, s in session.execute(query)}


def _store_prior(
    session: Session,
    server_id: int,
    terms: list[tuple[Any, Any]],
    fresh: dict[str, tuple[float, ...]],
) -> None:
    """Store the server's contention and start-up prior (`ClusterPrior`) fitted on the terms of
    every key, with its interval from the pool of the keys' prior residuals (``fresh``: those of
    the keys just refitted, empty for a key without); removed when no key's history covers
    several sizes."""
    from sparkscope.advisor.whatif.prior import fit_cluster_prior, pool_halfwidth, update_pool

    old = session.scalar(select(WhatIfCluster.model).where(WhatIfCluster.server_id == server_id))
    pool = update_pool(json.loads(old).get("pool") or {} if old else {}, fresh)
    prior = fit_cluster_prior(terms, pool_halfwidth(pool))
    session.execute(delete(WhatIfCluster).where(WhatIfCluster.server_id == server_id))
    if prior is not None:
        session.add(
            WhatIfCluster(
                server_id=server_id,
                fitted_at_ms=now_ms(),
                n_keys=prior.n_keys,
                model=json.dumps({**prior.to_dict(), "pool": pool}),
            )
        )


def stored_calibration(session: Session, server_id: int, key: str) -> Any:
    """The stored calibration of a recurring key, or an empty one (simulation as observed), with
    the server's stored contention and start-up prior for what the key's history cannot say."""
    from sparkscope.advisor.whatif.combine import Calibration
    from sparkscope.advisor.whatif.prior import ClusterPrior

    row = session.scalar(
        select(WhatIfModel.model).where(WhatIfModel.server_id == server_id, WhatIfModel.name == key)
    )
    cal = Calibration() if row is None else Calibration.from_dict(json.loads(row))
    prior = session.scalar(select(WhatIfCluster.model).where(WhatIfCluster.server_id == server_id))
    if prior is not None:
        cal.prior = ClusterPrior.from_dict(json.loads(prior))
    return cal
