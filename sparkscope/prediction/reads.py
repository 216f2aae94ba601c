"""Read side of predictions for pages and the API: stored rows only, nothing is fitted here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, load_only

from sparkscope.advisor.predict.regimes import Regime
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RecurringForecast, RunPrediction
from sparkscope.prediction.forecasts import ASSUMES
from sparkscope.present.charts import plotly_date
from sparkscope.present.display import fmt_duration_ms as d

PREDICTION_FIELDS = (
    "expected_ms",
    "low_ms",
    "high_ms",
    "level",
    "model",
    "n_train",
    "verdict",
    "excess_pct",
    "causes",
)


#: What pages show of a run's prediction: not its features nor every candidate's value.
_SHOWN = (
    RunPrediction.server_id,
    RunPrediction.key,
    RunPrediction.start_time_ms,
    RunPrediction.duration_ms,
    RunPrediction.expected_ms,
    RunPrediction.low_ms,
    RunPrediction.high_ms,
    RunPrediction.level,
    RunPrediction.model,
    RunPrediction.n_train,
    RunPrediction.verdict,
    RunPrediction.excess_pct,
    RunPrediction.causes,
    RunPrediction.regime,
    RunPrediction.regime_ratio,
    RunPrediction.regime_feature,
    RunPrediction.changes,
)


def prediction_json(p: RunPrediction | None) -> dict[str, Any] | None:
    """The API's ``prediction`` object of a run."""
    if p is None:
        return None
    out = {f: getattr(p, f) for f in PREDICTION_FIELDS}
    out["causes"] = list(p.causes or [])
    regime = _regime(p)
    out["regime"] = {
        "kind": regime.kind,
        "ratio": p.regime_ratio,
        "feature": regime.feature or None,
        "text": regime.describe(),
    }
    out["changes"] = p.changes
    return out


def _regime(p: RunPrediction) -> Regime:
    return Regime.stored(p.regime, p.regime_ratio, p.regime_feature)


def forecast_json(f: RecurringForecast | None) -> dict[str, Any] | None:
    """The API's ``forecast`` object of a key."""
    if f is None:
        return None
    return {
        "expected_ms": f.expected_ms,
        "low_ms": f.low_ms,
        "high_ms": f.high_ms,
        "level": f.level,
        "model": f.model,
        "assumes": ASSUMES.get(f.model, ""),
    }


def app_prediction(session: Session, application_pk: int) -> RunPrediction | None:
    """A run's prediction as its page and the API show it (not its stored features nor every
    candidate's value)."""
    return session.get(RunPrediction, application_pk, options=[load_only(*_SHOWN, raiseload=True)])


def app_predictions(session: Session, application_pks: list[int]) -> dict[int, RunPrediction]:
    """Several runs' predictions (as :func:`app_prediction`) in one read, by application id."""
    rows = session.scalars(
        select(RunPrediction)
        .where(RunPrediction.application_id.in_(application_pks))
        .options(load_only(RunPrediction.application_id, *_SHOWN, raiseload=True))
    )
    return {p.application_id: p for p in rows}


def prediction_line(p: RunPrediction | None) -> str | None:
    """One line for the application page, e.g. ``expected 12 s (10–14 s, 80%; extrapolated:
    input 1.7x the largest seen); took 19 s: +58% — regression: ...``."""
    if p is None:
        return None
    waiting = f"no verdict yet: {p.n_train} earlier successful run(s) of this application"
    if p.expected_ms is None:
        return waiting
    spread = f"{d(p.low_ms)}–{d(p.high_ms)}, {p.level:.0%}"
    if p.low_ms is None or p.high_ms is None:  # one earlier run and nothing else on the server
        spread = "no interval yet: no spread seen to read one from"
    text = (
        f"expected {d(p.expected_ms)} ({spread}; {_regime(p).describe()}); took {d(p.duration_ms)}"
    )
    if p.verdict == "insufficient_history":
        return f"{text} — {waiting}"
    if p.excess_pct is not None:
        text += f": {p.excess_pct:+.0f}%"
    text += f" — {p.verdict}"
    if p.causes:
        text += ": " + "; ".join(p.causes)
    return text


@dataclass(frozen=True)
class Changes:
    """What changed in a run against the runs it was predicted from, as its page shows it."""

    items: list[dict[str, Any]]
    #: The latest successful earlier run it is compared with: (app id, attempt id, server) or None.
    against: tuple[str, str, str] | None
    #: How many earlier runs the input was compared with (their median).
    runs: int


def run_changes(session: Session, p: RunPrediction | None) -> Changes | None:
    """The stored changes of a run, with the run they are against (one indexed read); None when
    the run has no prediction or its changes were not computed yet."""
    if p is None or not isinstance(p.changes, dict):
        return None
    against = p.changes.get("against") or {}
    ref = None
    if isinstance(against, dict) and against.get("application_id") is not None:
        row = session.execute(
            select(Application.app_id, Application.attempt_id, HistoryServer.name)
            .join(HistoryServer, HistoryServer.id == Application.server_id)
            .where(Application.id == int(against["application_id"]))
        ).first()
        if row is not None:
            ref = (row.app_id, row.attempt_id or "", row.name)
    items = [i for i in p.changes.get("items") or () if isinstance(i, dict)]
    return Changes(items=items, against=ref, runs=int(against.get("runs") or 0))


