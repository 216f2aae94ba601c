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
draw 3 was written before the interval change it judges, and nothing in the model reads any. The logs are kept in ``--out`` (default
``~/.cache/sparkscope-heldout/draw-N``) and made again only with ``--regenerate``: a run takes
10-40 s, a draw about ten minutes.

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

SEED = 20261202
FIRST_DAY = date(2026, 11, 1)

GENERATE = """
import json, os, sys
from pyspark.sql import SparkSession, functions as F

spec = json.load(open(sys.argv[1]))
spark = SparkSession.builder.appName("heldout-input-writer").getOrCreate()
for item in spec:
    if os.path.exists(os.path.join(item["path"], "_SUCCESS")):
        continue
    seed, rows = item["seed"], item["rows"]
    ids = spark.range(rows, numPartitions=8)
    h = F.abs(F.xxhash64("id", F.lit(seed)))
    if item["kind"] == "events":
        df = ids.select(
            (h % item["users"]).alias("user_id"),
            (F.abs(F.xxhash64("id", F.lit(seed + 1))) % 12).cast("int").alias("kind"),
            (F.rand(seed) * 100).alias("amount"),
            (F.lit(item["day_ms"]) + (F.col("id") * 7919) % 86400000).alias("ts"),
        )
    elif item["kind"] == "points":
        centre = (h % 8).cast("double")
        df = ids.select(
            (centre * 10 + F.randn(seed) * 2).alias("x"),
            ((centre * 7) % 13 + F.randn(seed + 1) * 2).alias("y"),
            (F.rand(seed + 2) * 5).alias("weight"),
        )
    else:
        nodes = item["nodes"]
        src = h % nodes
        df = ids.select(
            src.alias("src"),
            ((src + F.floor(F.rand(seed) * 40) + 1) % nodes).alias("dst"),
            (F.rand(seed + 2) * 1000).alias("amount"),
        )
    df.write.mode("overwrite").parquet(item["path"])
spark.stop()
"""

#: What every measured application's script starts with: its imports and its ``--name value``
#: arguments.
PRELUDE = """
import sys
from pyspark import StorageLevel
from pyspark.sql import SparkSession, Window, functions as F

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
"""

ROLLUP = (
    PRELUDE
    + """
spark = SparkSession.builder.appName("customer_spend_rollup").getOrCreate()
events = spark.read.parquet(args["--input"])
per_kind = events.groupBy("user_id", "kind").agg(
    F.count("*").alias("n"), F.sum("amount").alias("spend"), F.max("ts").alias("last_ts")
)
per_user = per_kind.groupBy("user_id").agg(
    F.sum("spend").alias("spend"), F.sum("n").alias("events"), F.countDistinct("kind").alias("kinds")
)
per_user.write.mode("overwrite").parquet(args["--out"] + "/per_user")
per_user.orderBy(F.desc("spend")).limit(1000).write.mode("overwrite").parquet(args["--out"] + "/top")
spark.stop()
"""
)

LABELS = (
    PRELUDE
    + """
iters = int(args["--iters"])
spark = SparkSession.builder.appName("account_cluster_labels").getOrCreate()
sc = spark.sparkContext
sc.setJobDescription("load links")
e = spark.read.parquet(args["--input"]).where("src != dst").select("src", "dst")
links = e.union(e.select(F.col("dst").alias("src"), F.col("src").alias("dst"))).distinct()
links = links.persist(StorageLevel.MEMORY_AND_DISK)
links.count()
sc.setJobDescription("initial labels")
labels = links.select("src").distinct().withColumn("label", F.col("src")).localCheckpoint(eager=True)
for step in range(1, iters + 1):
    sc.setJobDescription(f"propagate labels, step {step} of {iters}")
    theirs = labels.select(F.col("src").alias("dst"), F.col("label").alias("theirs"))
    best = links.join(theirs, "dst").groupBy("src").agg(F.min("theirs").alias("theirs"))
    new = labels.join(best, "src", "left").select(
        "src", F.least("label", F.coalesce("theirs", "label")).alias("label")
    ).localCheckpoint(eager=True)
    new.join(labels.select("src", F.col("label").alias("old")), "src").where("label != old").count()
    labels = new
sc.setJobDescription("write clusters")
sizes = labels.groupBy("label").count().orderBy(F.desc("count")).limit(1000)
sizes.write.mode("overwrite").parquet(args["--out"])
spark.stop()
"""
)


