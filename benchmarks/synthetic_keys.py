"""Synthetic recurring keys whose durations follow known cost laws: the evaluation the prediction
forms are chosen on (docs/dev/models.md), so that the public corpora stay evaluations they were
not chosen on. Also the known answers of the regime tests.

A run's duration is its start-up plus a fixed cost plus a variable cost of its size, the variable
part spread over its task slots by Amdahl's law, plus per-iteration and per-task costs where the
key has them, times log-normal noise. The variable cost follows one of four laws, drawn per key:

- ``linear``: c * s (time per byte constant: the textbook assumption);
- ``power``: c * s^b, b in [0.5, 0.95] (cheaper per byte as the input grows: per-file and
  per-task costs amortised, better compression, JIT warm-up spread thinner);
- ``warmup``: c * s + w * (1 - exp(-s / s0)) (slow at first, then linear: a warm-up whose cost
  stops growing);
- ``nlogn``: c * s * log2(1 + s / s0) (a sort: dearer per byte as it grows).

Sizes grow over a key's runs (a trend with day-to-day noise), so a rolling origin extrapolates as
far as the trend takes it; :func:`keys` draws a fleet of such keys from one seed.

:func:`iteration_fleet` draws iterative keys only, whose iteration count (the ``--iters`` argument
of a loop that submits the same jobs once per round) grows over the key's runs, independently of
the input, so that later runs go beyond every iteration count seen: the regime where an
application's work must be extrapolated in rounds rather than in bytes. Half of them change
their task slots between runs from the first one on. It was written from that principle (work =
fixed + rounds x cost of a round, the round's cost a pass over the data), before any form was
measured on it.

Each iterative run also carries what its job timeline shows of one round (the ``round_ms``
feature): the cost of a round at its size and slots, with noise of the run's own size. Added from
the same principle (a round's wall time is the per-round cost the duration is made of) before
any form using it was measured.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from sparkscope.advisor.predict.backtest import Run
from sparkscope.advisor.predict.features import NUMERIC

LAWS = ("linear", "power", "warmup", "nlogn")
DAY_MS = 86_400_000
_COL = {n: i for i, n in enumerate(NUMERIC)}


@dataclass(frozen=True)
class Law:
    """The cost law of one key (the known answer)."""

    kind: str
    fixed_ms: float
    c: float
    b: float
    w: float
    s0: float
    alpha: float
    per_iteration_ms: float
    iteration_c: float
    per_task_ms: float

    def variable(self, s: float) -> float:
        if self.kind == "power":
            return self.c * s**self.b
        if self.kind == "warmup":
            return self.c * s + self.w * (1 - math.exp(-s / self.s0))
        if self.kind == "nlogn":
            return self.c * s * math.log2(1 + s / self.s0)
        return self.c * s

    def round_ms(self, s: float, slots: float) -> float:
        """The wall time of one round of the loop, noise-free (ms; 0 for a key without one)."""
        spread = (1 - self.alpha) + self.alpha / slots  # Amdahl: the parallel share shrinks
        return (self.per_iteration_ms + self.iteration_c * s) * spread

    def work(self, s: float, slots: float, iterations: float, tasks: float) -> float:
        """The duration beyond start-up, noise-free (ms)."""
        spread = (1 - self.alpha) + self.alpha / slots
        return (
            self.fixed_ms
            + self.variable(s) * spread
            + iterations * self.round_ms(s, slots)
            + tasks * self.per_task_ms
        )


def draw_law(
    rng: random.Random, base: float, kind: str, slots_vary: bool, iterative: bool, partitioned: bool
) -> Law:
    """A cost law for a key whose base size is ``base`` bytes."""
    fixed = rng.uniform(1_000, 8_000)
    share = rng.uniform(0.3, 3.0)  # the variable cost at the base size, relative to the fixed
    b = rng.uniform(0.5, 0.95)
    s0 = base * rng.uniform(0.2, 2.0)
    shape = {
        "linear": base,
        "power": base**b,
        "warmup": base + 0.5 * base * (1 - math.exp(-base / s0)),
        "nlogn": base * math.log2(1 + base / s0),
    }[kind]
    c = share * fixed / shape
    w = 0.5 * base * c if kind == "warmup" else 0.0
    return Law(
        kind=kind,
        fixed_ms=fixed,
        c=c,
        b=b,
        w=w,
        s0=s0,
        alpha=rng.uniform(0.3, 1.0) if slots_vary else 0.0,
        per_iteration_ms=rng.uniform(200, 2_000) if iterative else 0.0,
        # per byte of every round: a pass over the data, a tenth to a third of the variable cost
        iteration_c=rng.uniform(0.05, 0.3) * share * fixed / base if iterative else 0.0,
        per_task_ms=rng.uniform(2, 20) if partitioned else 0.0,
    )


def key_runs(
    rng: random.Random,
    key: str,
    n: int,
    kind: str | None = None,
    slots_vary: bool | None = None,
    iterative: bool | None = None,
    partitioned: bool | None = None,
    noise: float | None = None,
    growth: float | None = None,
    iteration_growth: float | None = None,
) -> tuple[list[Run], Law]:
    """The runs of one synthetic key (start order) and its law; unset options are drawn.
    ``iteration_growth``: the iteration count grows by this factor over the runs (from 3-5
    rounds, one round either way from day to day) instead of being drawn from 3-12 each run."""
    kind = kind or rng.choice(LAWS)
    slots_vary = rng.random() < 0.5 if slots_vary is None else slots_vary
    iterative = rng.random() < 0.25 if iterative is None else iterative
    partitioned = rng.random() < 0.25 if partitioned is None else partitioned
    sigma = rng.uniform(0.01, 0.05) if noise is None else noise
    grow = rng.uniform(2.0, 6.0) if growth is None else growth
    base = math.exp(rng.uniform(math.log(1e7), math.log(1e10)))
    law = draw_law(rng, base, kind, slots_vary, iterative, partitioned)
    slot_choices = rng.choice(((1, 2), (2, 4, 8), (4, 8, 16, 32))) if slots_vary else None
    fixed_slots = rng.choice((1, 2, 8, 16))
    first_rounds = rng.randint(3, 5) if iteration_growth else 0
    runs = []
    start0 = 1_800_000_000_000 + rng.randrange(1000) * DAY_MS
    for i in range(n):
        trend = 0.5 * grow ** (i / max(1, n - 1))  # from half the base to ``grow`` / 2 times it
        s = base * trend * math.exp(rng.gauss(0, 0.12)) * (0.7 if i % 7 in (5, 6) else 1.0)
        slots = float(rng.choice(slot_choices)) if slot_choices else float(fixed_slots)
        if iterative and iteration_growth:
            trend_rounds = first_rounds * iteration_growth ** (i / max(1, n - 1))
            iters = float(max(2, round(trend_rounds) + rng.randint(-1, 1)))
        else:
            iters = float(rng.randint(3, 12)) if iterative else 0.0
        partitions = float(rng.choice((8, 16, 64))) if partitioned else 200.0
        stages = 4.0 + 2 * iters
        tasks = stages * (partitions if partitioned else 10.0) + max(1.0, s / 128e6)
        startup = rng.uniform(2_000, 6_000)
        work = law.work(s, slots, iters, tasks if partitioned else 0.0)
        duration = (startup + work) * math.exp(rng.gauss(0, sigma))
        v = [0.0] * len(NUMERIC)
        v[_COL["input_bytes"]] = s
        v[_COL["input_records"]] = s / 100 * rng.uniform(0.98, 1.02)
        v[_COL["output_bytes"]] = s * 0.2 * rng.uniform(0.95, 1.05)
        v[_COL["shuffle_read_bytes"]] = s * 0.5
        v[_COL["tasks"]] = tasks
        v[_COL["stages"]] = stages
        v[_COL["jobs"]] = 2.0 + iters
        v[_COL["executors"]] = slots
        v[_COL["cores"]] = slots
        v[_COL["shuffle_partitions"]] = partitions
        v[_COL["aqe"]] = 1.0
        v[_COL["startup_ms"]] = startup
        v[_COL["iterations"]] = iters
        v[_COL["arg_0"]] = iters
        if iters > 0:
            # What the run's job timeline shows of one round: its cost, with the run's own noise
            # drawn apart (a part of a run varies as the whole does); from a generator of its
            # own, so that the rest of the fleet is drawn as before the timeline was added.
            timeline = random.Random(f"{key}/{i}")
            v[_COL["round_ms"]] = law.round_ms(s, slots) * math.exp(timeline.gauss(0, sigma))
        runs.append(Run(key, start0 + i * DAY_MS, duration, True, v))
    return runs, law


def keys(count: int, seed: int = 7, n_range: tuple[int, int] = (12, 24)) -> list[Run]:
    """``count`` keys' runs, every option drawn per key."""
    return [r for runs, _law in fleet(count, seed, n_range) for r in runs]


def fleet(
    count: int, seed: int = 7, n_range: tuple[int, int] = (12, 24)
) -> list[tuple[list[Run], Law]]:
    """``count`` keys: their runs and laws, every option drawn per key."""
    rng = random.Random(seed)
    return [key_runs(rng, f"synthetic-{k}", rng.randint(*n_range)) for k in range(count)]


def iteration_fleet(
    count: int, seed: int = 11, n_range: tuple[int, int] = (12, 24)
) -> list[tuple[list[Run], Law]]:
    """``count`` iterative keys whose iteration count grows 2-4x over their runs (see the module
    docstring); the input grows up to 2x, the law and the rest drawn per key."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        n = rng.randint(*n_range)
        out.append(
            key_runs(
                rng,
                f"synthetic-iterative-{k}",
                n,
                iterative=True,
                slots_vary=k % 2 == 1,
                growth=rng.uniform(1.0, 2.0),
                iteration_growth=rng.uniform(2.0, 4.0),
            )
        )
    return out
