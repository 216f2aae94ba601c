"""What-if benchmark: accuracy on the recorded scaling corpus and speed on a big application.

1. Accuracy: replays demo/scaling-events (36 real runs of 3 applications at 1-8 executors and two
   inputs) into a throwaway SQLite database with `sparkscope fetch --url` and prints, all out of
   sample: the bare simulation and the single-run what-if (each run predicts every other run of
   its application and input) corrected by the other applications' contention and start-up (the
   server's prior) or by the application's own other runs, the history-calibrated model (leave one run
   out), and sizing (deadlines between the fastest and slowest real run of each application and
   input).
2. Speed: stores one application of 2,000 stages and 200,000 tasks (quantiles, totals, the
   slowest tasks of the big stages) and times the what-if curve of 10 sizes from the database
   (load + plan + 10 simulations), cold (first request in the process) and warm (median of 5).

    python -m benchmarks.whatif_bench [--stages 2000] [--tasks 200000] [--skip-accuracy]

Targets: single-run median <= 10%, P90 <= 25%; leave-one-out median <= 6%, P90 <= 15%; sizing
meets the deadline >= 90%, cheapest >= 80%; a curve of 10 sizes <= 200 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "demo" / "scaling-events"
SIZES = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]


def _fetch_corpus(url: str) -> None:
    from click.testing import CliRunner

    from sparkscope import migrate
    from sparkscope.cli.main import cli

    migrate.upgrade(url)
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(CORPUS)], env={"SPARKSCOPE_DATABASE_URL": url}
    )
    if result.exit_code != 0:
        raise SystemExit(f"replaying {CORPUS} failed: {result.output}")


def accuracy(url: str) -> dict[str, Any]:
    """The corpus figures (all out of sample)."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from sparkscope.advisor.whatif import evaluate
    from sparkscope.whatif.calibration import key_histories

    engine = create_engine(url)
    with Session(engine) as session:
        runs = key_histories(session)
    engine.dispose()
    loo, coverage = evaluate.leave_one_out(runs)
    return {
        "runs": len(runs),
        "bare": evaluate.single_run(runs, "none"),
        "single": evaluate.single_run(runs, "cluster"),
        "own": evaluate.single_run(runs, "history"),
        "loo": loo,
        "coverage": coverage,
        "sizing": evaluate.sizing(runs),
    }


def _store_big_app(url: str, n_stages: int, n_tasks: int) -> str:
    """One synthetic application with realistic per-stage data, stored like a fetch would."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from sparkscope import migrate
    from sparkscope.db import now_ms
    from sparkscope.models.application import (
        Application,
        Executor,
        Stage,
        StageTaskDistribution,
        Task,
    )
    from sparkscope.models.fetch import HistoryServer
    from sparkscope.models.whatif import WhatIfInput
    from sparkscope.whatif import inputs as wi
    from sparkscope.whatif.calibration import gather

    migrate.upgrade(url)
    rnd = random.Random(14)
    grid = [round(i * 0.05, 2) for i in range(21)]
    per_stage = n_tasks // n_stages
    engine = create_engine(url)
    with Session(engine) as session, session.begin():
        server = HistoryServer(name="bench", url="http://bench", created_at_ms=now_ms())
        session.add(server)
        session.flush()
        app = Application(
            server_id=server.id,
            app_id="app-big",
            attempt_id="",
            name="big",
            start_time_ms=0,
            end_time_ms=0,
            duration_ms=0,
            completed=True,
            fetched_at_ms=now_ms(),
        )
        session.add(app)
        session.flush()
        for e in range(8):
            session.add(
                Executor(application_id=app.id, executor_id=str(e), is_driver=False, total_cores=4)
            )
        session.add(
            Executor(application_id=app.id, executor_id="driver", is_driver=True, total_cores=0)
        )
        t = 5000
        for s in range(n_stages):
            base = rnd.lognormvariate(5, 1)
            q = [base * (0.3 + 1.4 * g) ** 2 for g in grid]
            total = sum(q) / len(q) * per_stage
            wall = int(total / 32 + q[-1]) + 20
            session.add(
                Stage(
                    application_id=app.id,
                    stage_id=s,
                    attempt_id=0,
                    status="COMPLETE",
                    num_tasks=per_stage,
                    num_complete_tasks=per_stage,
                    submission_time_ms=t,
                    first_task_launched_time_ms=t + 5,
                    completion_time_ms=t + wall,
                    executor_run_time_ms=int(total),
                )
            )
            session.add(
                StageTaskDistribution(
                    application_id=app.id,
                    stage_id=s,
                    attempt_id=0,
                    quantiles=grid,
                    metrics={"executor_run_time_ms": q, "duration_ms": [v + 4 for v in q]},
                )
            )
            if s % 40 == 0:  # the stages the fetcher keeps the slowest tasks of
                for k in range(20):
                    session.add(
                        Task(
                            application_id=app.id,
                            stage_id=s,
                            stage_attempt_id=0,
                            task_id=s * 100_000 + k,
                            index=k,
                            attempt=0,
                            status="SUCCESS",
                            kept_because="slowest",
                            executor_run_time_ms=int(q[-1] * (1 - k / 40)),
                        )
                    )
            t += wall + 15
        app.end_time_ms = t + 500
        app.duration_ms = t + 500
        session.flush()
        # What a fetch stores: the encoded what-if input.
        session.add(
            WhatIfInput(
                application_id=app.id, format=wi.FORMAT, data=wi.encode(gather(session, app))
            )
        )
    engine.dispose()
    return url


def speed(url: str) -> dict[str, float]:
    """Cold and warm time of a curve of 10 sizes from the database."""
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from sparkscope.models.application import Application
    from sparkscope.whatif.answers import app_whatif

    engine = create_engine(url)
    times = []
    with Session(engine) as session:
        app = session.scalars(select(Application).where(Application.app_id == "app-big")).one()
        for _ in range(6):
            started = time.perf_counter()
            body = app_whatif(session, app, SIZES)
            times.append(time.perf_counter() - started)
            session.expire_all()
    engine.dispose()
    assert len(body["points"]) == len(SIZES)
    return {"cold_ms": times[0] * 1000, "warm_ms": statistics.median(times[1:]) * 1000}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.whatif_bench")
    parser.add_argument("--stages", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--skip-accuracy", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_accuracy:
            url = f"sqlite:///{Path(tmp) / 'corpus.db'}"
            _fetch_corpus(url)
            acc = accuracy(url)
            print(f"what-if accuracy on {CORPUS.relative_to(ROOT)} ({acc['runs']} runs):")
            print(f"  bare simulation (no correction)      {acc['bare']}")
            print(f"  single run, the server's prior       {acc['single']}  (target 10% / 25%)")
            print(f"  single run, the key's other runs     {acc['own']}")
            print(f"  history-calibrated, leave one out    {acc['loo']}  (target 6% / 15%)")
            print(f"  runs inside their predicted interval {acc['coverage']:.0%}")
            s = acc["sizing"]
            print(
                f"  sizing ({s['cases']} deadlines)            meets {s['meets']:.0%} (target 90%),"
                f" cheapest {s['cheapest']:.0%} (target 80%)"
            )
        url = _store_big_app(f"sqlite:///{Path(tmp) / 'big.db'}", args.stages, args.tasks)
        sp = speed(url)
        print(
            f"what-if curve of {len(SIZES)} sizes, {args.stages} stages / {args.tasks} tasks,"
            f" from SQLite: cold {sp['cold_ms']:.0f} ms, warm {sp['warm_ms']:.0f} ms (target <= 200 ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
