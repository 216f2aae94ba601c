"""Prediction speed: one run of a key with 1,000 earlier runs, and the backtest over a fleet.

    python -m benchmarks.predict_bench [--apps 100000]

Numerics only (the database reads are not timed): (1) ``rolling.predict_run`` for the newest run
of a key with 1,000 runs, as at fetch time (earlier points given); (2) ``run_backtest`` over
``--apps`` synthetic runs shaped like the fleet generator's (about 50 runs per name, one name with
1,000 runs), class-aware model included.
"""

from __future__ import annotations

import argparse
import random
import time

from sparkscope.advisor import rolling
from sparkscope.advisor.backtest import Run, metrics, run_backtest
from sparkscope.advisor.features import NUMERIC

DAY_MS = 86_400_000


def _vector(rng: random.Random, size: float) -> list[float]:
    v = [0.0] * len(NUMERIC)
    v[NUMERIC.index("input_bytes")] = size
    v[NUMERIC.index("shuffle_read_bytes")] = size * rng.uniform(0.2, 1.0)
    v[NUMERIC.index("tasks")] = rng.choice((50, 200, 1000))
    v[NUMERIC.index("cores")] = rng.choice((8, 16, 32))
    v[NUMERIC.index("shuffle_partitions")] = rng.choice((200, 400))
    v[NUMERIC.index("aqe")] = 1.0
    return v


def fleet(apps: int, seed: int = 42) -> list[Run]:
    rng = random.Random(seed)
    runs: list[Run] = []
    names = max(10, apps // 50)
    for i in range(apps):
        key = "recurring-1000" if i < min(1000, apps // 10) else f"name-{rng.randrange(names)}"
        size = rng.lognormvariate(22, 0.3)
        duration = 60_000 + size * 2e-4 * rng.lognormvariate(0, 0.1)
        runs.append(Run(key, i * 60_000, duration, rng.random() > 0.02, _vector(rng, size)))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--apps", type=int, default=100_000)
    args = parser.parse_args()
    import numpy as np

    key = [r for r in fleet(20_000) if r.key == "recurring-1000"][:1001]
    X = np.array([r.vector for r in key])
    y = np.array([r.duration_ms or 0.0 for r in key])
    ok = np.ones(len(key), bool)
    t = np.array([float(r.start_ms) for r in key])
    points: list[rolling.Point | None] = []
    for i in range(len(key) - 1):
        points.append(rolling.predict_run(X, y, ok, t, i, points, 0.8))
    started = time.perf_counter()
    reps = 50
    for _ in range(reps):
        rolling.predict_run(X, y, ok, t, len(key) - 1, points, 0.8)
        rolling.next_forecast(X[:-1], y[:-1], ok[:-1], t[:-1], points, 0.8)
    per_app = (time.perf_counter() - started) / reps * 1000
    print(f"predict one run (key with 1,000 runs) + next-run forecast: {per_app:.1f} ms")

    runs = fleet(args.apps)
    started = time.perf_counter()
    results = run_backtest(runs, 0.8)
    seconds = time.perf_counter() - started
    m = metrics(results.values(), 0.8, 5)
    print(
        f"backtest over {args.apps:,} runs in {len(results):,} keys: {seconds:.1f} s "
        f"(MAPE {100 * (m.mape or 0):.1f}%, coverage {100 * (m.coverage or 0):.0f}%)"
    )


if __name__ == "__main__":
    main()
