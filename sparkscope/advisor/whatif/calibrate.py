"""History-calibrated duration model of a recurring application (Ernest / OptEx form).

T(P, s) = θ0 + θ1·s/P + θ2·P + θ3·s, fitted by non-negative least squares
(``scipy.optimize.nnls``) on the application's past runs, where P is the executor count (task
slots when cores vary), s the input relative to the runs' median input. The terms map onto OptEx:
θ0 fixed time (driver work, the part of start-up that does not grow, a straggler that caps
scaling), θ1·s/P the parallel work, θ2·P what grows with the executor count (start-up of more
JVMs, per-executor coordination, contention), θ3·s serial work that grows with the input (driver
work per record, a hot key's reducer).

Which terms a history can identify:
- one size only: no scaling term at all (the simulation answers alone);
- two sizes: θ0 and θ1 (work / P);
- three or more sizes: θ0, θ1, θ2; with two or more input sizes also θ3 (with one input, s/P
  is just 1/P and θ3 merges into θ0).
A term needs more runs than terms; otherwise the smaller form is used.

Intervals come from leave-one-out residuals (each run predicted by the model fitted without it):
the band is the prediction scaled by the 10th and 90th percentile of the relative residuals (the
extremes when fewer than ten runs), so its width is what the model actually missed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

TERM_NAMES = ("const", "s/P", "P", "s")


@dataclass
class HistoryModel:
    """A fitted model; `predict` is cheap and pure."""

    terms: tuple[str, ...]
    coef: tuple[float, ...]
    ref_input: float
    slots_per_executor: int
    residuals: tuple[float, ...] = ()  # leave-one-out relative residuals (actual / pred - 1)
    sizes: tuple[int, ...] = ()
    inputs: tuple[float, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def predict(self, executors: float, input_bytes: float | None = None) -> float:
        s = 1.0 if not input_bytes or self.ref_input <= 0 else input_bytes / self.ref_input
        row = _row(self.terms, float(executors), s)
        return float(sum(c * x for c, x in zip(self.coef, row, strict=True)))

    def band(self, predicted: float) -> tuple[float, float]:
        lo, hi = residual_band(self.residuals)
        return predicted * (1 + lo), predicted * (1 + hi)

    def to_dict(self) -> dict[str, Any]:
        return {
            "terms": list(self.terms),
            "coef": list(self.coef),
            "ref_input": self.ref_input,
            "slots_per_executor": self.slots_per_executor,
            "residuals": list(self.residuals),
            "sizes": list(self.sizes),
            "inputs": list(self.inputs),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HistoryModel:
        return cls(
            terms=tuple(d["terms"]),
            coef=tuple(float(c) for c in d["coef"]),
            ref_input=float(d["ref_input"]),
            slots_per_executor=int(d.get("slots_per_executor", 1)),
            residuals=tuple(float(r) for r in d.get("residuals", ())),
            sizes=tuple(int(x) for x in d.get("sizes", ())),
            inputs=tuple(float(x) for x in d.get("inputs", ())),
        )

    def describe(self) -> str:
        parts = [
            f"{c / 1000:.3g}s·{t}" if t != "const" else f"{c / 1000:.3g}s"
            for t, c in zip(self.terms, self.coef, strict=True)
        ]
        return "T = " + " + ".join(parts)


def residual_band(residuals: Sequence[float]) -> tuple[float, float]:
    """Relative (low, high) offsets from out-of-sample residuals."""
    if not residuals:
        return 0.0, 0.0
    r = sorted(residuals)
    if len(r) < 10:
        return min(0.0, r[0]), max(0.0, r[-1])
    k = len(r) - 1
    lo = r[int(math.floor(0.1 * k))]
    hi = r[int(math.ceil(0.9 * k))]
    return min(0.0, lo), max(0.0, hi)


#: Nominal coverage of the what-if interval.
INTERVAL_LEVEL = 0.8
#: Fewer out-of-sample residuals than this is a short history: its interval is widened to the
#: bare simulation's residual spread.
SHORT_HISTORY = 10


def conformal_halfwidth(residuals: Sequence[float], level: float = INTERVAL_LEVEL) -> float | None:
    """Split-conformal half-width on absolute relative residuals: the k-th smallest |r| with
    k = ceil((n+1)·level), which covers a new exchangeable run with probability >= level.
    None when the history is too short for that rank (k > n)."""
    n = len(residuals)
    if n == 0:
        return None
    k = math.ceil((n + 1) * level - 1e-9)
    if k > n:
        return None
    return sorted(abs(r) for r in residuals)[k - 1]


def interval_halfwidth(residuals: Sequence[float], bare: Sequence[float] = ()) -> float:
    """Relative half-width of the interval: the conformal quantile of ``residuals``; when they
    are fewer than `SHORT_HISTORY` (or too few for the rank), at least the spread of the bare
    simulation's residuals ``bare`` (its conformal quantile, else its largest |r|). 0 with no
    residual at all (no history, no interval)."""
    q = conformal_halfwidth(residuals)
    if q is None:
        q = max((abs(r) for r in residuals), default=0.0)
    if len(residuals) < SHORT_HISTORY and bare:
        spread = conformal_halfwidth(bare)
        if spread is None:
            spread = max(abs(r) for r in bare)
        q = max(q, spread)
    return q


def _row(terms: Sequence[str], p: float, s: float) -> list[float]:
    p = max(p, 1e-9)
    values = {"const": 1.0, "s/P": s / p, "P": p, "s": s}
    return [values[t] for t in terms]


def identifiable_terms(sizes: Sequence[float], inputs: Sequence[float]) -> tuple[str, ...]:
    """The terms this history can pin down (see the module docstring)."""
    n = len(sizes)
    n_sizes = len(set(sizes))
    n_inputs = len({round(x, 3) for x in inputs})
    if n_sizes >= 3 and n_inputs >= 2 and n >= 5:
        return ("const", "s/P", "P", "s")
    if n_sizes >= 3 and n >= 4:
        return ("const", "s/P", "P")
    if n_sizes >= 2 and n >= 3:
        return ("const", "s/P")
    return ()


def _nnls(terms: Sequence[str], ps: Sequence[float], ss: Sequence[float], ts: Sequence[float]):
    import numpy as np
    from scipy.optimize import nnls

    a = np.array([_row(terms, p, s) for p, s in zip(ps, ss, strict=True)], dtype=float)
    b = np.asarray(ts, dtype=float)
    # Relative errors matter: weight each run by 1 / its duration.
    w = 1.0 / np.maximum(b, 1.0)
    coef, _ = nnls(a * w[:, None], b * w)
    return coef


def fit_history(points: Sequence[dict[str, Any]]) -> HistoryModel | None:
    """Fit T(P, s) on runs ``{executors, cores, input_bytes, duration_ms}``; None when the
    history cannot identify any scaling term."""
    pts = [p for p in points if p.get("duration_ms") and p.get("executors")]
    if not pts:
        return None
    cores = sorted(int(p.get("cores") or 1) for p in pts)[len(pts) // 2]
    same_cores = all(int(p.get("cores") or 1) == cores for p in pts)
    # With mixed cores the unit is slots; otherwise executors.
    ps = [float(p["executors"]) * (1 if same_cores else int(p.get("cores") or 1)) for p in pts]
    raw_inputs = [float(p.get("input_bytes") or 0) for p in pts]
    positive = sorted(x for x in raw_inputs if x > 0)
    ref = positive[len(positive) // 2] if positive else 0.0
    ss = [x / ref if ref > 0 and x > 0 else 1.0 for x in raw_inputs]
    ts = [float(p["duration_ms"]) for p in pts]
    terms = identifiable_terms(ps, ss)
    if not terms:
        return None
    coef = _nnls(terms, ps, ss, ts)
    residuals = []
    for i in range(len(pts)):
        keep = [j for j in range(len(pts)) if j != i]
        sub_terms = identifiable_terms([ps[j] for j in keep], [ss[j] for j in keep])
        if not sub_terms:
            continue
        c = _nnls(sub_terms, [ps[j] for j in keep], [ss[j] for j in keep], [ts[j] for j in keep])
        pred = float(sum(a * x for a, x in zip(c, _row(sub_terms, ps[i], ss[i]), strict=True)))
        if pred > 0:
            residuals.append(ts[i] / pred - 1.0)
    return HistoryModel(
        terms=terms,
        coef=tuple(float(c) for c in coef),
        ref_input=ref,
        slots_per_executor=1 if same_cores else 0,
        residuals=tuple(residuals),
        sizes=tuple(sorted({int(p["executors"]) for p in pts})),
        inputs=tuple(sorted({round(s, 3) for s in ss})),
    )


# ------------------------------------------------------------------ corrections for the simulation


@dataclass
class Overheads:
    """What the simulation assumes away, learnt from an application's own runs:
    work per input byte against the slot count (contention: tasks slow down as more of them share
    machines, disks and network) and the time before the first stage against the executor count
    (start-up of more executors). Each is a line a + b·x fitted by NNLS; with one size only
    neither is identifiable and the run is kept as observed."""

    work: tuple[float, float] | None = None  # work per input byte = a + b·slots
    startup: tuple[float, float] | None = None  # ms = a + b·executors

    def task_scale(self, slots_to: float, slots_from: float) -> float:
        if self.work is None:
            return 1.0
        a, b = self.work
        base = a + b * slots_from
        return (a + b * slots_to) / base if base > 0 else 1.0

    def startup_ms(self, executors: float) -> float | None:
        if self.startup is None:
            return None
        a, b = self.startup
        return a + b * executors

    def to_dict(self) -> dict[str, Any]:
        return {"work": self.work, "startup": self.startup}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Overheads:
        work = d.get("work")
        startup = d.get("startup")
        return cls(
            work=None if work is None else (float(work[0]), float(work[1])),
            startup=None if startup is None else (float(startup[0]), float(startup[1])),
        )


def _line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """Non-negative a, b of y = a + b·x; None with fewer than two distinct x."""
    if len(set(xs)) < 2:
        return None
    import numpy as np
    from scipy.optimize import nnls

    a = np.column_stack([np.ones(len(xs)), np.asarray(xs, dtype=float)])
    y = np.asarray(ys, dtype=float)
    w = 1.0 / np.maximum(np.abs(y), 1e-12)
    coef, _ = nnls(a * w[:, None], y * w)
    return float(coef[0]), float(coef[1])


def fit_overheads(points: Sequence[dict[str, Any]]) -> Overheads:
    """Points ``{executors, cores, input_bytes, work_ms, startup_ms}`` of one application."""
    work_pts = [
        (float(p["executors"] * (p.get("cores") or 1)), p["work_ms"] / p["input_bytes"])
        for p in points
        if p.get("input_bytes") and p.get("work_ms")
    ]
    if len(work_pts) < len(points) // 2 or not work_pts:
        # No input bytes (e.g. generated data): work per run instead.
        work_pts = [
            (float(p["executors"] * (p.get("cores") or 1)), float(p["work_ms"]))
            for p in points
            if p.get("work_ms")
        ]
    start_pts = [
        (float(p["executors"]), float(p["startup_ms"]))
        for p in points
        if p.get("startup_ms") is not None
    ]
    return Overheads(
        work=_line([x for x, _ in work_pts], [y for _, y in work_pts]) if work_pts else None,
        startup=_line([x for x, _ in start_pts], [y for _, y in start_pts]) if start_pts else None,
    )
