"""Bounded memory while a key's runs are predicted one after another.

A key can have tens of thousands of runs (a job run every few minutes, or a fleet of clones).
Predicting run ``i`` reads only a window of the runs before it: the ``RESIDUAL_RUNS`` latest
successful runs that have a point (model selection and intervals), the training window's feature
vectors (in the key's arrays, not here), and the features of the latest five successful runs
(what changed, the causes). The runs to compute are read with their vectors only, and
:class:`FeatureLoader` reads their features a batch at a time as the loop comes to them;
:class:`Reach` lets go of everything older than that as the loop
moves on, and :class:`PredictionRows` writes the computed rows in batches instead of holding one
ORM object per run until the transaction ends. What is stored is the same either way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from sparkscope.advisor.predict import rolling
from sparkscope.advisor.predict.rolling import PredictedRun
from sparkscope.models.predictions import RunPrediction
from sparkscope.prediction.runs import BATCH, StoredRun, load_runs

#: Rows written per statement.
WRITE_BATCH = 500
#: Successful runs whose features the causes of a later run compare it with
#: (``runs.earlier_features``).
FEATURE_RUNS = 5


class Reach:
    """What later runs of the key can still read of the runs before them.

    Call :meth:`passed` once run ``i`` is done (its point appended to ``points``): a point that
    ``RESIDUAL_RUNS`` newer successful runs with points stand in front of is never read again by
    ``rolling`` except for its serving model (``next_basis``), so it is replaced by a point that
    keeps only that; a run's features are dropped once it is not among the latest
    ``FEATURE_RUNS`` successful runs."""

    def __init__(self, runs: list[StoredRun], points: list[PredictedRun | None]) -> None:
        self.runs = runs
        self.points = points
        self._scored: deque[int] = deque()  # successful runs with a point, oldest first
        self._good: deque[int] = deque()  # successful runs whose features are kept
        self._slimmed = 0  # points before this index are slim
        self.slim = 0  # points slimmed so far (for tests)

    def passed(self, i: int) -> None:
        r, p = self.runs[i], self.points[i]
        if p is not None:
            p.recent_forecast_errors = None  # transient: only run i's forecast interval read it
        if not r.good:
            r.features = None
            return
        self._good.append(i)
        if len(self._good) > FEATURE_RUNS:
            self.runs[self._good.popleft()].features = None
        if p is None:
            return
        self._scored.append(i)
        if len(self._scored) <= rolling.RESIDUAL_RUNS:
            return
        oldest = self._scored.popleft()
        for j in range(self._slimmed, oldest + 1):
            q = self.points[j]
            if q is not None:
                self.points[j] = PredictedRun(predictions={}, model=q.model)
                self.slim += 1
        self._slimmed = oldest + 1


class PredictionRows:
    """``run_prediction`` rows inserted in batches of :data:`WRITE_BATCH` (call :meth:`flush`
    before reading the table back, and at the end)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._rows: list[dict[str, Any]] = []
        self.written = 0

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        if self._rows:
            self.session.execute(insert(RunPrediction), self._rows)
            self.written += len(self._rows)
            self._rows = []

    @property
    def held(self) -> Sequence[dict[str, Any]]:
        """The rows not written yet."""
        return self._rows


class FeatureLoader:
    """The features of the runs computed now that came without them (newly loaded runs, read
    with their vectors only), read from the stored rows :data:`BATCH` runs at a time, in the
    loop's order, when the first of them is reached."""

    def __init__(self, session: Session, runs: Sequence[StoredRun], since: int) -> None:
        self.session = session
        self.runs = runs
        self._todo = [i for i, r in enumerate(runs) if r.features is None and r.start >= since]
        self._next = 0  # index into _todo of the next run to read
        self.reads = 0  # batches read so far (for tests)

    def load(self, i: int) -> None:
        """Make sure run ``i`` has its features (reading it and the next ones when it has not)."""
        if self.runs[i].features is not None or self._next >= len(self._todo):
            return
        while self._todo[self._next] < i:  # passed without needing them
            self._next += 1
        chunk = self._todo[self._next : self._next + BATCH]
        self._next += len(chunk)
        by_pk = {self.runs[j].pk: j for j in chunk}
        for row in load_runs(self.session, list(by_pk)):
            self.runs[by_pk[row.id]].features = row.features
        self.reads += 1
        if self.runs[i].features is None:
            raise LookupError(f"application {self.runs[i].pk} is no longer stored")
