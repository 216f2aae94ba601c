"""The Spark applications of the held-out draws (``benchmarks.heldout_spark``): the input writer
and one script per application, each run with ``spark-submit`` and read by nothing else."""

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
