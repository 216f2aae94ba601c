"""Configuration smells: Spark settings that are known to waste resources or break things.

**What it checks.** Only the application's Spark properties, and only settings that can matter
for this application, by where it ran and by what it ran. An unset property is judged by
Spark's real default (Spark 3.x/4.x), never flagged just for being unset, and never when that
default cannot matter here:

- **Java serialization**: `spark.serializer` unset (Spark's default is the slow, bulky
  `JavaSerializer`) or set to it, for JVM code that uses the RDD API: it pays for Java
  serialization on every shuffle and cache. DataFrame/SQL work shuffles Spark's own binary rows
  and PySpark RDDs hand the JVM pickled bytes, so for them the setting cannot matter and an
  unset serializer is not raised.
- **Dynamic allocation without shuffle tracking**: `spark.dynamicAllocation.enabled=true` with
  `spark.dynamicAllocation.shuffleTracking.enabled=false` (its default is true) and no external
  shuffle service (`spark.shuffle.service.enabled`, default false): removed executors take their
  shuffle files with them.
- **Unbounded dynamic allocation**: `spark.dynamicAllocation.maxExecutors` unset (Spark's
  default is unlimited) or above a limit, or `minExecutors` above `maxExecutors`.
- **Default YARN queue**: on YARN, `spark.yarn.queue=default` set explicitly, or unset, so the
  application competes with ad-hoc work instead of running in its team's queue.
- **Memory**: executor/driver memory and memory overhead above limits (overhead defaults to
  max(384 MiB, 10% of the memory)). In local mode the driver runs the tasks, so its memory is
  judged by the executor memory limits.
- **Cores**: executor/driver cores outside an interval. Many cores per executor cause GC and
  HDFS-client contention; one core per executor wastes JVM overhead and cannot share broadcasts.

**Where it ran.** In local mode the driver runs every task: executor settings, dynamic
allocation and the YARN queue have no effect, and `spark.driver.cores` and
`spark.driver.memoryOverhead` only apply to a driver launched in cluster deploy mode. Such
settings are not judged when unset. When set explicitly (a job configuration copied between
environments), they are listed as "no effect here": they cost nothing in this run, so the
finding is capped to LOW by its cost of 0 s, while its pattern severity says how bad they would
be where they take effect.

**How to fix.** See the advice listed for each smell; the finding's settings give the values
where one is clear: the Kryo serializer, shuffle tracking on, and fewer cores per executor with
the memory per core and (when `spark.executor.instances` is set) the task slots kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.params import param
from heuristics.result import Details, Impact, Outcome, Setting, Severity, make_result
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
from heuristics.thresholds import DESCENDING, Thresholds
from heuristics.tuning import fmt_memory_setting, is_pyspark, round_up_512_mib, uses_rdd_api

#: Severity.NONE, read once: on Python 3.11 an enum member read through its class goes
#: through the enum metaclass's attribute hook (about ten times a plain attribute's cost).
NONE = Severity.NONE

NAME = "config"
TITLE = "Configuration smells"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 4  # 2: counts in words (issue 12); 3: local-cluster; 4: only what can matter (issue 19)
INPUTS = frozenset({"jobs", "spark_properties", "stages"})

JAVA_SERIALIZER = "org.apache.spark.serializer.JavaSerializer"
KRYO_SERIALIZER = "org.apache.spark.serializer.KryoSerializer"
#: What the details say of a setting that takes no effect where the application ran.
INERT = "no effect here"


def is_sql_only(app: AppData) -> bool:
    """True when no stage or job name looks like an RDD API call site."""
    return not uses_rdd_api(app)


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
    """List configuration smells found in the Spark properties that can matter here."""
    props = app.spark_properties
    local = is_local_mode(props)
    master = props.get("spark.master", "").strip().lower()
    cluster_deploy = props.get("spark.submit.deployMode", "client").strip().lower() == "cluster"
    # (setting, shown value, problem, severity, advice, settings for the next run, applies here)
    smells: list[tuple[str, str, str, Severity, str, tuple[Setting, ...], bool]] = []

    def add(
        setting: str,
        value: str,
        problem: str,
        severity: Severity,
        advice: str,
        applies: bool = True,
        conf: tuple[Setting, ...] = (),
    ) -> None:
        if severity > NONE:
            smells.append((setting, value, problem, severity, advice, conf, applies))

    def scope(key: str, takes_effect: bool) -> bool | None:
        """True: judged and applies; False: set explicitly but without effect here; None: not
        judged (unset, and its default cannot matter here)."""
        if takes_effect:
            return True
        return False if key in props else None

    serializer = props.get("spark.serializer", JAVA_SERIALIZER)
    if serializer.strip().endswith("JavaSerializer"):
        jvm_rdd = uses_rdd_api(app) and not is_pyspark(app)
        applies = scope("spark.serializer", jvm_rdd)
        if applies is not None:
            add(
                "spark.serializer",
                props.get("spark.serializer", f"unset ({JAVA_SERIALIZER})"),
                "Java serialization"
                if jvm_rdd
                else "Java serialization (only DataFrame or Python work)",
                Severity.MODERATE,
                "Set spark.serializer=org.apache.spark.serializer.KryoSerializer.",
                applies,
                (("spark.serializer", KRYO_SERIALIZER),),
            )

    if get_bool(props, "spark.dynamicAllocation.enabled", False):
        _dynamic_allocation(props, params, add, not local)

    queue = props.get("spark.yarn.queue")
    on_yarn = master.startswith("yarn")
    if (queue is not None and queue.strip() == "default") or (queue is None and on_yarn):
        add(
            "spark.yarn.queue",
            queue if queue is not None else "unset (default)",
            "runs in the default YARN queue",
            Severity.LOW,
            "Submit to your team's queue with spark.yarn.queue.",
            on_yarn,
        )

    sizes = (
        ("spark.executor.memory", executor_memory_bytes, params.executor_memory_gib, not local),
        (
            "spark.executor.memoryOverhead",
            executor_overhead_bytes,
            params.executor_overhead_gib,
            not local,
        ),
        # In local mode the driver JVM runs the tasks: it is sized like an executor.
        (
            "spark.driver.memory",
            driver_memory_bytes,
            params.executor_memory_gib if local else params.driver_memory_gib,
            True,
        ),
        (
            "spark.driver.memoryOverhead",
            driver_overhead_bytes,
            params.driver_overhead_gib,
            cluster_deploy and not local,
        ),
    )
    for key, getter, thresholds, takes_effect in sizes:
        applies = scope(key, takes_effect)
        if applies is None:
            continue
        gib = getter(props) / GIB
        add(
            key,
            props.get(key, f"unset ({gib:.2f} GiB)"),
            f"{gib:.1f} GiB is above the {thresholds.low:g} GiB limit",
            thresholds.severity_of(gib),
            f"Lower {key}; very large JVMs suffer long GC pauses and reserve unused memory.",
            applies,
        )

    cores = (
        (
            "spark.executor.cores",
            executor_cores(props),
            params.executor_cores_high,
            params.executor_cores_low,
            not local,
        ),
        (
            "spark.driver.cores",
            driver_cores(props),
            params.driver_cores_high,
            params.driver_cores_low,
            cluster_deploy and not local,
        ),
    )
    for key, value, high, low, takes_effect in cores:
        applies = scope(key, takes_effect)
        if value is None or applies is None:
            continue
        shown = props.get(key, f"unset ({value})")
        fewer = max(1, math.ceil(high.low) - 1)
        add(
            key,
            shown,
            f"{value} cores is above {high.low:g}",
            high.severity_of(value),
            f"Use at most about {high.low:g} cores per JVM ({key}); run more, smaller JVMs.",
            applies,
            _smaller_jvms(props, key, value, fewer) if applies else (),
        )
        add(
            key,
            shown,
            f"{fmt_count(value, 'core')} is at or below {low.low:g}",
            low.severity_of(value),
            f"Use a few cores per JVM ({key}) to share memory and broadcasts.",
            applies,
        )
    return _outcome(smells, local)


def _smaller_jvms(
    props: Mapping[str, str], key: str, cores: int, fewer: int
) -> tuple[Setting, ...]:
    """``fewer`` cores per JVM with the same capacity: for executors, memory per core kept and,
    when the instances are fixed, as many more executors as keep the task slots."""
    conf: list[Setting] = [(key, str(fewer))]
    if key != "spark.executor.cores":
        return tuple(conf)
    if "spark.executor.memory" in props:
        per_core = executor_memory_bytes(props) * fewer / cores
        conf.append(("spark.executor.memory", fmt_memory_setting(round_up_512_mib(per_core))))
    instances = _int_or(props.get("spark.executor.instances"), 0)
    if instances > 0:
        conf.append(("spark.executor.instances", str(math.ceil(instances * cores / fewer))))
    return tuple(conf)


def _dynamic_allocation(
    props: Mapping[str, str], params: Params, add: Callable[..., None], takes_effect: bool
) -> None:
    """The smells of dynamic allocation (enabled); ``takes_effect`` is False in local mode."""
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
            takes_effect,
            (("spark.dynamicAllocation.shuffleTracking.enabled", "true"),),
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
            takes_effect,
        )
    elif max_execs > params.max_executors_limit:
        add(
            "spark.dynamicAllocation.maxExecutors",
            max_raw,
            f"above {params.max_executors_limit}",
            Severity.LOW,
            "Lower spark.dynamicAllocation.maxExecutors.",
            takes_effect,
        )
    if min_execs > max_execs:
        add(
            "spark.dynamicAllocation.minExecutors",
            str(min_execs),
            "minExecutors above maxExecutors",
            Severity.MODERATE,
            "Make spark.dynamicAllocation.minExecutors ≤ maxExecutors.",
            takes_effect,
            (("spark.dynamicAllocation.minExecutors", str(int(max_execs))),),
        )


def _outcome(
    smells: list[tuple[str, str, str, Severity, str, tuple[Setting, ...], bool]], local: bool
) -> Outcome:
    """The finding: smells that apply keep their severity (no cost to cap it by); settings
    without effect here cost nothing in this run, so alone they are capped to LOW."""
    if not smells:
        return make_result(severity=NONE, value=0.0, title="No configuration smells")
    applying = [s for s in smells if s[6]]
    where = "in local mode" if local else "where this application ran"
    title = f"{fmt_count(len(smells), 'configuration smell')}: " + "; ".join(
        f"{s[0]} ({s[2]}{'' if s[6] else ', ' + INERT})" for s in smells
    )
    details = Details(
        ("setting", "value", "problem", "severity"),
        tuple(
            (s[0], s[1], s[2] if s[6] else f"{s[2]} ({INERT})", int(s[3] if s[6] else Severity.LOW))
            for s in smells
        ),
    )
    advice = " ".join(dict.fromkeys(s[4] for s in applying))
    inert = [s for s in smells if not s[6]]
    if inert:
        advice += (
            f" {', '.join(dict.fromkeys(s[0] for s in inert))} take no effect {where}; fix them "
            "before this configuration runs where they do."
        )
    conf = tuple(dict.fromkeys(c for s in applying for c in s[5]))
    if applying:
        return make_result(
            severity=max(s[3] for s in applying),
            value=float(len(smells)),
            title=title,
            details=details,
            advice=advice.strip(),
            impact=Impact(
                None, None, "configuration smells' cost cannot be estimated from one run"
            ),
            conf=conf,
        )
    return make_result(
        severity=max(s[3] for s in smells),
        value=float(len(smells)),
        title=title,
        details=details,
        advice=advice.strip(),
        impact=Impact(0.0, 0.0, f"no effect {where}: these settings cost nothing in this run"),
    )


def _int_or(raw: str | None, default: float) -> float:
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        return default
