"""Stored runs -> the rolling-origin backtest (sparkscope.advisor.predict.backtest), per key,
overall and per regime, and the forward-in-size split (sparkscope.advisor.predict.forward).

Run features come from the stored predictions when present, else are built from the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.advisor.predict.backtest import (
    KeyResult,
    Metrics,
    Run,
    band_metrics,
    metrics,
    regime_metrics,
    run_backtest,
    score,
    scored_runs,
)
from sparkscope.advisor.predict.features import padded, recurring_key
from sparkscope.advisor.predict.forward import ForwardRun, forward_split
from sparkscope.config.loader import PredictionConfig
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RunPrediction
from sparkscope.prediction.runs import load_runs, succeeded


@dataclass
class Figures:
    """What ``sparkscope backtest`` prints: the rolling origin per key, overall and per regime
    (and per distance band of the extrapolated runs), and the forward-in-size split."""

    per_key: dict[str, Metrics]
    overall: Metrics
    regimes: dict[str, Metrics]
    bands: dict[str, Metrics]
    forward: Metrics
    forward_bands: dict[str, Metrics]
    forward_keys: dict[str, Metrics]


def backtest_database(
    factory: sessionmaker[Session],
    prediction_config: PredictionConfig,
    names: Sequence[str] = (),
    min_history: int = 5,
) -> Figures:
    """The backtest's figures over the stored runs (of the keys ``names``, or every key).

    Each server is replayed on its own, as runs are predicted at fetch time: a run's interval
    borrows the residuals of its own server's other keys, and the class-aware model is fitted
    on its own server's runs (another server's applications change none of its figures)."""
    with factory() as session:
        by_server = _runs(session, prediction_config, names)
    results: dict[str, KeyResult] = {}
    forward: list[ForwardRun] = []
    for server_id in sorted(by_server):
        runs = by_server[server_id]
        results.update(
            run_backtest(runs, prediction_config.level, prediction_config.class_aware, min_history)
        )
        forward.extend(forward_split(runs, prediction_config.level, min_history))
    # In key order, so `backtest --json` prints the same document for the same runs.
    per_key = {
        k: metrics([results[k]], prediction_config.level, min_history) for k in sorted(results)
    }
    per_key = {k: m for k, m in per_key.items() if m.n}
    scored = [(float(f.run.duration_ms or 0), f.point, None) for f in forward]
    fkeys = {
        k: score(
            [s for s, f in zip(scored, forward, strict=True) if f.key == k], prediction_config.level
        )
        for k in sorted({f.key for f in forward})
    }
    return Figures(
        per_key=per_key,
        overall=metrics(results.values(), prediction_config.level, min_history),
        regimes=regime_metrics(results.values(), prediction_config.level, min_history),
        bands=band_metrics(scored_runs(results.values(), min_history), prediction_config.level),
        forward=score(scored, prediction_config.level),
        forward_bands=band_metrics(scored, prediction_config.level),
        forward_keys=fkeys,
    )


def _runs(
    session: Session, prediction_config: PredictionConfig, names: Sequence[str]
) -> dict[int, list[Run]]:
    """The runs of each server (its id: its runs)."""
    apps = session.execute(
        select(
            Application.id,
            Application.server_id,
            Application.name,
            Application.start_time_ms,
            Application.duration_ms,
            Application.completed,
            Application.num_failed_jobs,
        ).where(Application.start_time_ms.is_not(None))
    ).all()
    servers = dict(session.execute(select(HistoryServer.id, HistoryServer.name)).all())
    several = len({a.server_id for a in apps}) > 1
    keyed = []
    for a in apps:
        key = recurring_key(a.name, prediction_config.key_patterns)
        if names and key not in names and a.name not in names:
            continue
        # Keys are per server; with several servers the label says which.
        keyed.append((a, f"{servers.get(a.server_id, a.server_id)}: {key}" if several else key))
    ids = [a.id for a, _k in keyed]
    stored: dict[int, list[float]] = {}
    for i in range(0, len(ids), 5000):
        for pk, f in session.execute(
            select(RunPrediction.application_id, RunPrediction.vector).where(
                RunPrediction.application_id.in_(ids[i : i + 5000])
            )
        ):
            stored[pk] = padded(f or [])
    missing = [pk for pk in ids if pk not in stored]
    for r in load_runs(session, missing, numbers_only=True):
        stored[r.id] = r.features.vector()
    out: dict[int, list[Run]] = {}
    for a, key in keyed:
        out.setdefault(int(a.server_id), []).append(
            Run(
                key=key,
                start_ms=int(a.start_time_ms),
                duration_ms=float(a.duration_ms) if a.duration_ms else None,
                ok=succeeded(a._asdict()),
                vector=stored[a.id],
            )
        )
    return out
