"""The duration model on applications it was never chosen on: real Spark runs made here.

Every form of the prediction model was chosen on the synthetic fleets and the public corpora, so
their figures say how well it fits runs it has seen the like of. This benchmark makes new ones:
applications that appear in no corpus, run for real with ``spark-submit`` (the pyspark wheel's
Spark, local mode) on this machine, their event logs read by ``sparkscope fetch --event-logs``
into a fresh SQLite database and scored by ``sparkscope backtest``. Each draw has one
application of each kind issue 22 names as held-out misses:

- a recurring one whose last four runs are 2.8-4.6x its base volume, beyond every earlier run,
  after ten daily runs at 0.7-1.3x it: draw 1 ``customer_spend_rollup`` (two group-bys over a
  day of purchase events, two Parquet writes), draw 2 ``order_region_report`` (a join with a
  customer dimension, a ranking window, two writes), draw 3 ``visit_session_summary`` (sessions
  cut by a lag window per user, two writes);
- an iterative one never seen before, ``--iters`` rounds with one numbered job description per
  round, twelve runs whose round count is drawn in 2..12, input in 0.6-1.6x a base and one or
  two task slots, each drawn per run: draw 1 ``account_cluster_labels`` (label propagation
  over a day's account links), draw 2 ``store_centroid_refine`` (weighted k-means passes), draw 3
  ``weight_trend_fit`` (gradient steps of a weighted line fit).

The runs of a draw come from its fixed seed; draw 1 was scored once before draw 2 was written,
draw 3 was written before the interval change it judges, draw 4 (draw 1's recurring script and
draw 2's iterative one, other sizes, a seed of its own) after the next one was adopted and before
it was measured there, draw 5 (draw 2's recurring script, draw 1's iterative one) with the rule
of the next choice, before it was measured, draw 6 (draw 3's scripts, other sizes) after that
choice, to confirm the adopted form on runs nothing was chosen on; nothing in the model reads any. The logs are kept in
``--out`` (default ``~/.cache/sparkscope-heldout/draw-N``) and made again only with
``--regenerate``: a run takes 10-50 s, a draw about ten minutes.

    python -m benchmarks.heldout_spark [--draw N] [--out DIR] [--regenerate]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from benchmarks.heldout_apps import (
    CENTROIDS,
    GENERATE,
    GRADIENT,
    LABELS,
    REPORT,
    ROLLUP,
    SESSIONS,
)

SEED = 20261202
FIRST_DAY = date(2026, 11, 1)


@dataclass(frozen=True)
class App:
    """One application of a draw: its script, the input it reads and that input's base size."""

    name: str
    script: str
    kind: str
    base_rows: int


@dataclass(frozen=True)
class Draw:
    """The runs of one draw: a recurring application whose last runs are far larger than its
    base, and an iterative one whose round count, input and slots vary."""

    seed: int
    recurring: App
    big_scales: tuple[float, ...]
    iterative: App


DRAWS = {
    1: Draw(
        SEED,
        App("rollup", ROLLUP, "events", 1_500_000),
        (3.0, 3.5, 4.0, 4.6),
        App("labels", LABELS, "edges", 400_000),
    ),
    2: Draw(
        SEED + 1,
        App("report", REPORT, "events", 1_200_000),
        (2.8, 3.4, 4.0, 4.4),
        App("centroids", CENTROIDS, "points", 300_000),
    ),
    3: Draw(
        SEED + 2,
        App("sessions", SESSIONS, "events", 1_000_000),
        (3.2, 3.6, 4.2, 4.5),
        App("gradient", GRADIENT, "points", 2_000_000),
    ),
    # The scripts of draws 1 and 2 paired anew, from a seed of its own, at other base sizes:
    # written after the Student-t intervals were adopted, before anything was measured on it.
    4: Draw(
        SEED + 3,
        App("rollup", ROLLUP, "events", 1_200_000),
        (2.9, 3.3, 3.8, 4.3),
        App("centroids", CENTROIDS, "points", 400_000),
    ),
    # Draw 2's recurring script and draw 1's iterative one, a seed of its own: written with the
    # rule that judges the flat rounds' prior, before that form was measured on any draw.
    5: Draw(
        SEED + 4,
        App("report", REPORT, "events", 1_000_000),
        (3.1, 3.5, 3.9, 4.4),
        App("labels", LABELS, "edges", 500_000),
    ),
    # Draw 3's two scripts again, other base sizes and a seed of its own: written after the flat
    # rounds' prior was adopted, with no form waiting on it (a confirmation of the adopted one).
    6: Draw(
        SEED + 5,
        App("sessions", SESSIONS, "events", 1_300_000),
        (3.0, 3.4, 3.9, 4.6),
        App("gradient", GRADIENT, "points", 1_500_000),
    ),
}


@dataclass(frozen=True)
class PlannedRun:
    app: str
    day: date
    scale: float
    slots: int
    iters: int = 0


