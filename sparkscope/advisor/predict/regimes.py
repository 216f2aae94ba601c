"""The situation a run is predicted in: inside the range of its training runs, outside it, or a
key with too few runs of its own.

- ``interpolation``: every size feature of the run (input bytes and records, bytes written, task
  slots, iterations) lies within the range its training runs covered;
- ``extrapolation``: at least one lies outside; ``ratio`` says how far (the run's value over the
  largest seen, or the smallest seen over the run's value, whichever is furthest) and
  ``feature`` which one;
- ``new_key``: fewer than ``k`` successful earlier runs of its own (served by what runs of other
  keys took, or by the few runs it has).

A feature that never varied in the training runs still bounds the range: a run on 8 slots after
runs on 4 only is an extrapolation in slots, however well the other features fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.predict.features import NUMERIC

INTERPOLATION = "interpolation"
EXTRAPOLATION = "extrapolation"
NEW_KEY = "new_key"
REGIMES = (INTERPOLATION, EXTRAPOLATION, NEW_KEY)

#: The size features whose range defines the regime, with the words the page uses for them.
SIZE_FEATURES = (
    ("input_bytes", "input"),
    ("input_records", "input records"),
    ("output_bytes", "output"),
    ("cores", "task slots"),
    ("iterations", "iterations"),
)
SIZE_COLUMNS = tuple(NUMERIC.index(n) for n, _label in SIZE_FEATURES)
LABELS = dict(SIZE_FEATURES)
#: Within this relative distance of the range's ends a value counts as inside (the float noise of
#: sums of task metrics, not a tolerance of the models).
EDGE = 1e-9


@dataclass(frozen=True)
class Regime:
    """Where a run stands against its training runs."""

    kind: str
    #: How far outside: >= 1 (1 inside the range); the run's value over the largest seen, or the
    #: smallest seen over the run's value.
    ratio: float = 1.0
    #: The feature furthest outside (a NUMERIC name), "" inside.
    feature: str = ""
    #: "above" or "below" the range, "" inside.
    side: str = ""

    @property
    def distance(self) -> float:
        """log(ratio): 0 inside, growing with the distance outside the range."""
        return math.log(self.ratio) if self.ratio > 1 else 0.0

    @property
    def stored_ratio(self) -> float | None:
        """The run's size over the nearest end of its range (below 1 under it; None inside): how
        the ratio is stored."""
        if self.kind != EXTRAPOLATION:
            return None
        return self.ratio if self.side != "below" else 1.0 / self.ratio

    @classmethod
    def stored(cls, kind: str | None, ratio: float | None, feature: str | None) -> Regime:
        """The regime of a stored prediction (see ``stored_ratio``)."""
        r = float(ratio or 1.0)
        if kind != EXTRAPOLATION or r <= 0:
            return cls(kind or NEW_KEY)
        return cls(EXTRAPOLATION, max(r, 1 / r), feature or "", "above" if r >= 1 else "below")

    def describe(self) -> str:
        """Plain words, e.g. ``extrapolated: input 3.4x the largest seen``."""
        if self.kind == NEW_KEY:
            return "new application: too few runs of its own"
        if self.kind == INTERPOLATION:
            return "within the range of its earlier runs"
        label = LABELS.get(self.feature, self.feature)
        if self.side == "below":
            return f"extrapolated: {label} {1 / self.ratio:.2g}x the smallest seen"
        return f"extrapolated: {label} {self.ratio:.2g}x the largest seen"


def classify(Xt: Any, x: Any, n_train: int, k: int) -> Regime:
    """The regime of the run ``x`` predicted from the training runs ``Xt`` (rows, NUMERIC order),
    ``n_train`` of them successful; ``k``: the runs of its own a key needs not to be new."""
    if n_train < k or len(Xt) == 0:
        return Regime(NEW_KEY)
    best = Regime(INTERPOLATION)
    for c in SIZE_COLUMNS:
        col = Xt[:, c]
        lo, hi, v = float(col.min()), float(col.max()), float(x[c])
        if v <= 0 or lo <= 0:
            continue  # not measured for this run or some training run (no iterations, no output)
        if v > hi * (1 + EDGE):
            ratio, side = v / hi, "above"
        elif v < lo * (1 - EDGE):
            ratio, side = lo / v, "below"
        else:
            continue
        if ratio > best.ratio:
            best = Regime(EXTRAPOLATION, ratio, NUMERIC[c], side)
    return best


#: The columns of the difficulty's design (logs): the size read, the task slots, the iterations.
LEVERAGE_COLUMNS = tuple(NUMERIC.index(n) for n in ("input_bytes", "cores", "iterations"))


def difficulty(Xt: Any, x: Any) -> float:
    """How hard the run ``x`` is to predict from the training runs ``Xt``: sqrt(1 + h), h the
    leverage of ``x`` in a line on the logs of its size read, task slots and iterations (those
    that vary and are measured). sqrt(1 + h) is the factor by which a least-squares line's
    prediction error exceeds the noise of one run: about 1 inside the range, growing with the
    distance outside it. Intervals scale their residuals by it (normalised conformal)."""
    import numpy as np

    cols = []
    for c in LEVERAGE_COLUMNS:
        v = Xt[:, c]
        if v.min() > 0 and x[c] > 0 and v.max() > 1.0001 * v.min():
            cols.append(c)
    n = len(Xt)
    if not cols or n <= len(cols) + 1:
        return 1.0
    A = np.column_stack([np.ones(n), np.log(Xt[:, cols])])
    try:
        inv = np.linalg.inv(A.T @ A)
    except np.linalg.LinAlgError:
        return 1.0
    return _scale(inv, cols, x)


def difficulty_from(design: dict[str, Any] | None, x: Any) -> float:
    """:func:`difficulty` from a stored design (``{"cols": [...], "inverse": [[...]]}``)."""
    import numpy as np

    if not design or any(x[c] <= 0 for c in design["cols"]):
        return 1.0
    return _scale(np.array(design["inverse"], dtype=float), list(design["cols"]), x)


def _scale(inv: Any, cols: list[int], x: Any) -> float:
    import numpy as np

    a = np.concatenate([[1.0], np.log(np.asarray(x, dtype=float)[cols])])
    return math.sqrt(1.0 + max(float(a @ inv @ a), 0.0))