def history_predictions(
    session: Session, name: str, server: str | None = None
) -> tuple[dict[tuple[str, str, str], RunPrediction], RecurringForecast | None]:
    """Predictions of every run with this exact name by (server, app id, attempt id), and the
    forecast of their key (the key of the latest run)."""
    q = (
        select(RunPrediction, HistoryServer.name, Application.app_id, Application.attempt_id)
        .options(load_only(*_SHOWN, raiseload=True))
        .join(Application, Application.id == RunPrediction.application_id)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.name == name)
        .order_by(RunPrediction.start_time_ms)
    )
    if server:
        q = q.where(HistoryServer.name == server)
    out: dict[tuple[str, str, str], RunPrediction] = {}
    last: RunPrediction | None = None
    for p, srv, app_id, attempt in session.execute(q):
        out[(srv, app_id, attempt or "")] = p
        last = p
    fc = None
    if last is not None:
        fc = session.get(RecurringForecast, (last.server_id, last.key))
    return out, fc


@dataclass(frozen=True)
class Regression:
    app_id: str
    attempt_id: str
    server: str
    name: str
    start_time_ms: int
    duration_ms: int | None
    expected_ms: float | None
    excess_pct: float | None
    causes: list[str]
    #: The stored change items (sparkscope.advisor.predict.changes), for when no cause is named.
    changes: list[dict[str, Any]] = field(default_factory=list)


def recent_regressions(session: Session, since_ms: int, limit: int = 20) -> list[Regression]:
    """Runs judged regressions that started since ``since_ms``, newest first."""
    q = (
        select(RunPrediction, Application.app_id, Application.attempt_id, Application.name)
        .options(load_only(*_SHOWN, raiseload=True))
        .add_columns(HistoryServer.name.label("server"))
        .join(Application, Application.id == RunPrediction.application_id)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(RunPrediction.verdict == "regression", RunPrediction.start_time_ms >= since_ms)
        .order_by(RunPrediction.start_time_ms.desc())
        .limit(limit)
    )
    return [
        Regression(
            app_id=app_id,
            attempt_id=attempt or "",
            server=srv,
            name=name,
            start_time_ms=p.start_time_ms,
            duration_ms=p.duration_ms,
            expected_ms=p.expected_ms,
            excess_pct=p.excess_pct,
            causes=list(p.causes or []),
            changes=list((p.changes or {}).get("items") or [])
            if isinstance(p.changes, dict)
            else [],
        )
        for p, app_id, attempt, name, srv in session.execute(q)
    ]


def band_figure(
    runs: list[tuple[RunPrediction, str]], forecast: RecurringForecast | None
) -> dict[str, Any] | None:
    """Duration (s) per run with the expected value, its interval as a band, regressions marked
    and the next-run forecast drawn after the last run. ``runs``: (prediction, run URL)."""
    shown = [(p, u) for p, u in runs if p.expected_ms is not None]
    if not shown and forecast is None:
        return None
    x = [plotly_date(p.start_time_ms) for p, _u in shown]
    s = 1000.0
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "x": x,
            "y": [p.high_ms / s if p.high_ms else None for p, _u in shown],
            "line": {"width": 0},
            "hoverinfo": "skip",
            "showlegend": False,
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "interval",
            "x": x,
            "y": [p.low_ms / s if p.low_ms else None for p, _u in shown],
            "fill": "tonexty",
            "fillcolor": "rgba(33,150,243,0.18)",
            "line": {"width": 0},
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "expected",
            "x": x,
            "y": [(p.expected_ms or 0) / s for p, _u in shown],
            "line": {"color": "#1e88e5", "dash": "dot"},
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": "took",
            "x": [plotly_date(p.start_time_ms) for p, _u in runs],
            "y": [(p.duration_ms or 0) / s for p, _u in runs],
            "customdata": [[u, p.verdict] for p, u in runs],
            "hovertemplate": "%{y:.1f} s (%{customdata[1]})<extra></extra>",
            "marker": {"color": "#455a64", "size": 8},
        },
    ]
    bad = [(p, u) for p, u in runs if p.verdict == "regression"]
    if bad:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "regression",
                "x": [plotly_date(p.start_time_ms) for p, _u in bad],
                "y": [(p.duration_ms or 0) / s for p, _u in bad],
                "customdata": [[u] for _p, u in bad],
                "marker": {"color": "#c62828", "size": 14, "symbol": "x"},
            }
        )
    if forecast is not None and forecast.expected_ms and forecast.next_start_ms:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "next run (forecast)",
                "x": [plotly_date(forecast.next_start_ms)],
                "y": [forecast.expected_ms / s],
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [
                        ((forecast.high_ms or forecast.expected_ms) - forecast.expected_ms) / s
                    ],
                    "arrayminus": [
                        (forecast.expected_ms - (forecast.low_ms or forecast.expected_ms)) / s
                    ],
                },
                "marker": {"color": "#6a1b9a", "size": 11, "symbol": "diamond"},
            }
        )
    layout = {
        "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
        "height": 380,
        "xaxis": {"title": {"text": "start (UTC)"}, "type": "date"},
        "yaxis": {"title": {"text": "duration (s)"}, "rangemode": "tozero"},
        "hovermode": "closest",
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
    }
    return {"data": data, "layout": layout}


def history_band(session: Session, name: str, server: str | None, link: Any) -> dict[str, Any]:
    """What the history page's forecast partial shows; ``link(app_id, server, attempt)`` -> URL."""
    preds, fc = history_predictions(session, name, server)
    runs = [(p, link(app_id, srv, attempt)) for (srv, app_id, attempt), p in preds.items()]
    regressions = sum(1 for p, _u in runs if p.verdict == "regression")
    return {
        "figure": band_figure(runs, fc),
        "forecast": fc,
        "assumes": ASSUMES.get(fc.model, "") if fc is not None else "",
        "regressions": regressions,
    }


def regressions_panel(session: Session, now: int, limit: int = 20) -> dict[str, list[Regression]]:
    """The dashboard's regressions of the last day and of the last week."""
    week = recent_regressions(session, now - 7 * 86_400_000, limit)
    return {"day": [r for r in week if r.start_time_ms >= now - 86_400_000], "week": week}
