"""What-if and sizing answers (the JSON shapes of the API, also used by the CLI and pages).

Reads stored runs and the stored calibration; simulates on request (computation from stored
data, no fitting). What a request may ask is bounded by the runs it rests on
(:class:`~sparkscope.advisor.whatif.limits.Limits`: LimitExceeded names the parameter beyond).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from sparkscope.advisor.predict.features import recurring_key
from sparkscope.advisor.whatif.combine import SizeEstimate, nearest, predict_many
from sparkscope.advisor.whatif.limits import MAX_WORK_CELLS, Limits, check_budget
from sparkscope.advisor.whatif.simulate import build_plan, work_cells
from sparkscope.advisor.whatif.sizing import Prices, costs, default_cores, default_sizes, recommend
from sparkscope.config.loader import PriceConfig
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.prediction.runs import key_names
from sparkscope.whatif.calibration import history_runs, load_run, stored_calibration
from sparkscope.whatif.inputs import RunFacts, WhatIfUnavailable


def prices_of(price_config: PriceConfig | None) -> Prices:
    if price_config is None:
        return Prices()
    return Prices(
        core_hour=price_config.core_hour,
        gb_hour=price_config.gb_hour,
        currency=price_config.currency,
    )


def _point_json(p: SizeEstimate, facts: RunFacts, prices: Prices) -> dict[str, Any]:
    core_hours, _gb_hours, money = costs(
        p.predicted_ms,
        p.slot_ms,
        p.cores,
        facts.executor_gb,
        facts.driver_cores,
        facts.driver_gb,
        prices,
    )
    return {
        "executors": p.executors,
        "cores": p.cores,
        "predicted_ms": round(p.predicted_ms),
        "low_ms": round(p.low_ms),
        "high_ms": round(p.high_ms),
        "core_hours": round(core_hours, 6),
        "cost": None if money is None else round(money, 6),
    }


def app_whatif(
    session: Session,
    app: Application,
    executors: Sequence[int],
    cores: int | None = None,
    input_scale: float | None = None,
    prices: Prices | None = None,
    patterns: Sequence[str] = (),
) -> dict[str, Any]:
    """The what-if curve of one stored application (WhatIfUnavailable when data is missing);
    ``patterns``: predictions.key_patterns (the calibration is its recurring key's)."""
    prices = prices or Prices()
    run, facts = load_run(session, app)
    observed = (facts.max_executors or facts.executors) if facts.dynamic else facts.executors
    limits = Limits.of([observed * facts.cores], [facts.input_bytes], "this run")
    limits.check_sizes(executors, [cores or facts.cores])
    base_input = float(facts.input_bytes) or None
    if input_scale and not base_input:
        raise WhatIfUnavailable("the run read no input bytes, so input_scale cannot apply")
    target_input = base_input * input_scale if (base_input and input_scale) else None
    if target_input is not None:
        limits.check_input("input_scale", target_input)
    plan = build_plan(run)
    scale = target_input / base_input if (target_input and base_input) else 1.0
    cells = work_cells(plan, list(executors), cores, scale)
    limits.check_work(cells, len(executors), "input_scale" if scale > 1 else None)
    cal = stored_calibration(session, app.server_id, recurring_key(app.name, patterns))
    predicted = predict_many(plan, cal, executors, cores, target_input, base_input)
    points = [_point_json(p, facts, prices) for p in predicted]
    # Start-up grows with the executor count, so the floor is the lowest over the sizes asked.
    floor = min(p.floor_ms for p in predicted)
    observed_executors = facts.executors
    if facts.dynamic:
        observed_executors = facts.max_executors or facts.executors
    return {
        "app_id": app.app_id,
        "observed": {
            "executors": observed_executors,
            "cores": facts.cores,
            "duration_ms": facts.duration_ms,
        },
        "points": points,
        "floor_ms": round(floor),
        "model": cal.describe()
        + ("; dynamic allocation: executors = maxExecutors" if facts.dynamic else ""),
    }


def _advise_points(
    runs: Sequence[dict[str, Any]],
    cal: Any,
    seen: Sequence[int],
    considered: Sequence[int],
    sizes: Sequence[int],
    want_input: float,
    limits: Limits,
    asked: bool,
) -> list[tuple[int, int, dict[str, Any], Any, float]]:
    """(cores, executors, base run, model, input scale) of every point of a sizing. Asked-for
    sizes are within the limits (checked before); default ones are kept within them, the curve
    thinned out while its simulation would be more than one request may do."""

    def points(counts: Sequence[int]) -> list[tuple[int, int, dict[str, Any], Any, float]]:
        out = []
        for c in considered:
            for n in counts if asked else limits.allowed(counts, c):
                if c in seen:
                    same = [r for r in runs if r["cores"] == c]
                    base, model = same[nearest(same, n * c, want_input)], cal
                else:
                    base, model = runs[nearest(runs, n * c, want_input)], cal.simulation_only()
                base_input = float(base["input_bytes"] or 0)
                scale = want_input / base_input if want_input and base_input else 1.0
                out.append((c, n, base, model, scale))
        return out

    todo = points(sizes)
    while not asked and len(sizes) > 1 and _cells(todo) > MAX_WORK_CELLS:
        sizes = sizes[::2]
        todo = points(sizes)
    return todo


def _cells(todo: Sequence[tuple[int, int, dict[str, Any], Any, float]]) -> int:
    return sum(work_cells(base["plan"], [n], c, scale) for c, n, base, _m, scale in todo)


class NoHistory(LookupError):
    """No usable run of that name."""


def advise(
    session: Session,
    name: str,
    deadline_ms: int,
    input_bytes: float | None = None,
    executors: Sequence[int] | None = None,
    server: str | None = None,
    prices: Prices | None = None,
    core_counts: Sequence[int] | None = None,
    patterns: Sequence[str] = (),
) -> dict[str, Any]:
    """The cheapest size (executors x cores per executor) meeting a deadline for a recurring
    application: ``name`` is one of its names or its recurring key (``patterns``:
    predictions.key_patterns). ``curve`` holds the sizes at the latest run's core count,
    ``other_cores`` those at the other counts considered (``core_counts``, default
    `default_cores`)."""
    prices = prices or Prices()
    key = recurring_key(name, patterns)
    by_server = key_names(session, key, patterns)
    server_ids = sorted(by_server)
    if server is not None:
        wanted = session.scalar(select(HistoryServer.id).where(HistoryServer.name == server))
        server_ids = [s for s in server_ids if s == wanted]
    if not server_ids:
        raise NoHistory(f"no stored run named {name!r}" + (f" on {server!r}" if server else ""))
    if len(server_ids) > 1:
        raise NoHistory(f"{name!r} ran on several servers: add server=")
    server_id = server_ids[0]
    runs = history_runs(session, server_id, key, names=by_server[server_id])
    if not runs:
        raise WhatIfUnavailable(
            f"no run of {name!r} can be simulated (running, failed stages or no distributions)"
        )
    limits = Limits.of(
        [r["executors"] * r["cores"] for r in runs],
        [r["input_bytes"] for r in runs],
        f"the runs of {name!r}",
    )
    if input_bytes:
        limits.check_input("input_bytes", float(input_bytes))
    cal = stored_calibration(session, server_id, key)
    cores = runs[-1]["cores"]
    seen = sorted({int(r["cores"]) for r in runs})
    if core_counts:
        limits.check_sizes([1], core_counts)
    if executors:
        limits.check_sizes(executors, [max(core_counts or [cores])])
    want_input = float(input_bytes) if input_bytes else float(runs[-1]["input_bytes"] or 0)
    sizes = list(executors or default_sizes([r["executors"] for r in runs], 1))
    # Other core counts rest on the simulation alone; under dynamic allocation the executors'
    # cores come from the observed timeline, so only the observed counts are considered.
    dynamic = any(r["facts"].dynamic for r in runs)
    considered = sorted(set(core_counts or ([] if dynamic else default_cores(seen))) | {cores})
    if dynamic:
        considered = [c for c in considered if c in seen]
    todo = _advise_points(runs, cal, seen, considered, sizes, want_input, limits, bool(executors))
    limits.check_work(_cells(todo), len(todo), "input_bytes" if input_bytes else None)
    # One simulation walk per core count and base run, over its executor counts.
    groups: dict[tuple[int, int], list[int]] = {}
    for c, n, base, _model, _scale in todo:
        groups.setdefault((c, base["pk"]), []).append(n)
    bases = {(c, base["pk"]): (base, model) for c, _n, base, model, _s in todo}
    predicted: dict[tuple[int, int, int], SizeEstimate] = {}
    for (c, pk), counts in groups.items():
        check_budget()
        base, model = bases[(c, pk)]
        for n, p in zip(
            counts,
            predict_many(
                base["plan"],
                model,
                counts,
                c,
                want_input or None,
                float(base["input_bytes"]) or None,
            ),
            strict=True,
        ):
            predicted[(c, pk, n)] = p
    points = []
    other = []
    floors = []
    for c, n, base, _model, _scale in todo:
        p = predicted[(c, base["pk"], n)]
        point = _point_json(p, base["facts"], prices)
        point["basis"] = "history" if c in seen and cal.n_train > 1 else "simulation"
        if c == cores:
            floors.append(p.floor_ms)
            points.append(point)
        else:
            other.append(point)
    floor = min(floors)
    best = recommend(points + other, deadline_ms)
    recommended = None
    if best is not None:
        recommended = {
            k: best[k]
            for k in (
                "executors",
                "cores",
                "predicted_ms",
                "high_ms",
                "core_hours",
                "cost",
                "basis",
            )
        }
    return {
        "name": name,
        "deadline_ms": deadline_ms,
        "recommended": recommended,
        "floor_ms": round(floor),
        "curve": points,
        "other_cores": other,
        "cores_seen": seen,
        "cores_considered": considered,
        "model": cal.describe(),
        "n_train": len(runs),
    }
