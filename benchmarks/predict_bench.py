"""Prediction speed: a new run of a key with 1,000 earlier runs, and the backtest over a fleet.

    python -m benchmarks.predict_bench [--apps 100000]

(1) Fetch time, database included: a throwaway SQLite file holds one key with 1,000 stored runs
(on 8, 16 or 32 task slots) and their predictions; one more run is added and ``predictions.refresh_server`` (the fetch hook's
work: find the stale run, read the key's stored history, predict, verdict, forecast, store) is
timed. (2) Numerics only: ``rolling.predict_run`` plus the next-run forecast for the newest run of
a key with 1,000 runs. (3) ``run_backtest`` over ``--apps`` synthetic runs shaped like the fleet
generator's (about 50 runs per name, one name with 1,000 runs), class-aware model included; for
the database read too, run ``sparkscope backtest`` on a fleet made by ``benchmarks.fleet``.
"""

from __future__ import annotations

import argparse
import random
import time

from sparkscope.advisor.predict import rolling
from sparkscope.advisor.predict.backtest import Run, metrics, run_backtest
from sparkscope.advisor.predict.features import NUMERIC

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


def fetch_time(runs: int = 1000, class_aware: bool = True, reps: int = 5) -> dict[str, list[float]]:
    """ms to bring predictions up to date after one new run of a key with ``runs`` runs, ``reps``
    times each: ``refit`` when the class-aware model is refitted (once per 50% growth of the
    server's runs; measured once), ``reused`` when the stored model is reused and this process
    already holds it unpickled (a fetch loop, or the second server of a fetch run), ``cold`` when
    it must be read and unpickled first (the first refresh of a `sparkscope fetch` process)."""
    import tempfile

    from sparkscope import migrate
    from sparkscope.config.loader import PredictionConfig
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.models.application import Application, EnvironmentProperty, Executor
    from sparkscope.models.fetch import HistoryServer
    from sparkscope.prediction import refresh as predictions
    from sparkscope.prediction import server_models as prediction_shared

    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        migrate.upgrade(url)
        factory = make_sessionmaker(make_engine(url))

        def add(session: object, i: int) -> None:
            size = int(1e9 * (1 + i / runs) * rng.uniform(0.8, 1.2))
            start = 1_700_000_000_000 + i * DAY_MS
            # The task slots change between runs (the slot line and its F-test are fitted).
            slots = rng.choice((8, 16, 32))
            duration = int(60_000 + size * 8e-4 / slots * rng.uniform(0.95, 1.05))
            app = Application(
                server_id=1, app_id=f"app-{i}", attempt_id="", name="nightly", start_time_ms=start,
                end_time_ms=start + duration, duration_ms=duration, completed=True,
                fetched_at_ms=start + duration, input_bytes=size, output_bytes=size // 10,
                num_tasks=200, num_stages=4, num_jobs=2, num_executors=4,
            )  # fmt: skip
            session.add(app)  # type: ignore[attr-defined]
            session.flush()  # type: ignore[attr-defined]
            session.add(  # type: ignore[attr-defined]
                EnvironmentProperty(
                    application_id=app.id, section="spark", name="spark.executor.cores", value="4"
                )
            )
            session.add(  # type: ignore[attr-defined]
                Executor(application_id=app.id, executor_id="1", is_driver=False, total_cores=slots)
            )

        with factory() as session, session.begin():
            session.add(HistoryServer(id=1, name="bench", url="-", created_at_ms=0))
            for i in range(runs):
                add(session, i)
        cfg = PredictionConfig(class_aware=class_aware)
        predictions.refresh_server(factory, 1, cfg)
        took: dict[str, list[float]] = {"refit": [], "reused": [], "cold": []}
        plan = ["refit"] + ["reused"] * reps + ["cold"] * reps
        for extra, kind in enumerate(plan):
            with factory() as session, session.begin():
                add(session, runs + extra)
            if kind == "cold":
                prediction_shared.forget_models()
            started = time.process_time()
            stats = predictions.refresh_server(factory, 1, cfg)
            took[kind].append((time.process_time() - started) * 1000)
            assert stats.runs == 1
        prediction_shared.forget_models()
        return took


def _spread(values: list[float]) -> str:
    values = sorted(values)
    if not values:
        return "-"
    return f"median {values[len(values) // 2]:.1f} (min {values[0]:.1f}, max {values[-1]:.1f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--apps", type=int, default=100_000)
    args = parser.parse_args(argv)
    import numpy as np

    fetch_time(100, reps=1)  # imports and first-use costs out of the way
    on = fetch_time()
    off = fetch_time(class_aware=False)
    print(
        "fetch time, 1 new run of a key with 1,000 runs (SQLite, database work included), CPU ms:"
    )
    print(f"  class-aware model reused, held by the process: {_spread(on['reused'])}")
    print(f"  class-aware model reused, read and unpickled:  {_spread(on['cold'])}")
    print(f"  class-aware model refitted:                    {_spread(on['refit'])}")
    print(f"  class-aware model off:                         {_spread(off['reused'])}")
    key = [r for r in fleet(20_000) if r.key == "recurring-1000"][:1001]
    X = np.array([r.vector for r in key])
    y = np.array([r.duration_ms or 0.0 for r in key])
    ok = np.ones(len(key), bool)
    t = np.array([float(r.start_ms) for r in key])
    points: list[rolling.PredictedRun | None] = []
    for i in range(len(key) - 1):
        points.append(rolling.predict_run(X, y, ok, t, i, points, 0.8))
    started = time.process_time()
    reps = 50
    for _ in range(reps):
        rolling.predict_run(X, y, ok, t, len(key) - 1, points, 0.8)
        rolling.next_forecast(X[:-1], y[:-1], ok[:-1], t[:-1], points, 0.8)
    per_app = (time.process_time() - started) / reps * 1000
    print(f"predict one run (key with 1,000 runs) + next-run forecast, CPU: {per_app:.1f} ms")

    runs = fleet(args.apps)
    started, cpu = time.perf_counter(), time.process_time()
    results = run_backtest(runs, 0.8)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    m = metrics(results.values(), 0.8, 5)
    print(
        f"backtest over {args.apps:,} runs in {len(results):,} keys: {seconds:.1f} s "
        f"(CPU {cpu:.1f} s) "
        f"(MAPE {100 * (m.mape or 0):.1f}%, coverage {100 * (m.coverage or 0):.0f}%)"
    )


if __name__ == "__main__":
    main()
