"""The work line: a run's duration beyond its start-up as a sum of costs of what it had to do,
with the terms its key's history supports, chosen by forward selection.

work = a + sum_j c_j * column_j, every c_j >= 0 (a byte read, a task, a job, a round of an
iteration costs time, never saves it). Candidate columns, each only where it varies among the
key's training runs:

- ``size``: the bytes read (else records read, bytes written) raised to ``b`` (see below);
- ``size_per_slot``: the same divided by the task slots (Ernest's scale / machines term: the part
  of the per-byte cost that more slots share; with ``size`` it is Amdahl's law);
- ``slots``: the task slots (a per-slot overhead);
- ``tasks``, ``jobs``, ``stages``: counts of the run's plan (a per-task and per-job overhead);
- ``iterations`` and ``iteration_size`` (iterations times size: every round passes over the data)
  and the numeric application arguments.

Forward selection: starting from the constant, the candidate that lowers the residual sum of
squares most joins while the partial F-test of the two nested lines is significant at
``alpha`` divided by the candidates left (Bonferroni, the rule of the served-model choice) and
its coefficients stay non-negative. With a handful of runs that admits one or two terms; a term
the history does not support stays out, so it cannot be extrapolated.

Sub-linear growth: with the columns chosen, the size exponent ``b`` is profiled over ``EXPONENTS``
and a ``b`` below 1 is taken only when it explains significantly more than ``b = 1`` (the same
F-test, one parameter more). The line then grows with the size as s^b beyond the range, as the
history showed it growing within it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sparkscope.advisor.predict.features import NUMERIC

_I = {n: i for i, n in enumerate(NUMERIC)}
SIZE_ORDER = tuple(_I[n] for n in ("input_bytes", "input_records", "output_bytes"))
SLOTS = _I["cores"]
STARTUP = _I["startup_ms"]
COUNTS = (("tasks", _I["tasks"]), ("jobs", _I["jobs"]), ("stages", _I["stages"]))
ITERATIONS = _I["iterations"]
ARGS = (("arg_0", _I["arg_0"]), ("arg_1", _I["arg_1"]))
EXPONENTS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)
#: Below this many runs no term is chosen (see ``_few_runs``).
FIT_RUNS = 4
#: No prediction below this share of the fastest training run (as the other lines).
FLOOR = 0.2


@dataclass
class WorkLine:
    """A fitted work line: its terms, coefficients and size exponent."""

    terms: list[str] = field(default_factory=list)
    coef: list[float] = field(default_factory=list)
    intercept: float = 0.0
    exponent: float = 1.0
    size_col: int | None = None
    #: Relative PRESS of the line on its training runs (see ``_ols``).
    press: float = math.inf
    #: The median work, for lines of fewer than four runs (which fit no terms).
    median_work: float | None = None
    y_min: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The fitted line as plain numbers (``from_json`` evaluates it again)."""
        return {
            "terms": list(self.terms),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "exponent": self.exponent,
            "size_col": self.size_col,
            "median_work": self.median_work,
            "y_min": self.y_min,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkLine:
        return cls(
            terms=[str(t) for t in data.get("terms") or []],
            coef=[float(c) for c in data.get("coef") or []],
            intercept=float(data.get("intercept") or 0.0),
            exponent=float(data.get("exponent") or 1.0),
            size_col=data.get("size_col"),
            median_work=data.get("median_work"),
            y_min=float(data.get("y_min") or 0.0),
        )

    def at(self, rows: Any) -> Any:
        """Start-up plus the line's work for each row, never below ``FLOOR`` times the fastest
        training run."""
        import numpy as np

        rows = np.atleast_2d(rows)
        start = rows[:, STARTUP]
        if self.median_work is not None:  # never negative work, never below the floor
            return np.maximum(max(self.median_work, 0.0) + start, FLOOR * self.y_min)
        cols = columns(rows, self.size_col, self.exponent)
        work = np.full(len(rows), self.intercept)
        for t, c in zip(self.terms, self.coef, strict=True):
            work = work + c * cols[t]
        return np.maximum(work + start, FLOOR * self.y_min)


def _varies(col: Any) -> bool:
    return bool(col.max() > 1.0001 * col.min()) if col.min() > 0 else bool(col.max() > col.min())


def _size_col(X: Any) -> int | None:
    """The first size column that varies among the runs, else the first every run has (its
    per-slot share can still vary with the slots)."""
    measured = [c for c in SIZE_ORDER if X[:, c].min() > 0]
    for c in measured:
        if _varies(X[:, c]):
            return c
    return measured[0] if measured else None


def columns(X: Any, size_col: int | None, b: float) -> dict[str, Any]:
    """The candidate columns of the rows ``X`` (see the module docstring)."""
    import numpy as np

    out: dict[str, Any] = {}
    slots = np.maximum(X[:, SLOTS], 1.0)
    if size_col is not None:
        s = np.maximum(X[:, size_col], 0.0) ** b
        out["size"] = s
        out["size_per_slot"] = s / slots
        if X[:, ITERATIONS].max() > 0:
            out["iteration_size"] = X[:, ITERATIONS] * s
    out["slots"] = slots
    for name, c in COUNTS:
        out[name] = X[:, c]
    if X[:, ITERATIONS].max() > 0:
        out["iterations"] = X[:, ITERATIONS]
    for name, c in ARGS:
        out[name] = X[:, c]
    return out


class _Design:
    """The candidate columns of one fit, scaled, with their Gram matrix: any subset's least
    squares and leave-one-out errors from slices of it."""

    def __init__(self, cand: dict[str, Any], work: Any, y: Any) -> None:
        import numpy as np

        self.names = list(cand)
        n = len(work)
        M = np.column_stack([np.ones(n), *cand.values()]) if cand else np.ones((n, 1))
        self.scale = np.abs(M).max(axis=0)
        self.scale[self.scale == 0] = 1.0
        self.A = M / self.scale
        self.G = self.A.T @ self.A
        self.b = self.A.T @ work
        self.work, self.y = work, y

    def ols(self, chosen: list[str]) -> tuple[Any, float]:
        """(coefficients in the columns' own units, intercept first; relative PRESS: the sum over
        the runs of (leave-one-out residual / duration)^2) of the line on ``chosen``."""
        import numpy as np

        idx = [0, *(1 + self.names.index(c) for c in chosen)]
        A = self.A[:, idx]
        try:
            inv = np.linalg.inv(self.G[idx][:, idx])
        except np.linalg.LinAlgError:
            return np.zeros(len(idx)), math.inf
        w = inv @ self.b[idx]
        r = self.work - A @ w
        h = ((A @ inv) * A).sum(axis=1)
        if (h > 1 - 1e-9).any():  # a run that alone sets a coefficient: no leave-one-out error
            return w / self.scale[idx], math.inf
        loo = r / (1 - h)
        return w / self.scale[idx], float(((loo / self.y) ** 2).sum())


def _distinct(cand: dict[str, Any]) -> dict[str, Any]:
    """The candidates that vary, without exact duplicates (the iterations and the argument that
    sets them are one column)."""
    out: dict[str, Any] = {}
    for k, v in cand.items():
        if _varies(v) and not any(v.shape == u.shape and (v == u).all() for u in out.values()):
            out[k] = v
    return out


def _few_runs(X: Any, y: Any, work: Any, size_col: int | None, rounds: bool = False) -> WorkLine:
    """Two or three runs: too few to choose terms. The one term a first principle gives, with a
    fixed part, if its cost comes out non-negative; else the median work:

    - with ``rounds``, when their iteration counts differ: the rounds (a loop that submits the
      same jobs once per round does work proportional to their count), each a pass over the
      data (``iteration_size``; ``iterations`` when no size is measured);
    - else when their task slots differ: the work spread over the slots (Ernest's scale /
      machines)."""
    import numpy as np

    median = WorkLine(median_work=float(np.median(work)), y_min=float(y.min()))
    if len(y) < 2:
        return median
    cols = columns(X, size_col, 1.0)
    term = ""
    if rounds and X[:, ITERATIONS].min() > 0 and _varies(X[:, ITERATIONS]):
        term = "iteration_size" if "iteration_size" in cols else "iterations"
    elif size_col is not None and _varies(X[:, SLOTS]):
        term = "size_per_slot"
    if not term:
        return median
    A = np.column_stack([np.ones(len(y)), cols[term]])
    w, *_ = np.linalg.lstsq(A, work, rcond=None)
    if w[1] < 0 or w[0] < 0:
        return median
    line = WorkLine([term], [float(w[1])], float(w[0]), 1.0, size_col)
    line.y_min = float(y.min())
    return line


#: The forms of the rounds' terms (see ``fit``): "" none, "prior" (two or three runs), "first"
#: (the rounds enter the line first), "both".
ROUNDS_FORMS = ("", "prior", "first", "both")


def fit(X: Any, y: Any, sublinear: bool = True, rounds: str = "") -> WorkLine:
    """The work line of the training runs ``X``, ``y`` (see the module docstring). ``rounds``
    (one of ``ROUNDS_FORMS``): with "prior" or "both", two or three runs whose iteration counts
    differ get the rounds' term (``_few_runs``); with "first" or "both", when the iteration
    count varies the rounds enter the line before any other term (the one of ``iterations`` and
    ``iteration_size`` with the lower PRESS and a non-negative cost), whether or not it lowers
    the PRESS: the work of a loop grows with its rounds, which the forward selection would
    otherwise have to find among correlated sizes."""

    work = y - X[:, STARTUP]
    n = len(y)
    size_col = _size_col(X)
    if n < FIT_RUNS:
        return _few_runs(X, y, work, size_col, rounds in ("prior", "both"))
    design = _Design(_distinct(columns(X, size_col, 1.0)), work, y)
    chosen: list[str] = []
    w, press = design.ols(chosen)
    if rounds in ("first", "both"):
        seeded = []
        for k in ("iterations", "iteration_size"):
            if k in design.names:
                wk, pk = design.ols([k])
                if not (wk[1:] < 0).any() and pk < math.inf:
                    seeded.append((pk, k, wk))
        if seeded:
            press, k, w = min(seeded, key=lambda t: t[0])
            chosen.append(k)
    while n - len(chosen) - 2 >= 1:
        best: tuple[float, str, Any] | None = None
        for k in design.names:
            if k in chosen:
                continue
            wk, pk = design.ols([*chosen, k])
            if (wk[1:] < 0).any():
                continue
            if best is None or pk < best[0]:
                best = (pk, k, wk)
        if best is None or best[0] >= press:
            break
        press, k, w = best
        chosen.append(k)
    line = WorkLine(chosen, [float(v) for v in w[1:]], float(w[0]), 1.0, size_col, press)
    line.y_min = float(y.min())
    sized = [k for k in chosen if k in ("size", "size_per_slot", "iteration_size")]
    # The exponent is learnt only from sizes that vary (at one size every exponent fits alike).
    if sublinear and sized and size_col is not None and _varies(X[:, size_col]):
        for b in EXPONENTS[1:]:
            cols = columns(X, size_col, b)
            wb, pb = _Design({c: cols[c] for c in chosen}, work, y).ols(chosen)
            if (wb[1:] < 0).any() or pb >= line.press:
                continue
            line.coef, line.intercept = [float(v) for v in wb[1:]], float(wb[0])
            line.exponent, line.press = b, pb
    return line


def work_line(X: Any, y: Any, x: Any) -> float:
    """The work line of the training runs ``X``, ``y`` for the run ``x``."""
    return float(fit(X, y).at(x)[0])