def plan(draw: Draw) -> list[PlannedRun]:
    """The runs of ``draw``, in order, drawn from its seed."""
    rng = random.Random(draw.seed)
    rec, it = draw.recurring.name, draw.iterative.name
    runs = [
        PlannedRun(rec, FIRST_DAY + timedelta(days=i), round(rng.uniform(0.7, 1.3), 3), 2)
        for i in range(10)
    ]
    runs += [
        PlannedRun(rec, FIRST_DAY + timedelta(days=10 + i), scale, 2)
        for i, scale in enumerate(draw.big_scales)
    ]
    runs += [
        PlannedRun(
            it,
            FIRST_DAY + timedelta(days=i),
            round(rng.uniform(0.6, 1.6), 3),
            rng.choice((1, 2)),
            rng.randint(2, 12),
        )
        for i in range(12)
    ]
    return runs


def _spark_env() -> dict[str, str]:
    import pyspark

    return {
        **os.environ,
        "SPARK_HOME": os.path.dirname(pyspark.__file__),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def _submit(script: Path, master: str, args: list[str], logs: Path | None) -> float:
    import pyspark

    submit = Path(os.path.dirname(pyspark.__file__)) / "bin" / "spark-submit"
    conf = ["--conf", "spark.sql.shuffle.partitions=8", "--conf", "spark.ui.enabled=false"]
    if logs is not None:
        conf += [
            "--conf",
            "spark.eventLog.enabled=true",
            "--conf",
            f"spark.eventLog.dir={logs.as_uri()}",
        ]
    else:
        conf += ["--conf", "spark.eventLog.enabled=false"]
    started = time.perf_counter()
    done = subprocess.run(
        [str(submit), "--master", master, "--driver-memory", "2g", *conf, str(script), *args],
        env=_spark_env(),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"spark-submit {script.name} {' '.join(args)} failed:\n{done.stderr[-3000:]}"
        )
    return time.perf_counter() - started


def generate(draw: Draw, out: Path) -> None:
    """Write the inputs (no event log), then run every planned run (event logs in out/logs)."""
    scripts = out / "apps"
    scripts.mkdir(parents=True, exist_ok=True)
    apps = {a.name: a for a in (draw.recurring, draw.iterative)}
    (scripts / "generate.py").write_text(GENERATE)
    for app in apps.values():
        (scripts / f"{app.name}.py").write_text(app.script)
    runs = plan(draw)
    spec = []
    for i, r in enumerate(runs):
        app = apps[r.app]
        rows = int(app.base_rows * r.scale)
        spec.append({
            "path": str(out / "inputs" / f"{r.app}-{r.day.isoformat()}"),
            "kind": app.kind, "rows": rows, "seed": draw.seed + i,
            "users": rows // 20, "day_ms": 0, "nodes": rows // 3,
        })  # fmt: skip
    (out / "inputs.json").write_text(json.dumps(spec, indent=1))
    print(f"writing {len(spec)} inputs ...", flush=True)
    _submit(scripts / "generate.py", "local[2]", [str(out / "inputs.json")], None)
    logs = out / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    for i, (r, item) in enumerate(zip(runs, spec, strict=True)):
        script = scripts / f"{r.app}.py"
        args: list[str] = [
            "--day",
            r.day.isoformat(),
            "--input",
            str(item["path"]),
            "--out",
            str(out / "outputs" / f"{i}"),
        ]
        if r.iters:
            args += ["--iters", str(r.iters)]
        seconds = _submit(script, f"local[{r.slots}]", args, logs)
        print(f"  {i + 1:2d}/{len(runs)} {r.app} {r.day} x{r.scale} local[{r.slots}] "
              f"iters {r.iters}: {seconds:.1f} s", flush=True)  # fmt: skip


def measure(out: Path) -> None:
    """Read the logs into a fresh SQLite database and print ``sparkscope backtest``."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SPARKSCOPE_DATABASE_URL": f"sqlite:///{tmp}/heldout.db"}
        env.pop("SPARKSCOPE_CONFIG", None)
        cli = [sys.executable, "-m", "sparkscope"]
        for step in (["db", "upgrade"], ["fetch", "--event-logs", str(out / "logs")]):
            done = subprocess.run(cli + step, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"sparkscope {' '.join(step)} failed:\n{done.stdout}{done.stderr}")
        for args in ([], ["--json"]):
            done = subprocess.run(
                cli + ["backtest", *args], env=env, capture_output=True, text=True
            )
            print(done.stdout, end="")
            if args:
                (out / "backtest.json").write_text(done.stdout)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draw", type=int, choices=sorted(DRAWS), default=1, help="which set of runs")
    ap.add_argument("--out", type=Path, help="default ~/.cache/sparkscope-heldout/draw-N")
    ap.add_argument("--regenerate", action="store_true", help="run Spark again even if logs exist")
    args = ap.parse_args(argv)
    args.out = args.out or Path.home() / ".cache" / "sparkscope-heldout" / f"draw-{args.draw}"
    if (
        args.regenerate
        or not (args.out / "logs").is_dir()
        or not any((args.out / "logs").iterdir())
    ):
        generate(DRAWS[args.draw], args.out)
    measure(args.out)


if __name__ == "__main__":
    main()
