"""Amdahl scaling of a new key's own runs to the task slots of its next run, with the parallel
share learnt from the server's other keys.

A key with one to three runs, all on the same task slots, cannot tell from its own history how
its time changes when its slots change; its work line is then its median work
(``workline._few_runs``), which ignores the slots. Amdahl's law says how: with a parallel share
``p`` of its work on one slot, work(s) = W1 * ((1 - p) + p / s), so a run of work ``W`` on
``s_old`` slots takes W * ((1 - p) + p / s_new) / ((1 - p) + p / s_old) on ``s_new``.

``p`` is what the server's other keys show: each key with at least ``FIT_RUNS`` successful runs
on at least two slot counts is fitted work = f + size * (a + b / slots) (a fixed part, a
serial and a parallel cost per byte; relative least squares, every coefficient non-negative),
its share p the parallel part's share of its work on one slot at its median size m:
b m / (f + (a + b) m). The server's share is the median over such keys (each key one vote)
among its latest ``LEARN_RUNS`` successful runs, its spread their ``SPREAD`` and 1 - ``SPREAD``
quantiles, which the interval spans. With fewer than ``MIN_KEYS`` such keys there is no spread
to measure and nothing is scaled.

Form "slots" (adopted) scales the slots only: with one run (or a median of a few on one slot
count) the key's own lines do not scale its size either. Form "size" also scales each run's
work in proportion to the run's size (measured, not adopted: docs/dev/models.md). A key whose
own runs differ in slots has its own slots' prior (``workline._few_runs``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.predict import workline

MODEL = "amdahl_prior"
#: Runs (on at least two slot counts) a key needs before its share is fitted.
FIT_RUNS = workline.FIT_RUNS
#: Keys with a fitted share the server needs (two: the fewest between which a spread exists).
MIN_KEYS = 2
#: The quantile of the keys' shares at each end of the spread the interval spans.
SPREAD = 0.1
#: A key's latest runs its share is fitted on (the rolling origin's window).
WINDOW = 200
#: The server's latest successful runs the share is learnt from (as the class-aware model).
LEARN_RUNS = 5000


@dataclass(frozen=True)
class Share:
    """The server's parallel share: the median over its keys and the spread of theirs."""

    p: float
    low: float
    high: float
    keys: int


def key_share(X: Any, y: Any) -> float | None:
    """The parallel share of one key's runs ``X``, ``y`` (successful runs; see the module
    docstring), or None when they are too few or on one slot count."""
    import numpy as np
    from scipy.optimize import nnls

    X, y = np.atleast_2d(np.asarray(X, dtype=float))[-WINDOW:], np.asarray(y, dtype=float)[-WINDOW:]
    work = y - X[:, workline.STARTUP]
    keep = work > 0
    X, work = X[keep], work[keep]
    if len(work) < FIT_RUNS:
        return None
    slots = np.maximum(X[:, workline.SLOTS], 1.0)
    if not workline._varies(slots):
        return None
    c = workline._size_col(X)
    size = np.maximum(X[:, c], 1.0) if c is not None else np.ones(len(work))
    # relative least squares: every run's error as a share of its work
    A = np.column_stack([np.ones(len(work)), size, size / slots]) / work[:, None]
    A_scale = A.max(axis=0)
    A_scale[A_scale == 0] = 1.0
    w, _r = nnls(A / A_scale, np.ones(len(work)))
    fixed, serial, parallel = w / A_scale
    m = float(np.median(size))  # the key's typical run, on one slot
    total = fixed + (serial + parallel) * m
    if total <= 0:
        return None
    return float(parallel * m / total)


def pooled(shares: Iterable[float]) -> Share | None:
    """The server's share from its keys' ones (None below ``MIN_KEYS``)."""
    import numpy as np

    got = np.array([s for s in shares if s is not None], dtype=float)
    if len(got) < MIN_KEYS:
        return None
    lo, mid, hi = np.quantile(got, [SPREAD, 0.5, 1 - SPREAD])
    return Share(float(mid), float(lo), float(hi), len(got))


def factor(p: float, s_old: float, s_new: float) -> float:
    """How much a run's work changes from ``s_old`` to ``s_new`` slots at parallel share ``p``."""
    s_old, s_new = max(s_old, 1.0), max(s_new, 1.0)
    return ((1 - p) + p / s_new) / ((1 - p) + p / s_old)


def scaled(
    Xt: Any, yt: Any, x: Any, share: Share | None, form: str = "slots"
) -> tuple[float, float, float] | None:
    """The run ``x`` predicted from the key's training runs ``Xt``, ``yt`` scaled to its slots:
    (at the server's share, at the low end of the spread, at the high end), or None where
    Amdahl's scaling does not apply: no share, four or more training runs (the key's lines
    learn the slots), training runs on more than one slot count (the key's own slots' prior),
    or the run on their slots."""
    import numpy as np

    if share is None or not 0 < len(yt) < FIT_RUNS:
        return None
    slots = np.maximum(Xt[:, workline.SLOTS], 1.0)
    if workline._varies(slots):
        return None
    s_old, s_new = float(np.median(slots)), max(float(x[workline.SLOTS]), 1.0)
    if not workline._varies(np.array([s_old, s_new])):
        return None
    works = yt - Xt[:, workline.STARTUP]
    c = workline._size_col(Xt)
    if form == "size" and c is not None and float(x[c]) > 0:
        works = works * float(x[c]) / np.maximum(Xt[:, c], 1.0)  # work proportional to size
    work = float(np.median(works))
    if work <= 0:
        return None
    start, floor = float(x[workline.STARTUP]), workline.FLOOR * float(np.min(yt))

    def at(p: float) -> float:
        return max(start + work * factor(p, s_old, s_new), floor)

    return at(share.p), at(share.low), at(share.high)


class Tracker:
    """The share of the server's latest ``LEARN_RUNS`` successful runs seen so far, for the
    rolling-origin backtest: what a refresh learns from the stored runs before it."""

    def __init__(self) -> None:
        self.runs: dict[str, deque[tuple[Sequence[float], float]]] = {}
        self._order: deque[str] = deque()
        self._shares: dict[str, float | None] = {}
        self._pooled: Share | None = None
        self._dirty = False

    def add(self, key: str, row: Sequence[float], duration: float) -> None:
        self.runs.setdefault(key, deque()).append((row, duration))
        self._order.append(key)
        self._shares.pop(key, None)
        if len(self._order) > LEARN_RUNS:  # the oldest run leaves the learning set
            old = self._order.popleft()
            self.runs[old].popleft()
            self._shares.pop(old, None)
        self._dirty = True

    def share(self) -> Share | None:
        if self._dirty:
            for key, rows in self.runs.items():
                if key not in self._shares:
                    self._shares[key] = _share_of(list(rows)[-WINDOW:])
            self._pooled = pooled(s for s in self._shares.values() if s is not None)
            self._dirty = False
        return self._pooled


def _share_of(rows: Sequence[tuple[Sequence[float], float]]) -> float | None:
    import numpy as np

    if len(rows) < FIT_RUNS:
        return None
    return key_share(np.array([r for r, _d in rows], dtype=float), np.array([d for _r, d in rows]))


def learn_rows(rows: Iterable[tuple[str, Sequence[float], float]]) -> Share | None:
    """The server's share from its successful runs ``(key, vector, duration)``, oldest first
    (the latest ``LEARN_RUNS`` of them count, as in :class:`Tracker`)."""
    tracker = Tracker()
    for key, row, duration in rows:
        tracker.add(key, row, duration)
    return tracker.share()
