"""The next run at a size of the caller's choosing: the key's line, fitted at fetch time and
stored as plain numbers, evaluated for an input size and a number of task slots (nothing is
fitted when it is asked).

:func:`basis` builds what is stored with the key's forecast: the runs' latest features (what the
next run is assumed to look like when nothing else is known), the serving line, the quantiles of
its normalised residuals, the range of sizes its training runs covered and the design of the
difficulty. :func:`at_size` evaluates it: the latest run's features, with the size-like columns
scaled to the input asked for and the task slots replaced by the slots asked for; it says which
of the two it assumed from the latest run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sparkscope.advisor import conformal
from sparkscope.advisor.predict import candidates, rounds_prior, workline
from sparkscope.advisor.predict.baselines import LineFit
from sparkscope.advisor.predict.candidates import SLOT_MODEL, WORK_MODEL
from sparkscope.advisor.predict.extrapolate import scaled
from sparkscope.advisor.predict.features import NUMERIC
from sparkscope.advisor.predict.regimes import (
    LEVERAGE_COLUMNS,
    SIZE_COLUMNS,
    classify,
    difficulty_from,
)
from sparkscope.advisor.predict.selection import SWITCH_ALPHA

INPUT = NUMERIC.index("input_bytes")
SLOTS = NUMERIC.index("cores")
EXECUTORS = NUMERIC.index("executors")
STARTUP = NUMERIC.index("startup_ms")


def basis(
    Xt: Any, yt: Any, model: str, residuals: Sequence[float], level: float, min_history: int
) -> dict[str, Any] | None:
    """What the forecast stores to answer for other sizes: ``model`` is the line serving the
    key's latest run (the I/O line for any other model), ``residuals`` its earlier log residuals
    divided by their runs' difficulty. None without training runs."""
    import numpy as np

    if len(yt) == 0:
        return None
    latest = Xt[-1].copy()
    # The start-up is the run's own; the next run's is not known: the median of the latest five.
    latest[STARTUP] = float(np.median(Xt[-5:, STARTUP]))
    if model == WORK_MODEL:
        options = candidates.OPTIONS
        work = workline.fit(Xt, yt, rounds=options.rounds)
        line: dict[str, Any] = {"kind": WORK_MODEL, **work.to_json()}
        served = rounds_prior.serve(
            work, Xt, yt, options.rounds_timeline, sized=options.rounds_timeline_sized
        )
        if isinstance(served, rounds_prior.RoundsLine):  # what served the key's latest run
            line[rounds_prior.TERM] = served.to_json()
    else:
        fit = LineFit(Xt, yt, SWITCH_ALPHA)
        line = {"kind": SLOT_MODEL if model == SLOT_MODEL else "io_line", **fit.to_json()}
    lo, hi = conformal.quantile_bounds(residuals, level)
    small = conformal.small_sample_bound(residuals, level, candidates.OPTIONS.small_sample)
    if not math.isfinite(lo) and small is not None:  # as the served intervals take few residuals
        lo, hi = -small, small
    elif not math.isfinite(lo):
        lo, hi = min(residuals, default=0.0), max(residuals, default=0.0)
    cols = list(SIZE_COLUMNS)
    return {
        "latest": [float(v) for v in latest],
        "line": line,
        "quantiles": [float(lo), float(hi)],
        "level": level,
        "n_train": int(len(yt)),
        "min_history": int(min_history),
        "range": [[float(Xt[:, c].min()) for c in cols], [float(Xt[:, c].max()) for c in cols]],
        "leverage": _leverage_design(Xt),
    }


def _leverage_design(Xt: Any) -> dict[str, Any] | None:
    """The inverse Gram matrix of the difficulty's design (see regimes.difficulty)."""
    import numpy as np

    cols = [
        c
        for c in LEVERAGE_COLUMNS
        if Xt[:, c].min() > 0 and Xt[:, c].max() > 1.0001 * Xt[:, c].min()
    ]
    n = len(Xt)
    if not cols or n <= len(cols) + 1:
        return None
    A = np.column_stack([np.ones(n), np.log(Xt[:, cols])])
    try:
        inv = np.linalg.inv(A.T @ A)
    except np.linalg.LinAlgError:
        return None
    return {"cols": cols, "inverse": inv.tolist()}


def at_size(
    stored: dict[str, Any], input_bytes: float | None = None, slots: float | None = None
) -> dict[str, Any]:
    """The expected duration of the next run with this input and these task slots (either
    unknown: the latest run's), its interval and regime, and what it assumed."""
    import numpy as np

    x = np.array(stored["latest"], dtype=float)
    assumed = []
    if input_bytes is not None and x[INPUT] > 0:
        x = scaled(x, float(input_bytes) / float(x[INPUT]))
    elif input_bytes is not None:
        x[INPUT] = float(input_bytes)
    else:
        assumed.append("input")
    if slots is not None:
        x[SLOTS] = float(slots)
    else:
        assumed.append("task slots")
    line = stored["line"]
    if line["kind"] == WORK_MODEL and rounds_prior.TERM in line:
        value = float(rounds_prior.RoundsLine.from_json(line[rounds_prior.TERM]).at(x)[0])
    elif line["kind"] == WORK_MODEL:
        value = float(workline.WorkLine.from_json(line).at(x)[0])
    else:
        io, slot = LineFit.from_json(line).at(x)
        value = float((slot if line["kind"] == SLOT_MODEL else io)[0])
    lo_row, hi_row = stored["range"]
    bounds = np.zeros((2, len(NUMERIC)))
    for j, c in enumerate(SIZE_COLUMNS):
        bounds[0, c], bounds[1, c] = lo_row[j], hi_row[j]
    regime = classify(bounds, x, int(stored["n_train"]), int(stored["min_history"]))
    scale = difficulty_from(stored.get("leverage"), x)
    q_lo, q_hi = stored["quantiles"]
    low = value * math.exp(min(q_lo * scale, -0.02))
    high = value * math.exp(max(q_hi * scale, 0.02))
    return {
        "expected_ms": value,
        "low_ms": low,
        "high_ms": high,
        "level": stored["level"],
        "model": line["kind"],
        "input_bytes": float(x[INPUT]),
        "task_slots": float(x[SLOTS]),
        "assumed_from_latest_run": assumed,
        "regime": {
            "kind": regime.kind,
            "ratio": regime.stored_ratio,
            "feature": regime.feature or None,
            "text": regime.describe(),
        },
    }
