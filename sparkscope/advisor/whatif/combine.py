"""One prediction from the simulation and the history-calibrated model, with its interval.

- The simulation replays a base run at the asked size; when the application has history, its
  task times are scaled by the contention and its start-up replaced by the start-up that history
  shows for that size (`calibrate.Overheads`).
- The history model (`calibrate.HistoryModel`, Ernest/OptEx form) predicts from size and input.
- Both are weighted by the inverse of their mean squared leave-one-out relative error over the
  application's runs, so the one that has predicted this application better counts more.
- The interval is split-conformal on the absolute combined leave-one-out relative residuals
  (rank ceil((n+1)·0.8) of n), widened to the bare simulation's residual spread when fewer than
  10 runs stand behind it; no history of its own: the server's prior and its interval (see
  `prior`); neither: no interval (the band collapses onto the prediction).
- Nothing is predicted below the floor: the longest chain of stages (each as long as its longest
  task) plus the driver-only time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkscope.advisor.whatif.calibrate import HistoryModel, Overheads, interval_halfwidth
from sparkscope.advisor.whatif.prior import MAX_BASES, ClusterPrior
from sparkscope.advisor.whatif.simulate import simulate_sizes
from sparkscope.advisor.whatif.stageplan import StagePlan


@dataclass
class Calibration:
    """What history adds to a simulation (stored per application name; fitted at fetch time)."""

    overheads: Overheads = field(default_factory=Overheads)
    history: HistoryModel | None = None
    sim_residuals: tuple[float, ...] = ()
    combined_residuals: tuple[float, ...] = ()
    n_train: int = 0
    #: Leave-one-out residuals of the bare simulation (no history terms): the band of sizes the
    #: history has not seen (another core count).
    bare_residuals: tuple[float, ...] = ()
    #: What the server's other applications show of contention and start-up (stored apart, per
    #: server): used where this application's own history cannot say.
    prior: ClusterPrior | None = None

    def task_scale(self, slots_to: float, slots_from: float) -> float:
        if self.overheads.work is None and self.prior is not None:
            return self.prior.task_scale(slots_to, slots_from)
        return self.overheads.task_scale(slots_to, slots_from)

    def startup_ms(self, executors: float, plan: StagePlan) -> float | None:
        if self.overheads.startup is None and self.prior is not None:
            return self.prior.startup_ms(executors, plan.startup_ms, plan.app.executors)
        return self.overheads.startup_ms(executors)

    @property
    def weights(self) -> tuple[float, float]:
        """(simulation, history) weights."""
        if self.history is None or not self.history.residuals:
            return 1.0, 0.0
        if not self.sim_residuals:
            return 0.0, 1.0
        mse_s = _mse(self.sim_residuals)
        mse_h = _mse(self.history.residuals)
        ws, wh = 1.0 / max(mse_s, 1e-6), 1.0 / max(mse_h, 1e-6)
        return ws / (ws + wh), wh / (ws + wh)

    def to_dict(self) -> dict[str, Any]:
        return {
            "overheads": self.overheads.to_dict(),
            "history": None if self.history is None else self.history.to_dict(),
            "sim_residuals": list(self.sim_residuals),
            "combined_residuals": list(self.combined_residuals),
            "n_train": self.n_train,
            "bare_residuals": list(self.bare_residuals),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Calibration:
        hist = d.get("history")
        return cls(
            overheads=Overheads.from_dict(d.get("overheads") or {}),
            history=None if hist is None else HistoryModel.from_dict(hist),
            sim_residuals=tuple(d.get("sim_residuals") or ()),
            combined_residuals=tuple(d.get("combined_residuals") or ()),
            n_train=int(d.get("n_train") or 0),
            bare_residuals=tuple(d.get("bare_residuals") or ()),
        )

    def simulation_only(self) -> Calibration:
        """The bare simulation with the band of its own out-of-sample residuals: for sizes the
        history has not seen (history-calibrated terms apply at the observed core count only)."""
        bare = self.bare_residuals
        return Calibration(
            sim_residuals=bare, bare_residuals=bare, n_train=self.n_train, prior=self.prior
        )

    def describe(self) -> str:
        if self.history is None and self.overheads.work is None:
            if self.prior is not None:
                band = (
                    f"interval from how that did on them, ±{self.prior.halfwidth:.0%}"
                    if self.prior.halfwidth
                    else "no interval measured yet"
                )
                return (
                    "simulation of this run, task times and start-up corrected by the contention"
                    f" and start-up of {self.prior.n_keys} other recurring application(s) of this"
                    f" server (no history of its own at other sizes; {band})"
                )
            return "simulation of this run (no history: task times as observed, no interval)"
        ws, wh = self.weights
        parts = ["simulation corrected by history (contention, start-up)"]
        if self.history is not None:
            parts.append(
                f"history model {self.history.describe()} on {self.n_train} runs;"
                f" weights simulation {ws:.2f}, history {wh:.2f}"
            )
        return "; ".join(parts)


def _mse(r: Sequence[float]) -> float:
    return sum(x * x for x in r) / len(r) if r else 0.0


@dataclass(frozen=True)
class SizeEstimate:
    """One predicted size."""

    executors: int
    cores: int
    predicted_ms: float
    low_ms: float
    high_ms: float
    floor_ms: float
    simulated_ms: float
    slot_ms: float  # executor core-ms held (static: duration x slots)


def predict(
    plan: StagePlan,
    cal: Calibration,
    executors: int,
    cores: int | None = None,
    input_bytes: float | None = None,
    base_input_bytes: float | None = None,
) -> SizeEstimate:
    """Predicted duration of the application at ``executors`` x ``cores``."""
    return predict_many(plan, cal, [executors], cores, input_bytes, base_input_bytes)[0]


def predict_many(
    plan: StagePlan,
    cal: Calibration,
    executors: Sequence[int],
    cores: int | None = None,
    input_bytes: float | None = None,
    base_input_bytes: float | None = None,
) -> list[SizeEstimate]:
    """`predict` for several executor counts (one walk of the stage graph)."""
    app = plan.app
    c = cores or app.cores or 1
    scale = 1.0
    if input_bytes and base_input_bytes:
        scale = float(input_bytes) / float(base_input_bytes)
    # Under dynamic allocation no more executors run than the stages' tasks ask for: that
    # count, not maxExecutors, is what contention, start-up and the history model see.
    used = list(executors)
    if app.dynamic:
        need = max((math.ceil(s.num_tasks * scale / c) for s in app.stages), default=1)
        used = [max(1, min(n, need)) for n in executors]
    sims = simulate_sizes(
        plan,
        list(executors),
        c,
        input_scale=scale,
        task_scales=[cal.task_scale(u * c, app.executors * app.cores) for u in used],
        startups=[cal.startup_ms(u, plan) for u in used],
    )
    ws, wh = cal.weights
    q = interval_halfwidth(cal.combined_residuals or cal.sim_residuals, cal.bare_residuals)
    if cal.overheads.work is None and cal.prior is not None:
        # Corrected by the prior: at least as uncertain as the prior has been on other keys.
        q = max(q, cal.prior.halfwidth)
    out = []
    for n, u, sim in zip(executors, used, sims, strict=True):
        value = sim.duration_ms
        if cal.history is not None and wh > 0:
            units = u if cal.history.slots_per_executor else u * c
            hist = cal.history.predict(units, input_bytes or base_input_bytes)
            value = ws * sim.duration_ms + wh * hist
        floor = sim.floor_ms
        value = max(value, floor)
        low = max(floor, value * (1 - q))
        high = max(low, value * (1 + q))
        out.append(
            SizeEstimate(
                executors=n,
                cores=c,
                predicted_ms=value,
                low_ms=low,
                high_ms=high,
                floor_ms=floor,
                simulated_ms=sim.duration_ms,
                slot_ms=sim.executor_core_ms if app.dynamic else value * n * c,
            )
        )
    return out


def nearest(runs: Sequence[dict[str, Any]], executors: float, input_bytes: float) -> int:
    """Index of the run closest in size and input (log distance): the base a simulation
    extrapolates least from."""
    import math

    def dist(r: dict[str, Any]) -> tuple[float, float]:
        d = abs(math.log(max(1, r["executors"] * (r.get("cores") or 1)) / max(1.0, executors)))
        if input_bytes and r.get("input_bytes"):
            d += abs(math.log(r["input_bytes"] / input_bytes))
        return d, -float(r.get("start_ms") or 0)

    return min(range(len(runs)), key=lambda i: dist(runs[i]))


def fit_calibration(runs: Sequence[dict[str, Any]]) -> Calibration:
    """Fit the corrections and the history model of one application from its runs, each
    ``{executors, cores, input_bytes, duration_ms, work_ms, startup_ms, plan}``, and measure both
    out of sample (each run predicted from the others)."""
    from sparkscope.advisor.whatif.calibrate import fit_history, fit_overheads

    runs = list(runs)
    overheads = fit_overheads(runs)
    history = fit_history(runs)
    cal = Calibration(overheads=overheads, history=history, n_train=len(runs))
    if len(runs) < 2:
        return cal
    sim_pred: list[float] = []
    bare_pred: list[float] = []
    hist_pred: list[float | None] = []
    for i, target in enumerate(runs):
        others = [r for j, r in enumerate(runs) if j != i]
        sub = Calibration(overheads=fit_overheads(others))
        base = others[nearest(others, target["executors"] * target["cores"], target["input_bytes"])]
        p = predict(
            base["plan"],
            sub,
            target["executors"],
            target["cores"],
            target["input_bytes"] or None,
            base["input_bytes"] or None,
        )
        sim_pred.append(p.predicted_ms)
        bare = predict(
            base["plan"],
            Calibration(),
            target["executors"],
            target["cores"],
            target["input_bytes"] or None,
            base["input_bytes"] or None,
        )
        bare_pred.append(bare.predicted_ms)
        model = fit_history(others) if history is not None else None
        hist_pred.append(
            None
            if model is None
            else model.predict(
                target["executors"]
                if model.slots_per_executor
                else target["executors"] * target["cores"],
                target["input_bytes"] or None,
            )
        )
    actual = [float(r["duration_ms"]) for r in runs]
    cal.sim_residuals = tuple(a / p - 1 for a, p in zip(actual, sim_pred, strict=True) if p)
    cal.bare_residuals = tuple(a / p - 1 for a, p in zip(actual, bare_pred, strict=True) if p)
    ws, wh = cal.weights
    combined = []
    for a, s, h in zip(actual, sim_pred, hist_pred, strict=True):
        v = s if h is None or wh == 0 else ws * s + wh * h
        if v > 0:
            combined.append(a / v - 1)
    cal.combined_residuals = tuple(combined)
    return cal


def prior_residuals(runs: Sequence[dict[str, Any]], prior: ClusterPrior) -> tuple[float, ...]:
    """How well ``prior`` corrects single-run what-ifs of this application: each run predicted
    from each of the latest `MAX_BASES` other runs of the same input at another size, the
    simulation corrected by the prior alone (actual / predicted - 1)."""
    cal = Calibration(prior=prior)
    out: list[float] = []
    for base in list(runs)[-MAX_BASES:]:
        by_cores: dict[int, list[dict[str, Any]]] = {}
        for r in runs:
            if r is base or r["input_bytes"] != base["input_bytes"]:
                continue
            if (r["executors"], r["cores"]) == (base["executors"], base["cores"]):
                continue
            by_cores.setdefault(int(r["cores"]), []).append(r)
        for c, targets in by_cores.items():
            points = predict_many(base["plan"], cal, [t["executors"] for t in targets], c)
            out += [
                float(t["duration_ms"]) / p.predicted_ms - 1.0
                for t, p in zip(targets, points, strict=True)
                if p.predicted_ms > 0
            ]
    return tuple(out)