REPORT = (
    PRELUDE
    + """
spark = SparkSession.builder.appName("order_region_report").getOrCreate()
orders = spark.read.parquet(args["--input"])
users = orders.agg(F.max("user_id")).first()[0] + 1
customers = spark.range(users).select(
    F.col("id").alias("user_id"), (F.col("id") % 37).alias("region"), (F.col("id") % 5).alias("tier")
)
joined = orders.join(customers, "user_id")
per_region = joined.groupBy("region", "kind").agg(
    F.sum("amount").alias("revenue"), F.countDistinct("user_id").alias("buyers")
)
ranked = per_region.withColumn(
    "rank", F.row_number().over(Window.partitionBy("region").orderBy(F.desc("revenue")))
)
ranked.where("rank <= 3").write.mode("overwrite").parquet(args["--out"] + "/top_kinds")
joined.groupBy("tier").agg(F.avg("amount").alias("basket")).write.mode("overwrite").parquet(
    args["--out"] + "/tiers"
)
spark.stop()
"""
)

CENTROIDS = (
    PRELUDE
    + """
passes = int(args["--iters"])
spark = SparkSession.builder.appName("store_centroid_refine").getOrCreate()
sc = spark.sparkContext
sc.setJobDescription("load points")
points = spark.read.parquet(args["--input"]).persist(StorageLevel.MEMORY_AND_DISK)
points.count()
centres = [(float(i) * 9.0, float(i % 4) * 3.0) for i in range(8)]
for step in range(1, passes + 1):
    sc.setJobDescription(f"refine centroids, pass {step} of {passes}")
    c = spark.createDataFrame([(i, cx, cy) for i, (cx, cy) in enumerate(centres)], ["c", "cx", "cy"])
    d = (F.col("x") - F.col("cx")) ** 2 + (F.col("y") - F.col("cy")) ** 2
    scored = points.crossJoin(F.broadcast(c)).withColumn("d", d)
    best = scored.groupBy("x", "y", "weight").agg(F.min_by("c", "d").alias("c"))
    moved = best.groupBy("c").agg(
        (F.sum(F.col("x") * F.col("weight")) / F.sum("weight")).alias("cx"),
        (F.sum(F.col("y") * F.col("weight")) / F.sum("weight")).alias("cy"),
    ).collect()
    for row in moved:
        centres[int(row["c"])] = (float(row["cx"]), float(row["cy"]))
sc.setJobDescription("write centroids")
spark.createDataFrame([(i, cx, cy) for i, (cx, cy) in enumerate(centres)], ["c", "cx", "cy"]).write.mode(
    "overwrite"
).parquet(args["--out"])
spark.stop()
"""
)


SESSIONS = (
    PRELUDE
    + """
spark = SparkSession.builder.appName("visit_session_summary").getOrCreate()
events = spark.read.parquet(args["--input"])
by_user = Window.partitionBy("user_id").orderBy("ts")
gaps = events.withColumn("gap", F.col("ts") - F.lag("ts").over(by_user))
starts = gaps.withColumn("starts", F.when(F.col("gap").isNull() | (F.col("gap") > 1_800_000), 1).otherwise(0))
sessions = starts.withColumn("session", F.sum("starts").over(by_user)).groupBy("user_id", "session").agg(
    F.count("*").alias("events"), F.sum("amount").alias("spend"), (F.max("ts") - F.min("ts")).alias("span")
)
sessions.groupBy("events").agg(F.count("*").alias("sessions"), F.avg("spend").alias("spend")).write.mode(
    "overwrite"
).parquet(args["--out"] + "/by_length")
sessions.where("spend > 500").write.mode("overwrite").parquet(args["--out"] + "/big")
spark.stop()
"""
)

GRADIENT = (
    PRELUDE
    + """
steps = int(args["--iters"])
spark = SparkSession.builder.appName("weight_trend_fit").getOrCreate()
sc = spark.sparkContext
sc.setJobDescription("load points")
points = spark.read.parquet(args["--input"]).persist(StorageLevel.MEMORY_AND_DISK)
n = points.count()
a, b = 0.0, 0.0
for step in range(1, steps + 1):
    sc.setJobDescription(f"gradient step {step} of {steps}")
    err = F.lit(a) * F.col("x") + F.lit(b) - F.col("y")
    g = points.select((err * F.col("x") * F.col("weight")).alias("ga"), (err * F.col("weight")).alias("gb"))
    row = g.agg(F.sum("ga").alias("ga"), F.sum("gb").alias("gb")).first()
    a -= 1e-5 * row["ga"] / n
    b -= 1e-3 * row["gb"] / n
sc.setJobDescription("write fit")
spark.createDataFrame([(a, b, n)], ["a", "b", "n"]).write.mode("overwrite").parquet(args["--out"])
spark.stop()
"""
)


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
        args = [
            "--day",
            r.day.isoformat(),
            "--input",
            item["path"],
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
