"""What one what-if request may ask (limits from the runs it rests on), its time budget, and the
simulation of a larger input without building the larger task lists."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparkscope.advisor.whatif import simulate
from sparkscope.advisor.whatif.limits import (
    INPUT_FACTOR,
    MIN_SLOTS,
    SLOT_FACTOR,
    BudgetExceeded,
    LimitExceeded,
    Limits,
    check_budget,
    time_budget,
)
from sparkscope.advisor.whatif.sizing import parse_deadline


def test_limits_follow_the_largest_size_and_input_seen() -> None:
    small = Limits.of([8, 4], [1e6, 3e6])
    assert small.max_slots == MIN_SLOTS and small.max_input_bytes == INPUT_FACTOR * 3e6
    big = Limits.of([200 * 8], [0])
    assert big.max_slots == SLOT_FACTOR * 1600
    big.check_sizes([1, 2, 3200], [8])
    with pytest.raises(LimitExceeded) as err:
        big.check_sizes([3201], [8])
    assert err.value.param == "executors" and "25,608 task slots" in str(err.value)
    with pytest.raises(LimitExceeded) as err:
        big.check_sizes([1], [SLOT_FACTOR * 1600 + 1])
    assert err.value.param == "cores"
    with pytest.raises(LimitExceeded, match="read no input"):
        big.check_input("input_bytes", 1.0)
    small.check_input("input_bytes", 3e7)
    with pytest.raises(LimitExceeded) as err:
        small.check_input("input_bytes", 3e7 + 1)
    assert err.value.param == "input_bytes"
    with pytest.raises(LimitExceeded):
        small.check_input("input_bytes", math.inf)
    assert small.allowed([1, 512, 2048], 2) == [1, 512]


def test_the_budget_stops_a_simulation_at_its_next_check() -> None:
    check_budget()  # no budget: never
    with time_budget(0.0), pytest.raises(BudgetExceeded, match="0 s budget"):
        check_budget()
    with time_budget(60.0):
        check_budget()


def test_a_deadline_beyond_a_year_or_any_float_is_refused() -> None:
    assert parse_deadline(f"{366 * 24}h") == 366 * 86_400_000
    with pytest.raises(ValueError, match="at most 366 days"):
        parse_deadline(f"{366 * 24 + 1}h")
    # more digits than any float holds: refused before any arithmetic (digits are bounded)
    for text in ("9" * 309 + "ms", "9" * 400 + "h"):
        with pytest.raises(ValueError, match="is not a duration"):
            parse_deadline(text)


@pytest.mark.parametrize("slots", [1, 3, 16, 100])
@pytest.mark.parametrize("scale", [0.3, 1.7, 5.0, 40.0])
def test_repeated_tasks_simulate_as_the_repeated_list_would(slots: int, scale: float) -> None:
    rng = np.random.default_rng(7)
    tasks = rng.gamma(2.0, 500.0, size=(5, 64))
    width = max(1, round(tasks.shape[1] * scale))
    built = np.tile(tasks, (1, math.ceil(scale)))[:, :width]
    want = simulate._waves(built, slots)
    got = simulate._repeated_waves(tasks, slots, width)
    assert got == pytest.approx(want, rel=1e-12)
