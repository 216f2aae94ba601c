"""How far one what-if request may reach, and how long it may compute.

The parameters that scale a simulation's work -- the input size, the task slots (executors x
cores) -- are bounded by what the stored runs can support: beyond a factor of the largest input
or size seen, a prediction is an extrapolation no run has checked, and the work grows with it.
A request beyond them is refused naming the parameter (:class:`LimitExceeded`, a ValueError).
Whatever is allowed also runs under a time budget (:func:`time_budget`): a simulation that runs
out raises :class:`BudgetExceeded` at its next check, so no request computes for minutes.
Pure: nothing here reads the database.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

#: Target input at most this many times the largest input the runs read.
INPUT_FACTOR = 10
#: Task slots (executors x cores) at most this many times the most the runs had ...
SLOT_FACTOR = 16
#: ... and this many whatever the runs had (a simulation on them costs little).
MIN_SLOTS = 1024
#: Most simulation one request may do, in task cells (`simulate.work_cells`): a tenth to a
#: fifth of a second at 25-60 ns a cell, on top of reading and planning the runs.
MAX_WORK_CELLS = 3_000_000
#: Longest deadline accepted (a year: no batch job's deadline is further).
MAX_DEADLINE_MS = 366 * 86_400_000
#: Seconds one request may compute by default.
DEFAULT_BUDGET_S = 2.0


class LimitExceeded(ValueError):
    """A parameter beyond what the stored runs support; ``param`` names it."""

    def __init__(self, param: str, message: str) -> None:
        self.param = param
        super().__init__(message)


class BudgetExceeded(Exception):
    """The request's time budget ran out before its simulations did."""


@dataclass(frozen=True)
class Limits:
    """The reach of a request about some runs (one application's, or a recurring key's)."""

    #: most task slots a size may have
    max_slots: int
    #: most input bytes a target may read; 0 when the runs read none
    max_input_bytes: float
    #: what the runs are, for messages ("this run", "the runs of 'nightly'")
    subject: str = "the runs"

    @classmethod
    def of(
        cls, slots_seen: Iterable[int], inputs_seen: Iterable[float], subject: str = "the runs"
    ) -> Limits:
        slots = max((int(s) for s in slots_seen), default=1)
        inputs = max((float(i or 0) for i in inputs_seen), default=0.0)
        return cls(max(MIN_SLOTS, SLOT_FACTOR * slots), INPUT_FACTOR * inputs, subject)

    def check_sizes(self, executors: Sequence[int], cores: Sequence[int]) -> None:
        """Every executor count at every core count within ``max_slots`` (LimitExceeded naming
        ``executors``, or ``cores`` when one executor of those cores is already too many)."""
        top = max(cores)
        if top > self.max_slots:
            raise LimitExceeded("cores", f"{top} cores per executor: {self._beyond()}")
        slots = max(executors) * top
        if slots > self.max_slots:
            raise LimitExceeded(
                "executors",
                f"{max(executors):,} executors x {top} cores = {slots:,} task slots: "
                + self._beyond(),
            )

    def allowed(self, executors: Sequence[int], cores: int) -> list[int]:
        """The executor counts within ``max_slots`` at ``cores`` (for default curves)."""
        return [n for n in executors if n * cores <= self.max_slots] or [1]

    def check_input(self, param: str, input_bytes: float) -> None:
        """A target input within ``max_input_bytes`` (LimitExceeded naming ``param``)."""
        if self.max_input_bytes <= 0:
            raise LimitExceeded(param, f"{self.subject} read no input, so no input size applies")
        if not input_bytes <= self.max_input_bytes:
            raise LimitExceeded(
                param,
                f"{input_bytes:,.0f} input bytes is more than {INPUT_FACTOR} times the most "
                f"{self.subject} read (at most {self.max_input_bytes:,.0f})",
            )

    def check_work(self, cells: int, points: int, input_param: str | None = None) -> None:
        """A request's simulation within `MAX_WORK_CELLS` (LimitExceeded naming ``executors``,
        or ``input_param`` -- the input asked for, if any -- when one size alone is too much)."""
        if cells <= MAX_WORK_CELLS:
            return
        fit = int(points * MAX_WORK_CELLS / cells)
        what = (
            f"{points} sizes of {self.subject} mean {cells:,} task cells of simulation, more "
            f"than the {MAX_WORK_CELLS:,} one request may do"
        )
        if fit >= 1:
            raise LimitExceeded("executors", f"{what}: ask for at most {fit} sizes")
        raise LimitExceeded(input_param or "executors", f"{what}: ask for a smaller input")

    def _beyond(self) -> str:
        return (
            f"more than the {self.max_slots:,} task slots {self.subject} support ({SLOT_FACTOR} "
            f"times the largest size seen, at least {MIN_SLOTS:,})"
        )


_deadline: ContextVar[tuple[float, float] | None] = ContextVar("whatif_deadline", default=None)


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Let the simulations in the block compute for at most ``seconds``."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def check_budget() -> None:
    """Raise BudgetExceeded when the current budget (if any) has run out."""
    budget = _deadline.get()
    if budget is not None and time.monotonic() > budget[0]:
        raise BudgetExceeded(
            f"the simulation did not finish within its {budget[1]:g} s budget: ask for fewer "
            "executor or core counts, or a smaller input"
        )
