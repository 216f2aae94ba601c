"""Settings and values for the next run, computed from an application's own data.

Not a heuristic: helpers the heuristics share to turn a finding into ``conf`` (ordered
(Spark property, value) pairs) and into advice that says which setting controls a stage, or that
none does and the code must change. Spark's defaults come from :mod:`heuristics.sparkconf`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from heuristics.appdata import AppData, StageSummary
from heuristics.result import Setting, StageRef
from heuristics.sparkconf import (
    GIB,
    MIB,
    effective,
    effective_bool,
    effective_bytes,
    effective_float,
    fmt_size_setting,
    is_local_mode,
)

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
ADVISORY_SIZE = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
AQE = "spark.sql.adaptive.enabled"
COALESCE = "spark.sql.adaptive.coalescePartitions.enabled"
SKEW_JOIN = "spark.sql.adaptive.skewJoin.enabled"
SKEW_FACTOR = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
SKEW_THRESHOLD = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
MAX_PARTITION_BYTES = "spark.sql.files.maxPartitionBytes"
DEFAULT_PARALLELISM = "spark.default.parallelism"

#: Spark reserves this much of every executor heap before the unified memory region.
RESERVED_HEAP_BYTES = 300 * MIB

_RDD_OPS = re.compile(
    r"^(map|flatMap|mapValues|flatMapValues|mapPartitions\w*|filter|distinct|reduceByKey|"
    r"groupByKey|aggregateByKey|combineByKey\w*|foldByKey|sortByKey|sortBy|partitionBy|cogroup|"
    r"parallelize|textFile|wholeTextFiles|binaryFiles|union|zip\w*|cartesian|reduce|fold|"
    r"aggregate|treeAggregate|treeReduce|countByKey|countByValue|lookup|takeOrdered|top|sum|"
    r"saveAsTextFile|saveAsObjectFile|saveAsSequenceFile|saveAs\w*Hadoop\w*|keyBy|glom|pipe|"
    r"subtract\w*|intersection|checkpoint|runJob at PythonRDD|collectAndServe at PythonRDD)\b"
)


def uses_rdd_api(app: AppData) -> bool:
    """True when a stage or job name is an RDD API call site (``reduceByKey at job.py:12``).

    DataFrame and SQL work is named after its action (``collect``, ``count``, ``save``) or after
    Spark's own internals, so an application without such names ran DataFrame/SQL work only.
    """
    return _names_use_rdd_api(_names(app))


def is_pyspark(app: AppData) -> bool:
    """True for a Python application: spark-submit sets ``spark.submit.pyFiles`` for one, and its
    call sites name ``.py`` files."""
    if "spark.submit.pyFiles" in app.spark_properties:
        return True
    return any(".py:" in n or "PythonRDD" in n for n in _names(app))


def _names(app: AppData) -> tuple[str, ...]:
    return (*(s.name for s in app.stages), *(j.name for j in app.jobs))


@functools.lru_cache(maxsize=1024)
def _names_use_rdd_api(names: tuple[str, ...]) -> bool:
    # Several heuristics ask of the same application: the names are matched once.
    return any(_RDD_OPS.match(n.strip()) for n in names)


def stage_ref(stage: StageSummary) -> StageRef:
    """The (stage id, attempt id) a finding names."""
    return (stage.stage_id, stage.attempt_id)


def ordered_refs(scored: Iterable[tuple[Any, StageSummary]]) -> tuple[StageRef, ...]:
    """Stage refs by score (any sortable value, e.g. (severity, cost)), highest first, each once;
    equal scores keep their order."""
    out: dict[StageRef, None] = {}
    for _, stage in sorted(scored, key=lambda p: p[0], reverse=True):
        out.setdefault(stage_ref(stage), None)
    return tuple(out)


def merge_conf(*groups: Iterable[Setting]) -> tuple[Setting, ...]:
    """Settings in order of first appearance, each key once (the first value given wins)."""
    out: dict[str, str] = {}
    for group in groups:
        for key, value in group:
            out.setdefault(key, value)
    return tuple(out.items())


def default_parallelism(app: AppData, slots: int) -> int:
    """spark.default.parallelism in force: the setting, else the task slots (Spark's default for
    local mode and for cluster managers, at least 2 on a cluster)."""
    raw = app.spark_properties.get(DEFAULT_PARALLELISM)
    if raw is not None:
        try:
            return int(raw)
        except ValueError:
            pass
    return slots if is_local_mode(app.spark_properties) else max(2, slots)


def partition_settings(
    app: AppData, stage: StageSummary, partitions: int, slots: int
) -> tuple[tuple[Setting, ...], str]:
    """The setting that would give ``stage`` about ``partitions`` tasks next run, and a sentence
    naming it; no setting (and a sentence saying what code to change) when none controls it."""
    props, version = app.spark_properties, app.spark_version
    n = max(1, partitions)
    sql = not uses_rdd_api(app)
    if stage.shuffle_read_bytes > 0:
        configured = effective(props, SHUFFLE_PARTITIONS, version)
        if sql and configured is not None and str(stage.num_tasks) == configured:
            return (
                ((SHUFFLE_PARTITIONS, str(n)),),
                f"its {stage.num_tasks} tasks are spark.sql.shuffle.partitions",
            )
        if sql and effective_bool(props, AQE, version) and effective_bool(props, COALESCE, version):
            size = stage.shuffle_read_bytes / n
            return (
                ((ADVISORY_SIZE, fmt_size_setting(max(MIB, size))),),
                "AQE coalescing sized its partitions (spark.sql.adaptive.advisoryPartitionSizeInBytes)",
            )
        if not sql and stage.num_tasks == default_parallelism(app, slots):
            return (
                ((DEFAULT_PARALLELISM, str(n)),),
                "its tasks are spark.default.parallelism",
            )
        return (), f"its partition count comes from the code: repartition({n}) before this stage"
    if stage.input_bytes > 0:
        if sql:
            size = stage.input_bytes / n
            return (
                ((MAX_PARTITION_BYTES, fmt_size_setting(max(MIB, size))),),
                "its tasks are file splits of spark.sql.files.maxPartitionBytes",
            )
        return (), f"its tasks are input splits: pass minPartitions={n} or repartition({n})"
    if stage.num_tasks == default_parallelism(app, slots):
        return (
            ((DEFAULT_PARALLELISM, str(n)),),
            "its tasks are spark.default.parallelism (parallelize or range without a count)",
        )
    return (), f"its partition count comes from the code: repartition({n}) or numSlices={n}"


def advisory_size(app: AppData) -> int:
    """Spark's target partition size in force: spark.sql.adaptive.advisoryPartitionSizeInBytes
    (64 MiB by default)."""
    return effective_bytes(app.spark_properties, ADVISORY_SIZE, app.spark_version) or 64 * MIB


def bytes_partitions(num_bytes: int, target: int) -> int:
    """Partitions of ``target`` bytes (see :func:`advisory_size`) that ``num_bytes`` fills."""
    return max(1, math.ceil(num_bytes / max(1, target)))


def execution_memory_per_task(app: AppData, heap_bytes: int, cores: int) -> float:
    """Execution memory one task may use: (heap − 300 MiB reserved) × spark.memory.fraction ÷
    concurrent tasks (Spark's unified memory model; storage may borrow from it)."""
    fraction = effective_float(app.spark_properties, "spark.memory.fraction", app.spark_version)
    usable = max(0, heap_bytes - RESERVED_HEAP_BYTES) * (fraction if fraction is not None else 0.6)
    return usable / max(1, cores)


def round_up_512_mib(num_bytes: float) -> int:
    """A JVM size rounded up to a multiple of 512 MiB (at least 512 MiB)."""
    step = 512 * MIB
    return max(1, math.ceil(num_bytes / step)) * step


def fmt_memory_setting(num_bytes: float) -> str:
    """A JVM memory value as Spark takes it: whole GiB as "6g", else MiB as "4608m"."""
    value = max(MIB, int(num_bytes))
    if value % GIB == 0:
        return f"{value // GIB}g"
    return f"{-(-value // MIB)}m"


def skew_settings(app: AppData, largest: float, median: float) -> tuple[tuple[Setting, ...], str]:
    """Why AQE did not split a skewed shuffle partition of ``largest`` bytes (median ``median``)
    and the settings that would make it; none when AQE would have split it (then the stage was
    not a sort-merge join: an aggregation or a join AQE cannot split)."""
    props, version = app.spark_properties, app.spark_version
    if uses_rdd_api(app):
        return (), (
            "AQE only splits skewed partitions of DataFrame/SQL joins; this application uses RDD "
            "operations, so no setting splits them: salt the hot key (append a random suffix and "
            "aggregate in two steps) or repartition on a better-distributed key."
        )
    conf: list[Setting] = []
    reasons: list[str] = []
    if not effective_bool(props, AQE, version):
        conf.append((AQE, "true"))
        reasons.append("adaptive query execution is off (spark.sql.adaptive.enabled=false)")
    if not effective_bool(props, SKEW_JOIN, version):
        conf.append((SKEW_JOIN, "true"))
        reasons.append("AQE skew-join handling is off (spark.sql.adaptive.skewJoin.enabled=false)")
    factor = effective_float(props, SKEW_FACTOR, version) or 5.0
    threshold = effective_bytes(props, SKEW_THRESHOLD, version) or 256 * MIB
    advisory = effective_bytes(props, ADVISORY_SIZE, version) or 64 * MIB
    ratio = largest / median if median > 0 else math.inf
    if ratio <= factor:
        wanted = max(1.5, math.floor(ratio / 1.5 * 10) / 10)
        conf.append((SKEW_FACTOR, f"{wanted:g}"))
        reasons.append(
            f"the largest partition is {ratio:.1f}× the median, not above "
            f"skewedPartitionFactor ({factor:g})"
        )
    if largest <= threshold:
        conf.append((SKEW_THRESHOLD, fmt_size_setting(max(MIB, _floor_mib(largest / 2)))))
        reasons.append(
            f"the largest partition ({_mib(largest)}) is below "
            f"skewedPartitionThresholdInBytes ({_mib(threshold)})"
        )
    if largest < 2 * advisory:
        # AQE cuts a skewed partition into pieces of the advisory size: one piece is no split.
        conf.append((ADVISORY_SIZE, fmt_size_setting(max(MIB, _floor_mib(largest / 4)))))
        reasons.append(
            f"it is smaller than two pieces of advisoryPartitionSizeInBytes ({_mib(advisory)}), "
            "the size AQE cuts skewed partitions into"
        )
    aggregation = (
        "If the stage is an aggregation (groupBy) rather than a join, no setting splits a hot "
        "key: salt it (append a random suffix, aggregate twice) or pre-aggregate."
    )
    if (effective(props, "spark.sql.autoBroadcastJoinThreshold", version) or "").strip() == "-1":
        aggregation += (
            " Broadcast joins are switched off (spark.sql.autoBroadcastJoinThreshold=-1): if one "
            "side of this join is small, broadcasting it avoids the shuffle and its skew."
        )
    if not reasons:
        return (), (
            "AQE would split a partition this skewed in a sort-merge join, so this stage is not "
            "one it can split (an aggregation, or a split that needs an extra shuffle: "
            "spark.sql.adaptive.forceOptimizeSkewedJoin=true forces it). " + aggregation
        )
    return tuple(conf), (
        "AQE did not split the skewed partition because " + "; ".join(reasons) + ". " + aggregation
    )


def _floor_mib(num_bytes: float) -> int:
    return max(1, int(num_bytes // MIB)) * MIB


def _mib(num_bytes: float) -> str:
    return f"{num_bytes / MIB:.1f} MiB" if num_bytes < GIB else f"{num_bytes / GIB:.1f} GiB"


def worst_first(rows: Sequence[tuple[object, ...]], key: int) -> list[tuple[object, ...]]:
    """Detail rows sorted by one numeric column, highest first (ties keep their order)."""
    return sorted(rows, key=lambda r: -float(r[key] or 0))  # type: ignore[arg-type]
