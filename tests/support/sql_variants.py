"""Spark applications with variants of the SQL-plan problems, run for real (PySpark, local mode) to
make the event logs in tests/fixtures/eventlogs-sql/.

They differ from the shared corpus on purpose (other operators, other settings, other ways to
cause the same problem), and the SQL checks were not tuned on them: they are a held-out check of
the checks, through a real History Server (tests/fetcher/test_sql_shs.py). Each application runs in
a process of its own (PySpark keeps a builder's options across sessions of one process).

    python -m tests.support.sql_variants OUT_LOG_DIR SCRATCH_DIR [name ...]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: application name -> (the problem it shows or None for healthy, what it does)
VARIANTS: dict[str, tuple[str | None, str]] = {
    "sqlv_left_join_low_threshold": (
        "sql_smj_should_broadcast",
        "left outer join to a 4 MB dimension under a 1 MB broadcast threshold",
    ),
    "sqlv_auto_broadcast_raised_threshold": (
        "sql_large_broadcast",
        "a 1.5 M-row relation broadcast automatically after the threshold was raised to 1 GB",
    ),
    "sqlv_range_join": ("sql_cross_join", "a range join (BETWEEN) with no equality"),
    "sqlv_partitioned_small_files_read": (
        "sql_small_files_read",
        "a 30-partition table of 3,000 tiny files, landed by an upstream run",
    ),
    "sqlv_partitionby_small_files_write": (
        "sql_small_files_written",
        "repartition(100) then partitionBy(day) over 20 days",
    ),
    "sqlv_pruning_or_with_data_column": (
        "sql_no_partition_pruning",
        "one day OR a data-column condition over a path-partitioned table (and a function of the "
        "partition column alone, which does prune)",
    ),
    "sqlv_python_udf_in_filter": ("sql_python_udf", "a row-at-a-time Python UDF used as a filter"),
    "sqlv_many_to_many_sort_merge": (
        "sql_row_explosion",
        "a sort-merge join on a 50-value key between two tables",
    ),
    "sqlv_metrics_loop": ("sql_repeated_scan", "six metrics computed by six queries in a loop"),
    "sqlv_healthy_cached_and_pandas": (
        None,
        "a cached table read by several queries, a pandas UDF, pruned reads, a broadcast dimension",
    ),
}


def _session(name: str, logdir: str, scratch: str, conf: dict[str, str]) -> Any:
    from pyspark.sql import SparkSession

    b = (
        SparkSession.builder.master("local[2]")
        .appName(name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", f"{scratch}/warehouse")
        .config("spark.sql.shuffle.partitions", "16")
    )
    logging = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": f"file:{logdir}",
        "spark.eventLog.compress": "true",
        "spark.eventLog.compression.codec": "zstd",
    }
    for k, v in {**logging, **conf}.items():
        b = b.config(k, v)
    return b.getOrCreate()


def _land(spark: Any, desc: str) -> None:
    spark.sparkContext.setJobDescription(desc)


def left_join_low_threshold(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F

    _land(spark, "land orders and stores")
    spark.range(3_000_000).select(
        (F.col("id") % 150_000).alias("store_id"), F.rand(1).alias("amount")
    ).write.parquet(f"{s}/orders")
    spark.range(150_000).select(
        F.col("id").alias("store_id"),
        F.concat(F.lit("store-"), F.col("id").cast("string")).alias("store"),
    ).write.parquet(f"{s}/stores")
    _land(spark, "orders with their store names")
    o, st = spark.read.parquet(f"{s}/orders"), spark.read.parquet(f"{s}/stores")
    o.join(st, "store_id", "left").groupBy("store").agg(F.sum("amount")).write.parquet(
        f"{s}/by_store"
    )


def auto_broadcast_raised_threshold(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F

    _land(spark, "land clicks and products")
    spark.range(2_000_000).select((F.col("id") % 1_500_000).alias("product_id")).write.parquet(
        f"{s}/clicks"
    )
    spark.range(1_500_000).select(
        F.col("id").alias("product_id"),
        F.concat(
            F.lit("product description number "),
            F.col("id").cast("string"),
            F.lit(" of the catalogue"),
        ).alias("title"),
    ).write.parquet(f"{s}/products")
    _land(spark, "clicks per product title")
    c, p = spark.read.parquet(f"{s}/clicks"), spark.read.parquet(f"{s}/products")
    c.join(p, "product_id").groupBy("title").count().write.parquet(f"{s}/per_title")


def range_join(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F

    _land(spark, "land events and sessions")
    spark.range(20_000).select(
        F.col("id").alias("event_id"), (F.rand(2) * 100_000).alias("ts")
    ).write.parquet(f"{s}/events")
    spark.range(2_000).select(
        F.col("id").alias("session_id"),
        (F.col("id") * 50).alias("start"),
        (F.col("id") * 50 + 40).alias("end"),
    ).write.parquet(f"{s}/sessions")
    _land(spark, "events inside sessions (range join)")
    e, ss = spark.read.parquet(f"{s}/events"), spark.read.parquet(f"{s}/sessions")
    e.join(ss, (e.ts >= ss.start) & (e.ts < ss.end)).groupBy("session_id").count().collect()


def partitioned_small_files_read(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F

    _land(spark, "hourly sensor averages over the landing table")
    df = spark.read.parquet(f"{s}/landing")
    df.groupBy("day").agg(F.avg("value"), F.count("*")).collect()


def _land_partitioned_small_files(scratch: str) -> None:
    """The upstream run (no event log): 30 days x 100 tiny files."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    )
    (
        spark.range(60_000)
        .select((F.col("id") % 30).alias("d"), F.rand(3).alias("value"))
        .select(
            F.date_format(
                F.date_add(F.lit("2024-06-01"), F.col("d").cast("int")), "yyyy-MM-dd"
            ).alias("day"),
            "value",
        )
        .repartition(100)
        .write.partitionBy("day")
        .parquet(f"{scratch}/landing")
    )
    spark.stop()


