"""Spark configuration values with Spark's own parsing rules and defaults (Spark 3.x/4.x).

Not a heuristic (the `config` heuristic is :mod:`heuristics.builtin.config_review`): the rules
shared by the heuristics, the resource accounting and the what-if. :class:`SparkConf` holds the
figures of one application parsed once (``AppData.conf``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

_UNITS = {
    "b": 1,
    "k": KIB,
    "kb": KIB,
    "m": MIB,
    "mb": MIB,
    "g": GIB,
    "gb": GIB,
    "t": 1024 * GIB,
    "tb": 1024 * GIB,
    "p": 1024 * 1024 * GIB,
    "pb": 1024 * 1024 * GIB,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")

DEFAULT_EXECUTOR_MEMORY = "1g"
DEFAULT_DRIVER_MEMORY = "1g"
# spark.{executor,driver}.memoryOverhead default: max(384 MiB, factor * memory).
MIN_OVERHEAD_BYTES = 384 * MIB
DEFAULT_OVERHEAD_FACTOR = 0.10
DEFAULT_DRIVER_CORES = 1


def parse_size_bytes(s: str | int | None, default_unit: str = "m") -> int | None:
    """Parse a Spark size ("512m", "4g", "1t", "2048") into bytes; None if unparseable.

    A bare number takes `default_unit`, as Spark does for memory settings (MiB).
    """
    if s is None:
        return None
    if isinstance(s, int):
        return s * _UNITS[default_unit.lower()]
    match = _SIZE_RE.match(str(s))
    if not match:
        return None
    number, unit = match.groups()
    factor = _UNITS.get((unit or default_unit).lower())
    if factor is None:
        return None
    return int(float(number) * factor)


_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]$")


def is_local_mode(props: Mapping[str, str]) -> bool:
    """True when spark.master is local, local[N], local[*] or local[N,F] (the driver runs the
    tasks). ``local-cluster[n,c,m]`` is not local mode: it runs n real executor JVMs."""
    master = props.get("spark.master", "").strip().lower()
    return master == "local" or master.startswith("local[")


def _memory(props: Mapping[str, str], key: str, default: str) -> int:
    parsed = parse_size_bytes(props.get(key), "m")
    return parsed if parsed is not None else parse_size_bytes(default, "m") or 0


def _overhead(props: Mapping[str, str], key: str, factor_key: str, memory_bytes: int) -> int:
    explicit = parse_size_bytes(props.get(key), "m")
    if explicit is not None:
        return explicit
    try:
        factor = float(props.get(factor_key, DEFAULT_OVERHEAD_FACTOR))
    except ValueError:
        factor = DEFAULT_OVERHEAD_FACTOR
    return max(MIN_OVERHEAD_BYTES, int(memory_bytes * factor))


def executor_memory_bytes(props: Mapping[str, str]) -> int:
    """spark.executor.memory in bytes (default 1g)."""
    return _memory(props, "spark.executor.memory", DEFAULT_EXECUTOR_MEMORY)


def driver_memory_bytes(props: Mapping[str, str]) -> int:
    """spark.driver.memory in bytes (default 1g)."""
    return _memory(props, "spark.driver.memory", DEFAULT_DRIVER_MEMORY)


def executor_overhead_bytes(props: Mapping[str, str]) -> int:
    """spark.executor.memoryOverhead in bytes (default max(384 MiB, 10% of executor memory))."""
    return _overhead(
        props,
        "spark.executor.memoryOverhead",
        "spark.executor.memoryOverheadFactor",
        executor_memory_bytes(props),
    )


def driver_overhead_bytes(props: Mapping[str, str]) -> int:
    """spark.driver.memoryOverhead in bytes (default max(384 MiB, 10% of driver memory))."""
    return _overhead(
        props,
        "spark.driver.memoryOverhead",
        "spark.driver.memoryOverheadFactor",
        driver_memory_bytes(props),
    )


def _local_cores(master: str) -> int | None:
    match = re.match(r"^local\[(\d+)", master.strip().lower())
    if match:
        return int(match.group(1))
    return 1 if master.strip().lower() == "local" else None


def executor_cores(props: Mapping[str, str]) -> int | None:
    """spark.executor.cores; unset means 1 on YARN/Kubernetes, N for local[N], else None.

    None means "all cores of the worker" (standalone), which the config alone cannot tell.
    """
    raw = props.get("spark.executor.cores")
    if raw is not None:
        try:
            return int(raw)
        except ValueError:
            return None
    master = props.get("spark.master", "")
    if is_local_mode(props):
        return _local_cores(master)
    cluster = _LOCAL_CLUSTER.match(master.strip().lower())
    if cluster:
        return int(cluster.group(2))
    if master.startswith("yarn") or master.startswith("k8s"):
        return 1
    return None


def driver_cores(props: Mapping[str, str]) -> int:
    """spark.driver.cores (default 1)."""
    try:
        return int(props.get("spark.driver.cores", DEFAULT_DRIVER_CORES))
    except ValueError:
        return DEFAULT_DRIVER_CORES


def get_bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    """A boolean property the way Spark reads it ("true"/"false", case-insensitive)."""
    raw = props.get(key)
    if raw is None:
        return default
    return raw.strip().lower() == "true"


@dataclass(frozen=True)
class SparkConf:
    """The figures of one application's Spark configuration that several consumers read (the
    resource accounting, the heuristics, the what-if), parsed once with the rules above."""

    local: bool
    executor_memory_bytes: int
    executor_overhead_bytes: int
    driver_memory_bytes: int
    driver_overhead_bytes: int
    executor_cores: int | None
    driver_cores: int

    @classmethod
    def of(cls, props: Mapping[str, str]) -> SparkConf:
        """Parse the figures of ``props`` (an application's Spark properties)."""
        executor_memory = executor_memory_bytes(props)
        driver_memory = driver_memory_bytes(props)
        return cls(
            local=is_local_mode(props),
            executor_memory_bytes=executor_memory,
            executor_overhead_bytes=_overhead(
                props,
                "spark.executor.memoryOverhead",
                "spark.executor.memoryOverheadFactor",
                executor_memory,
            ),
            driver_memory_bytes=driver_memory,
            driver_overhead_bytes=_overhead(
                props,
                "spark.driver.memoryOverhead",
                "spark.driver.memoryOverheadFactor",
                driver_memory,
            ),
            executor_cores=executor_cores(props),
            driver_cores=driver_cores(props),
        )


# ----------------------------------------------------------------------------- SQL defaults

#: Spark SQL settings the advice reads, with Spark's default by version: (first version, default)
#: pairs in version order. An application of an older version than the first pair takes the
#: first default; one of an unknown version takes the newest.
SQL_DEFAULTS: dict[str, tuple[tuple[tuple[int, int], str], ...]] = {
    # Adaptive query execution: on by default since 3.2.0 (SPARK-33679).
    "spark.sql.adaptive.enabled": (((3, 0), "false"), ((3, 2), "true")),
    "spark.sql.adaptive.coalescePartitions.enabled": (((3, 0), "true"),),
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": (((3, 0), "64MB"),),
    "spark.sql.adaptive.skewJoin.enabled": (((3, 0), "true"),),
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor": (((3, 0), "5"),),
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": (((3, 0), "256MB"),),
    "spark.sql.shuffle.partitions": (((3, 0), "200"),),
    "spark.sql.autoBroadcastJoinThreshold": (((3, 0), "10MB"),),
    "spark.sql.files.maxPartitionBytes": (((3, 0), "128MB"),),
    "spark.memory.fraction": (((3, 0), "0.6"),),
}

_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")


def version_tuple(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of a Spark version string such as "3.5.1" or "4.0.0-preview", else None."""
    match = _VERSION.match(version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def default_value(key: str, version: str | None) -> str | None:
    """Spark's default of a setting of :data:`SQL_DEFAULTS` for that version (None: not listed)."""
    history = SQL_DEFAULTS.get(key)
    if not history:
        return None
    wanted = version_tuple(version)
    if wanted is None:
        return history[-1][1]
    value = history[0][1]
    for since, default in history:
        if wanted >= since:
            value = default
    return value


def effective(props: Mapping[str, str], key: str, version: str | None) -> str | None:
    """The value in force: the application's own setting, else Spark's default for its version."""
    raw = props.get(key)
    if raw is not None and raw.strip():
        return raw.strip()
    return default_value(key, version)


def effective_bool(props: Mapping[str, str], key: str, version: str | None) -> bool:
    """A boolean setting in force, read as Spark reads it ("true" in any case)."""
    return (effective(props, key, version) or "").lower() == "true"


def effective_bytes(props: Mapping[str, str], key: str, version: str | None) -> int | None:
    """A size setting in force in bytes (Spark SQL sizes: a bare number is bytes)."""
    parsed = parse_size_bytes(effective(props, key, version), "b")
    if parsed is not None:
        return parsed
    return parse_size_bytes(default_value(key, version), "b")


def effective_float(props: Mapping[str, str], key: str, version: str | None) -> float | None:
    """A number setting in force; the default when the application's value does not parse."""
    for raw in (effective(props, key, version), default_value(key, version)):
        try:
            return float(raw) if raw is not None else None
        except ValueError:
            continue
    return None


def fmt_size_setting(num_bytes: float) -> str:
    """A size as a Spark setting value: whole MiB as "64m", else whole KiB as "512k", else bytes."""
    value = max(1, int(num_bytes))
    if value >= MIB and value % MIB == 0:
        return f"{value // MIB}m"
    if value >= MIB:
        return f"{-(-value // MIB)}m"
    if value >= KIB:
        return f"{-(-value // KIB)}k"
    return str(value)
