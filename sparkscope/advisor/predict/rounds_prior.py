"""What the training runs' own job timelines say about a new iterative key's work.

A finished run of a loop that submits the same jobs once per round shows, in its job timeline,
what one round took (``round_ms``, :func:`sparkscope.advisor.predict.iterations.round_ms`). Its
duration then splits into a fixed part and its rounds:

    work_j = duration_j - start-up_j = fixed_j + rounds_j * round_j

and a new run of ``rounds`` rounds at size ``s`` is predicted as

    start-up + fixed + rounds * k * s,   k = round_j / s_j

each round a pass over the data (the per-round cost grows with the size read, as the rounds'
term of :func:`sparkscope.advisor.predict.workline._few_runs`, ``iteration_size``; without a
measured size, or with ``sized`` False, a round costs ``round_j`` whatever the size). With two
or three training runs, ``k`` and the fixed part are the medians of the runs' own. One earlier
run is enough, where the work line has only its median.

Fairness: the time-like measures (duration, start-up, round time) come from the training runs
only; of the run predicted, only its counts are read (its rounds, its size) and its start-up as
every line reads it (the intercept). Its own ``round_ms`` never is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.predict import workline
from sparkscope.advisor.predict.features import NUMERIC

ROUND_MS = NUMERIC.index("round_ms")
ITERATIONS = workline.ITERATIONS
STARTUP = workline.STARTUP
#: Keys with at most this many training runs get the prior (the work line fits terms beyond).
MAX_RUNS = workline.FIT_RUNS - 1
TERM = "rounds_timeline"
#: The forms of ``candidates.Options.rounds_timeline``: "" off; "one": only where the work line
#: has no first-principle term of its own (one run, or runs whose counts do not differ); "few":
#: for every key of one to three runs; "mean": as "few", the geometric mean with the work line's
#: rounds' or slots' term where it has one.
FORMS = ("", "one", "few", "mean")


@dataclass
class RoundsLine:
    """The fixed part and the per-round cost (per unit of size, when one is measured)."""

    fixed: float
    per_round: float
    size_col: int | None
    y_min: float
    terms: tuple[str, ...] = (TERM,)
    press: float = math.inf

    def to_json(self) -> dict[str, Any]:
        """The prior as plain numbers (``from_json`` evaluates it again)."""
        return {
            "fixed": self.fixed,
            "per_round": self.per_round,
            "size_col": self.size_col,
            "y_min": self.y_min,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RoundsLine:
        size_col = data.get("size_col")
        return cls(
            fixed=float(data["fixed"]),
            per_round=float(data["per_round"]),
            size_col=None if size_col is None else int(size_col),
            y_min=float(data.get("y_min") or 0.0),
        )

    def at(self, rows: Any) -> Any:
        """Start-up plus the fixed part plus the rounds' cost for each row (only its counts, its
        size and its start-up are read), never below the work line's floor."""
        import numpy as np

        rows = np.atleast_2d(rows)
        rounds = self.per_round * rows[:, ITERATIONS]
        if self.size_col is not None:
            rounds = rounds * np.maximum(rows[:, self.size_col], 0.0)
        value = rows[:, STARTUP] + self.fixed + rounds
        return np.maximum(value, workline.FLOOR * self.y_min)


def fit(Xt: Any, yt: Any, *, sized: bool) -> RoundsLine | None:
    """The prior of the training runs ``Xt``, ``yt`` (one to ``MAX_RUNS`` runs, every one with
    rounds and a measured round time); None otherwise. ``sized``: a round's cost grows with the
    size read (else it is the same at every size; ``candidates.Options.rounds_timeline_sized``)."""
    import numpy as np

    n = len(yt)
    if not 1 <= n <= MAX_RUNS:
        return None
    rounds, per = Xt[:, ITERATIONS], Xt[:, ROUND_MS]
    if rounds.min() <= 0 or per.min() <= 0:
        return None
    size_col = workline._size_col(Xt) if sized else None
    unit = np.maximum(Xt[:, size_col], 1.0) if size_col is not None else np.ones(n)
    k = float(np.median(per / unit))
    fixed = float(np.median(np.maximum(yt - Xt[:, STARTUP] - rounds * per, 0.0)))
    return RoundsLine(fixed, k, size_col, float(yt.min()))


def _has_term(work: Any) -> bool:
    return bool(getattr(work, "terms", None))


class _Mean:
    """The geometric mean of two lines (the prior and the work line's own term)."""

    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b
        self.terms = (TERM, *b.terms)
        self.press = math.inf

    def at(self, rows: Any) -> Any:
        import numpy as np

        return np.sqrt(np.maximum(self.a.at(rows), 1e-9) * np.maximum(self.b.at(rows), 1e-9))


def serve(work: Any, Xt: Any, yt: Any, form: str, *, sized: bool) -> Any:
    """The line that stands for the work line of the training runs ``Xt``, ``yt`` under the
    form ``form`` (see ``FORMS``): ``work`` itself, the prior, or both's mean."""
    if not form:
        return work
    prior = fit(Xt, yt, sized=sized)
    if prior is None:
        return work
    if form == "one":
        return work if _has_term(work) else prior
    if form == "mean" and _has_term(work):
        return _Mean(prior, work)
    return prior
