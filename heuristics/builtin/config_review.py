"""Configuration smells: Spark settings that are known to waste resources or break things.

**What it checks.** Only the application's Spark properties. An unset property is judged by
Spark's real default (Spark 3.x/4.x), never flagged just for being unset:

- **Java serialization**: `spark.serializer` unset (Spark's default is the slow, bulky
  `JavaSerializer`) or set to it. RDD code pays for this on every shuffle and cache; DataFrame/SQL
  code mostly uses Spark's own encoders, so for applications that look SQL-only this is only a
  LOW note. An application counts as SQL-only when no stage or job name starts with an RDD API
  operation (`map`, `reduceByKey`, `distinct`, `parallelize`, `textFile`, ...).
- **Dynamic allocation without shuffle tracking**: `spark.dynamicAllocation.enabled=true` with
  `spark.dynamicAllocation.shuffleTracking.enabled=false` (its default is true) and no external
  shuffle service (`spark.shuffle.service.enabled`, default false): removed executors take their
  shuffle files with them.
- **Unbounded dynamic allocation**: `spark.dynamicAllocation.maxExecutors` unset (Spark's
  default is unlimited) or above a limit, or `minExecutors` above `maxExecutors`.
- **Default YARN queue**: `spark.yarn.queue=default` set explicitly, or unset on YARN, so the
  application competes with ad-hoc work instead of running in its team's queue.
- **Memory**: executor/driver memory and memory overhead above limits (overhead defaults to
  max(384 MiB, 10% of the memory)).
- **Cores**: executor/driver cores outside an interval. Many cores per executor cause GC and
  HDFS-client contention; one core per executor wastes JVM overhead and cannot share broadcasts.

Executor settings are judged when the application ran on a cluster, or when they are set
explicitly (in local mode they have no effect, but a copied job configuration will).

**How to fix.** See the advice listed for each smell.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import (
    DESCENDING,
    Details,
    Impact,
    Outcome,
    Severity,
    Thresholds,
    make_result,
)
from heuristics.sparkconf import (
    GIB,
    driver_cores,
    driver_memory_bytes,
    driver_overhead_bytes,
    executor_cores,
    executor_memory_bytes,
    executor_overhead_bytes,
    get_bool,
    is_local_mode,
)
from heuristics.stats import fmt_count

NAME = "config"
TITLE = "Configuration smells"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 3  # 2: "1 configuration smell", "1 core" in titles (issue 12); 3: local-cluster is not local mode
INPUTS = frozenset({"jobs", "spark_properties", "stages"})

JAVA_SERIALIZER = "org.apache.spark.serializer.JavaSerializer"

_RDD_OPS = re.compile(
    r"^(map|flatMap|mapValues|flatMapValues|mapPartitions\w*|filter|distinct|reduceByKey|"
    r"groupByKey|aggregateByKey|combineByKey\w*|foldByKey|sortByKey|sortBy|partitionBy|cogroup|"
    r"parallelize|textFile|wholeTextFiles|binaryFiles|union|zip\w*|cartesian|reduce|fold|"
    r"aggregate|treeAggregate|treeReduce|countByKey|countByValue|lookup|takeOrdered|top|"
    r"saveAsTextFile|saveAsObjectFile|saveAsSequenceFile|saveAs\w*Hadoop\w*|keyBy|glom|pipe|"
    r"subtract\w*|intersection|checkpoint|runJob at PythonRDD|collectAndServe at PythonRDD)\b"
)


def is_sql_only(app: AppData) -> bool:
    """True when no stage or job name looks like an RDD API call site."""
    names = [s.name for s in app.stages] + [j.name for j in app.jobs]
    return not any(_RDD_OPS.match(n.strip()) for n in names)


@dataclass(frozen=True)
class Params:
    """Parameters of the configuration smells heuristic."""

    executor_memory_gib: Thresholds = param(
        Thresholds(16, 32, 64, 96),
        "spark.executor.memory (GiB; ascending)",
    )
    executor_overhead_gib: Thresholds = param(
        Thresholds(4, 8, 16, 32),
        "spark.executor.memoryOverhead, default max(384 MiB, 10% of memory) (GiB; ascending)",
    )
    driver_memory_gib: Thresholds = param(
        Thresholds(8, 16, 32, 64),
        "spark.driver.memory (GiB; ascending)",
    )
    driver_overhead_gib: Thresholds = param(
        Thresholds(2, 4, 8, 16),
        "spark.driver.memoryOverhead (GiB; ascending)",
    )
    executor_cores_high: Thresholds = param(
        Thresholds(6, 8, 12, 16),
        "spark.executor.cores, too many per JVM (cores; ascending)",
    )
    executor_cores_low: Thresholds = param(
        Thresholds(1, 0, 0, 0, DESCENDING),
        "spark.executor.cores, too few per JVM (cores; descending)",
    )
    driver_cores_high: Thresholds = param(
        Thresholds(4, 8, 16, 32),
        "spark.driver.cores, too many (cores; ascending)",
    )
    driver_cores_low: Thresholds = param(
        Thresholds(0, 0, 0, 0, DESCENDING),
        "spark.driver.cores, too few; all 0 disables the check (cores; descending)",
    )
    max_executors_limit: int = param(
        1000,
        "spark.dynamicAllocation.maxExecutors above this is a LOW note (executors)",
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """List configuration smells found in the Spark properties."""
    props = app.spark_properties
    local = is_local_mode(props)
    smells: list[tuple[str, str, str, Severity, str]] = []

    def add(setting: str, value: str, problem: str, severity: Severity, advice: str) -> None:
        if severity > Severity.NONE:
            smells.append((setting, value, problem, severity, advice))

    serializer = props.get("spark.serializer", JAVA_SERIALIZER)
    if serializer.strip().endswith("JavaSerializer"):
        sql_only = is_sql_only(app)
        add(
            "spark.serializer",
            props.get("spark.serializer", f"unset ({JAVA_SERIALIZER})"),
            "Java serialization" + (" (application looks SQL-only)" if sql_only else ""),
            Severity.LOW if sql_only else Severity.MODERATE,
            "Set spark.serializer=org.apache.spark.serializer.KryoSerializer.",
        )

    if get_bool(props, "spark.dynamicAllocation.enabled", False):
        tracking = get_bool(props, "spark.dynamicAllocation.shuffleTracking.enabled", True)
        service = get_bool(props, "spark.shuffle.service.enabled", False)
        if not tracking and not service:
            add(
                "spark.dynamicAllocation.shuffleTracking.enabled",
                props.get("spark.dynamicAllocation.shuffleTracking.enabled", "true"),
                "dynamic allocation without shuffle tracking or external shuffle service",
                Severity.MODERATE,
                "Enable spark.dynamicAllocation.shuffleTracking.enabled or the external shuffle "
                "service (spark.shuffle.service.enabled) so removed executors keep shuffle data.",
            )
        max_raw = props.get("spark.dynamicAllocation.maxExecutors")
        max_execs = _int_or(max_raw, math.inf)
        min_execs = _int_or(props.get("spark.dynamicAllocation.minExecutors"), 0)
        if max_raw is None:
            add(
                "spark.dynamicAllocation.maxExecutors",
                "unset (unlimited)",
                "dynamic allocation may take the whole queue",
                Severity.MODERATE,
                "Set spark.dynamicAllocation.maxExecutors to a bound.",
            )
        elif max_execs > params.max_executors_limit:
            add(
                "spark.dynamicAllocation.maxExecutors",
                max_raw,
                f"above {params.max_executors_limit}",
                Severity.LOW,
                "Lower spark.dynamicAllocation.maxExecutors.",
            )
        if min_execs > max_execs:
            add(
                "spark.dynamicAllocation.minExecutors",
                str(min_execs),
                "minExecutors above maxExecutors",
                Severity.MODERATE,
                "Make spark.dynamicAllocation.minExecutors ≤ maxExecutors.",
            )

    queue = props.get("spark.yarn.queue")
    on_yarn = props.get("spark.master", "").startswith("yarn")
    if (queue is not None and queue.strip() == "default") or (queue is None and on_yarn):
        add(
            "spark.yarn.queue",
            queue if queue is not None else "unset (default)",
            "runs in the default YARN queue",
            Severity.LOW,
            "Submit to your team's queue with spark.yarn.queue.",
        )

    def judged(key: str) -> bool:
        return not local or key in props

    sizes = (
        ("spark.executor.memory", executor_memory_bytes, params.executor_memory_gib, True),
        (
            "spark.executor.memoryOverhead",
            executor_overhead_bytes,
            params.executor_overhead_gib,
            True,
        ),
        ("spark.driver.memory", driver_memory_bytes, params.driver_memory_gib, False),
        ("spark.driver.memoryOverhead", driver_overhead_bytes, params.driver_overhead_gib, True),
    )
    for key, getter, thresholds, cluster_only in sizes:
        if cluster_only and not judged(key):
            continue
        gib = getter(props) / GIB
        add(
            key,
            props.get(key, f"unset ({gib:.2f} GiB)"),
            f"{gib:.1f} GiB is above the {thresholds.low:g} GiB limit",
            thresholds.severity_of(gib),
            f"Lower {key}; very large JVMs suffer long GC pauses and reserve unused memory.",
        )

    cores = (
        (
            "spark.executor.cores",
            executor_cores(props),
            params.executor_cores_high,
            params.executor_cores_low,
            True,
        ),
        (
            "spark.driver.cores",
            driver_cores(props),
            params.driver_cores_high,
            params.driver_cores_low,
            False,
        ),
    )
    for key, value, high, low, cluster_only in cores:
        if value is None or (cluster_only and not judged(key)):
            continue
        high_sev, low_sev = high.severity_of(value), low.severity_of(value)
        shown = props.get(key, f"unset ({value})")
        add(
            key,
            shown,
            f"{value} cores is above {high.low:g}",
            high_sev,
            f"Use at most about {high.low:g} cores per JVM ({key}); run more, smaller JVMs.",
        )
        add(
            key,
            shown,
            f"{fmt_count(value, 'core')} is at or below {low.low:g}",
            low_sev,
            f"Use a few cores per JVM ({key}) to share memory and broadcasts.",
        )

    severity = max((s[3] for s in smells), default=Severity.NONE)
    if smells:
        title = f"{fmt_count(len(smells), 'configuration smell')}: " + "; ".join(
            f"{s[0]} ({s[2]})" for s in smells
        )
    else:
        title = "No configuration smells"
    details = Details(
        ("setting", "value", "problem", "severity"),
        tuple((s[0], s[1], s[2], int(s[3])) for s in smells),
    )
    advice = " ".join(dict.fromkeys(s[4] for s in smells if s[3] > Severity.LOW))
    impact = Impact(None, None, "configuration smells' cost cannot be estimated from one run")
    return make_result(
        severity=severity,
        value=float(len(smells)),
        title=title,
        details=details if smells else None,
        advice=advice,
        impact=impact,
    )


def _int_or(raw: str | None, default: float) -> float:
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        return default