def partitionby_small_files_write(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F

    _land(spark, "land readings")
    spark.range(400_000).select((F.col("id") % 20).alias("d"), F.rand(4).alias("v")).write.parquet(
        f"{s}/readings"
    )
    _land(spark, "export readings per day")
    r = spark.read.parquet(f"{s}/readings").withColumn(
        "day", F.concat(F.lit("2024-06-"), (F.col("d") + 10).cast("string"))
    )
    r.repartition(100).write.partitionBy("day").parquet(f"{s}/export")


def pruning_or_with_data_column(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F

    _land(spark, "land sales by day")
    (
        spark.range(900_000)
        .select(
            (F.col("id") % 30).alias("d"),
            F.rand(5).alias("amount"),
            (F.col("id") % 1000).alias("shop"),
        )
        .select(
            F.date_format(
                F.date_add(F.lit("2024-05-20"), F.col("d").cast("int")), "yyyy-MM-dd"
            ).alias("dt"),
            "amount",
            "shop",
        )
        .write.partitionBy("dt")
        .parquet(f"{s}/sales")
    )
    sales = spark.read.parquet(f"{s}/sales")
    _land(spark, "one day's sales or any large sale")
    sales.where((F.col("dt") == "2024-06-15") | (F.col("amount") > 0.999)).groupBy("shop").agg(
        F.sum("amount")
    ).collect()
    _land(spark, "june sales (a function of the partition column: pruned)")
    sales.where(F.substring("dt", 1, 7) == "2024-06").groupBy("shop").agg(F.sum("amount")).collect()


def python_udf_in_filter(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    _land(spark, "land accounts")
    spark.range(400_000).select(
        F.concat(F.lit("AC-"), (F.col("id") * 7919 % 1_000_003).cast("string")).alias("code"),
        F.rand(6).alias("balance"),
    ).write.parquet(f"{s}/accounts")

    @F.udf(returnType=BooleanType())
    def valid_code(code: str) -> bool:
        digits = code.split("-", 1)[1]
        return sum(int(c) for c in digits) % 3 == 0

    _land(spark, "balances of accounts with a valid code")
    a = spark.read.parquet(f"{s}/accounts")
    a.where(valid_code("code")).agg(F.sum("balance"), F.count("*")).collect()


def many_to_many_sort_merge(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F

    _land(spark, "land visits and campaigns")
    spark.range(200_000).select(
        (F.col("id") % 50).alias("channel"), F.col("id").alias("visit")
    ).write.parquet(f"{s}/visits")
    spark.range(5_000).select(
        (F.col("id") % 50).alias("channel"), F.col("id").alias("campaign")
    ).write.parquet(f"{s}/campaigns")
    _land(spark, "visits attributed to campaigns by channel")
    v, c = spark.read.parquet(f"{s}/visits"), spark.read.parquet(f"{s}/campaigns")
    v.join(c, "channel").groupBy("campaign").count().write.parquet(f"{s}/attributed")


def metrics_loop(spark: Any, s: str) -> None:
    from pyspark.sql import functions as F

    _land(spark, "land payments")
    spark.range(800_000).select(
        (F.col("id") % 97).alias("merchant"),
        F.rand(7).alias("amount"),
        (F.rand(8) > 0.9).alias("refunded"),
    ).write.parquet(f"{s}/payments")
    p = spark.read.parquet(f"{s}/payments")
    metrics = {
        "payments": F.count("*"),
        "volume": F.sum("amount"),
        "average": F.avg("amount"),
        "largest": F.max("amount"),
        "refunds": F.sum(F.col("refunded").cast("int")),
        "merchants": F.countDistinct("merchant"),
    }
    for name, expr in metrics.items():
        _land(spark, f"metric {name}")
        p.agg(expr).collect()


def healthy_cached_and_pandas(spark: Any, s: str) -> None:
    import pandas as pd
    from pyspark.sql import functions as F

    _land(spark, "land trips and zones")
    (
        spark.range(600_000)
        .select(
            (F.col("id") % 260).alias("zone_id"),
            (F.col("id") % 10).alias("d"),
            (F.rand(9) * 30).alias("fare"),
        )
        .select(
            "zone_id", "fare", F.concat(F.lit("2024-06-1"), F.col("d").cast("string")).alias("day")
        )
        .coalesce(2)
        .write.partitionBy("day")
        .parquet(f"{s}/trips")
    )
    spark.range(260).select(
        F.col("id").alias("zone_id"),
        F.concat(F.lit("zone "), F.col("id").cast("string")).alias("zone"),
    ).write.parquet(f"{s}/zones")

    def tip(fare: pd.Series) -> pd.Series:
        return fare * 1.15

    # PySpark reads the pandas types from the annotations, which this module's future import
    # turns into strings
    tip.__annotations__ = {"fare": pd.Series, "return": pd.Series}
    with_tip = F.pandas_udf(tip, "double")

    trips = spark.read.parquet(f"{s}/trips").where(F.col("day") == "2024-06-13").cache()
    zones = spark.read.parquet(f"{s}/zones")
    _land(spark, "one day of trips, cached")
    trips.count()
    for i, agg in enumerate((F.sum("fare"), F.avg("fare"), F.max("fare"))):
        _land(spark, f"day figure {i}")
        trips.agg(agg).collect()
    _land(spark, "fares with tips per zone")
    (
        trips.withColumn("total", with_tip("fare"))
        .join(F.broadcast(zones), "zone_id")
        .groupBy("zone")
        .agg(F.sum("total"))
        .coalesce(1)
        .write.parquet(f"{s}/per_zone")
    )


_CONF: dict[str, dict[str, str]] = {
    "sqlv_left_join_low_threshold": {"spark.sql.autoBroadcastJoinThreshold": "1m"},
    "sqlv_auto_broadcast_raised_threshold": {"spark.sql.autoBroadcastJoinThreshold": "1g"},
    "sqlv_many_to_many_sort_merge": {"spark.sql.autoBroadcastJoinThreshold": "-1"},
    "sqlv_partitionby_small_files_write": {"spark.sql.adaptive.enabled": "true"},
}
_RUN: dict[str, Callable[[Any, str], None]] = {
    "sqlv_left_join_low_threshold": left_join_low_threshold,
    "sqlv_auto_broadcast_raised_threshold": auto_broadcast_raised_threshold,
    "sqlv_range_join": range_join,
    "sqlv_partitioned_small_files_read": partitioned_small_files_read,
    "sqlv_partitionby_small_files_write": partitionby_small_files_write,
    "sqlv_pruning_or_with_data_column": pruning_or_with_data_column,
    "sqlv_python_udf_in_filter": python_udf_in_filter,
    "sqlv_many_to_many_sort_merge": many_to_many_sort_merge,
    "sqlv_metrics_loop": metrics_loop,
    "sqlv_healthy_cached_and_pandas": healthy_cached_and_pandas,
}


def run_one(name: str, logdir: str, scratch: str) -> None:
    """Run one application (in this process)."""
    work = f"{scratch}/{name}"
    shutil.rmtree(work, ignore_errors=True)
    Path(work).mkdir(parents=True)
    if name == "sqlv_partitioned_small_files_read":
        _land_partitioned_small_files(work)
    spark = _session(name, logdir, work, _CONF.get(name, {}))
    try:
        _RUN[name](spark, work)
    finally:
        spark.stop()


def main(argv: list[str]) -> int:
    """Run the named variants (default all), each in a process of its own."""
    if len(argv) >= 3 and argv[0] == "--one":
        run_one(argv[1], argv[2], argv[3])
        return 0
    logdir, scratch, *names = argv
    Path(logdir).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}  # Python workers with this venv's pandas
    for name in names or list(VARIANTS):
        subprocess.run(
            [sys.executable, "-m", "tests.support.sql_variants", "--one", name, logdir, scratch],
            check=True,
            env=env,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
