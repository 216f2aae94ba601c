"""Shared types for heuristics: inputs, severities, thresholds, results and param parsing."""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

P = TypeVar("P")

# --------------------------------------------------------------------------- inputs
# Named tuples: immutable like frozen dataclasses, and built from a stored tuple in one C call,
# which matters when re-scoring thousands of applications (see sparkscope.inputs).


class TaskDistribution(NamedTuple):
    """SHS taskSummary: metric values at the given quantiles (usually 0, 0.05, ..., 1.0)."""

    quantiles: Sequence[float]
    metrics: Mapping[str, Sequence[float]]


#: The task-distribution metrics the heuristics read. The analysis loads only these from the
#: database (a stage's full summary holds about 25); a heuristic that needs another adds it here.
DISTRIBUTION_METRICS: tuple[str, ...] = (
    "duration_ms",
    "executor_run_time_ms",
    "scheduler_delay_ms",
    "input_bytes",
    "shuffle_read_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
)


class ExecutorSummary(NamedTuple):
    """One executor (or the driver) as the SHS /allexecutors endpoint reports it."""

    executor_id: str
    is_driver: bool
    host: str | None
    total_cores: int
    max_memory_bytes: int
    add_time_ms: int | None
    remove_time_ms: int | None
    remove_reason: str | None
    total_duration_ms: int
    total_gc_time_ms: int
    total_tasks: int
    failed_tasks: int
    completed_tasks: int
    total_input_bytes: int
    total_shuffle_read_bytes: int
    total_shuffle_write_bytes: int
    peak_jvm_heap_bytes: int | None
    peak_jvm_offheap_bytes: int | None


class JobSummary(NamedTuple):
    """One Spark job."""

    job_id: int
    name: str
    status: str
    submission_time_ms: int | None
    completion_time_ms: int | None
    num_tasks: int
    num_failed_tasks: int
    num_failed_stages: int
    stage_ids: tuple[int, ...]


class StageSummary(NamedTuple):
    """One stage attempt with its aggregated metrics and optional task distribution."""

    stage_id: int
    attempt_id: int
    name: str
    status: str
    num_tasks: int
    num_complete_tasks: int
    num_failed_tasks: int
    num_killed_tasks: int
    submission_time_ms: int | None
    first_task_launched_time_ms: int | None
    completion_time_ms: int | None
    executor_run_time_ms: int
    executor_cpu_time_ns: int
    jvm_gc_time_ms: int
    input_bytes: int
    output_bytes: int
    shuffle_read_bytes: int
    shuffle_write_bytes: int
    shuffle_fetch_wait_ms: int
    memory_bytes_spilled: int
    disk_bytes_spilled: int
    failure_reason: str | None
    distribution: TaskDistribution | None


class TaskSummary(NamedTuple):
    """One stored task attempt (the slowest of the longest stages, and failed ones)."""

    stage_id: int
    stage_attempt_id: int
    task_id: int
    index: int  # type: ignore[assignment]  # Spark's task index; shadows tuple.index
    attempt: int
    executor_id: str | None
    status: str
    duration_ms: int | None
    executor_run_time_ms: int | None
    input_bytes: int
    shuffle_read_bytes: int
    memory_bytes_spilled: int
    disk_bytes_spilled: int
    error_message: str | None


@dataclass(frozen=True)
class AppData:
    """Everything a heuristic may read about one application attempt."""

    app_id: str
    attempt_id: str | None
    name: str
    user: str | None
    start_time_ms: int | None
    end_time_ms: int | None
    duration_ms: int
    spark_properties: Mapping[str, str]
    executors: tuple[ExecutorSummary, ...]
    jobs: tuple[JobSummary, ...]
    stages: tuple[StageSummary, ...]
    tasks: tuple[TaskSummary, ...]


# --------------------------------------------------------------------------- outputs


class Severity(IntEnum):
    """How bad a finding is; an application's severity is the max over its findings."""

    NONE = 0
    LOW = 1
    MODERATE = 2
    SEVERE = 3
    CRITICAL = 4


ASCENDING = "ascending"
DESCENDING = "descending"
LEVELS = ("low", "moderate", "severe", "critical")


@dataclass(frozen=True)
class Thresholds:
    """Four severity boundaries; "ascending" means bad when high, "descending" bad when low."""

    low: float
    moderate: float
    severe: float
    critical: float
    direction: str = ASCENDING

    def __post_init__(self) -> None:
        if self.direction not in (ASCENDING, DESCENDING):
            raise ValueError(f"direction must be {ASCENDING!r} or {DESCENDING!r}")
        values = self.values()
        for level, value in zip(LEVELS, values, strict=True):
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
                raise ValueError(f"{level} must be a number, got {value!r}")
        # Store floats so that 2 and 2.0 give the same dict, JSON and config fingerprint.
        for level, value in zip(LEVELS, values, strict=True):
            object.__setattr__(self, level, float(value))
        bad = self.first_out_of_order()
        if bad is not None:
            word = "at least" if self.direction == ASCENDING else "at most"
            raise ValueError(f"{bad} must be {word} the previous level ({self.direction})")

    def values(self) -> tuple[float, float, float, float]:
        """The four boundaries from low to critical."""
        return (self.low, self.moderate, self.severe, self.critical)

    def first_out_of_order(self) -> str | None:
        """Name of the first level that breaks the order, or None when ordered."""
        values = self.values()
        for i in range(1, len(values)):
            prev, cur = values[i - 1], values[i]
            if (cur < prev) if self.direction == ASCENDING else (cur > prev):
                return LEVELS[i]
        return None

    def severity_of(self, value: float | None) -> Severity:
        """Severity of a measured value; None and NaN give NONE.

        The levels are ordered (checked at construction), so the first bound hit from the
        critical end down is the highest one hit.
        """
        if value is None or value != value:  # None or NaN
            return Severity.NONE
        if self.direction == ASCENDING:
            if value >= self.critical:
                return Severity.CRITICAL
            if value >= self.severe:
                return Severity.SEVERE
            if value >= self.moderate:
                return Severity.MODERATE
            return Severity.LOW if value >= self.low else Severity.NONE
        if value <= self.critical:
            return Severity.CRITICAL
        if value <= self.severe:
            return Severity.SEVERE
        if value <= self.moderate:
            return Severity.MODERATE
        return Severity.LOW if value <= self.low else Severity.NONE

    def to_dict(self) -> dict[str, object]:
        """JSON-able form including the direction."""
        return {
            "low": self.low,
            "moderate": self.moderate,
            "severe": self.severe,
            "critical": self.critical,
            "direction": self.direction,
        }


@dataclass(frozen=True)
class Impact:
    """Estimated cost of a finding; `formula` says in one line how it was computed."""

    wall_seconds: float | None
    core_hours: float | None
    formula: str

    def to_dict(self) -> dict[str, object]:
        """JSON-able form."""
        return {
            "wall_seconds": self.wall_seconds,
            "core_hours": self.core_hours,
            "formula": self.formula,
        }


@dataclass(frozen=True)
class Details:
    """A small table of JSON-able scalars shown under a finding."""

    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]


@dataclass(frozen=True)
class HeuristicResult:
    """The outcome of one heuristic on one application."""

    name: str
    severity: Severity
    value: float | None
    title: str
    thresholds: Mapping[str, object]
    details: Details | None
    advice: str
    impact: Impact | None

    def to_dict(self, thresholds: bool = True) -> dict[str, object]:
        """JSON-able form; inverse of from_dict. Storage leaves out the thresholds
        (``thresholds=False``): they are the params of the config the results were computed
        under, which the reader has."""
        out: dict[str, object] = {
            "name": self.name,
            "severity": int(self.severity),
            "value": _json_float(self.value),
            "title": self.title,
            "details": None
            if self.details is None
            else {
                "columns": list(self.details.columns),
                "rows": [[_json_scalar(v) for v in row] for row in self.details.rows],
            },
            "advice": self.advice,
            "impact": None if self.impact is None else self.impact.to_dict(),
        }
        if thresholds:
            out["thresholds"] = dict(self.thresholds)
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], thresholds: Mapping[str, object] | None = None
    ) -> HeuristicResult:
        """Rebuild a result stored with to_dict; ``thresholds`` when the stored form has none."""
        details = data.get("details")
        impact = data.get("impact")
        stored = data.get("thresholds")
        return cls(
            name=data["name"],
            severity=Severity(data["severity"]),
            value=data.get("value"),
            title=data["title"],
            thresholds=dict(stored) if stored is not None else dict(thresholds or {}),
            details=None
            if details is None
            else Details(
                columns=tuple(details["columns"]),
                rows=tuple(tuple(row) for row in details["rows"]),
            ),
            advice=data.get("advice", ""),
            impact=None
            if impact is None
            else Impact(impact["wall_seconds"], impact["core_hours"], impact["formula"]),
        )


def _json_float(value: float | None) -> float | None:
    # JSON has no inf/NaN; an unbounded ratio is stored as None rather than breaking the encoder.
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value


def _json_scalar(value: object) -> object:
    if isinstance(value, float):
        return _json_float(value)
    return value


def app_severity(results: Iterable[HeuristicResult]) -> Severity:
    """The application's severity: the worst of its results (NONE if there are none)."""
    return max((r.severity for r in results), default=Severity.NONE)


# --------------------------------------------------------------------------- params


class ConfigError(ValueError):
    """A bad heuristics config; `path` is the dotted key path, e.g. stage_skew.ratio.moderate."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def params_to_dict(params: object) -> dict[str, object]:
    """JSON-able dict of a Params dataclass (thresholds become dicts with their direction)."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(params):  # type: ignore[arg-type]
        value = getattr(params, f.name)
        out[f.name] = value.to_dict() if isinstance(value, Thresholds) else value
    return out


_VIEWS: dict[int, tuple[object, Mapping[str, object]]] = {}


def params_view(params: object) -> Mapping[str, object]:
    """Read-only :func:`params_to_dict` of a Params object, computed once per params object.

    Keyed by identity (hashing a frozen params dataclass costs more than the lookup saves); the
    entry holds the object, so its id cannot be reused while cached.
    """
    hit = _VIEWS.get(id(params))
    if hit is not None and hit[0] is params:
        return hit[1]
    if len(_VIEWS) > 4096:  # configs reloaded many times in one process
        _VIEWS.clear()
    view = MappingProxyType(params_to_dict(params))
    _VIEWS[id(params)] = (params, view)
    return view


def params_from_mapping(params_cls: type[P], mapping: Mapping[str, Any] | None, path: str) -> P:
    """Build `params_cls` from a config mapping; missing keys keep defaults, bad ones raise."""
    default = params_cls()
    if mapping is None:
        return default
    if not isinstance(mapping, Mapping):
        raise ConfigError(path, f"expected a mapping, got {type(mapping).__name__}")
    known = {f.name for f in dataclasses.fields(default)}  # type: ignore[arg-type]
    changes: dict[str, object] = {}
    for key, raw in mapping.items():
        key_path = f"{path}.{key}"
        if key not in known:
            raise ConfigError(key_path, f"unknown parameter (known: {', '.join(sorted(known))})")
        changes[key] = _coerce(getattr(default, key), raw, key_path)
    return dataclasses.replace(default, **changes)  # type: ignore[type-var]


def _coerce(default: object, raw: object, path: str) -> object:
    if isinstance(default, Thresholds):
        return _coerce_thresholds(default, raw, path)
    if isinstance(default, bool):
        if not isinstance(raw, bool):
            raise ConfigError(path, f"expected true/false, got {raw!r}")
        return raw
    if isinstance(default, int):
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ConfigError(path, f"expected an integer, got {raw!r}")
        return raw
    if isinstance(default, float):
        if isinstance(raw, bool) or not isinstance(raw, int | float) or math.isnan(raw):
            raise ConfigError(path, f"expected a number, got {raw!r}")
        return float(raw)
    if isinstance(default, str):
        if not isinstance(raw, str):
            raise ConfigError(path, f"expected a string, got {raw!r}")
        return raw
    raise ConfigError(path, f"parameter of type {type(default).__name__} cannot be configured")


def _coerce_thresholds(default: Thresholds, raw: object, path: str) -> Thresholds:
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"expected a mapping of {', '.join(LEVELS)}, got {raw!r}")
    values = dict(zip(LEVELS, default.values(), strict=True))
    for level, value in raw.items():
        if level == "direction":
            # The direction is part of what the heuristic measures, so config may only restate it.
            if value != default.direction:
                raise ConfigError(f"{path}.direction", f"is fixed to {default.direction!r}")
            continue
        if level not in values:
            raise ConfigError(f"{path}.{level}", f"unknown level (known: {', '.join(LEVELS)})")
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise ConfigError(f"{path}.{level}", f"expected a number, got {value!r}")
        values[level] = value
    candidate = Thresholds.__new__(Thresholds)
    object.__setattr__(candidate, "direction", default.direction)
    for level in LEVELS:
        object.__setattr__(candidate, level, values[level])
    bad = candidate.first_out_of_order()
    if bad is not None:
        word = "at least" if default.direction == ASCENDING else "at most"
        raise ConfigError(
            f"{path}.{bad}",
            f"thresholds out of order: {bad} must be {word} the previous level "
            f"({default.direction}), got {values}",
        )
    return Thresholds(**values, direction=default.direction)


# --------------------------------------------------------------------------- helpers


def no_data(name: str, title: str, params: object) -> HeuristicResult:
    """A NONE result whose title says what data was missing."""
    return HeuristicResult(
        name=name,
        severity=Severity.NONE,
        value=None,
        title=title,
        thresholds=params_view(params),
        details=None,
        advice="",
        impact=None,
    )


def make_result(
    name: str,
    severity: Severity,
    value: float | None,
    title: str,
    params: object,
    details: Details | None,
    advice: str,
    impact: Impact | None,
) -> HeuristicResult:
    """A result that enforces the rules: advice only above LOW, no impact at NONE."""
    return HeuristicResult(
        name=name,
        severity=severity,
        value=value,
        title=title,
        thresholds=params_view(params),
        details=details,
        advice=advice if severity > Severity.LOW else "",
        impact=impact if severity > Severity.NONE else None,
    )


def task_executors(app: AppData) -> list[ExecutorSummary]:
    """Executors that run tasks: the non-driver ones, or the driver alone in local mode."""
    execs = [e for e in app.executors if not e.is_driver]
    if execs:
        return execs
    return [e for e in app.executors if e.is_driver]


def total_task_cores(app: AppData) -> int:
    """Task slots: summed cores of the executors that run tasks (at least 1)."""
    return max(1, sum(max(e.total_cores, 0) for e in task_executors(app)))


def quantile_value(dist: TaskDistribution, key: str, q: float) -> float | None:
    """Metric value at quantile q by linear interpolation, or None when the metric is absent."""
    values = dist.metrics.get(key)
    qs = dist.quantiles
    n = len(qs)
    if not values or not n or len(values) != n:
        return None
    if q <= qs[0]:
        return float(values[0])
    if q > qs[-1]:
        return float(values[-1])
    i = bisect.bisect_left(qs, q)  # qs[i - 1] < q <= qs[i]
    if q == qs[i]:
        return float(values[i])
    span = qs[i] - qs[i - 1]
    frac = 0.0 if span <= 0 else (q - qs[i - 1]) / span
    return float(values[i - 1] + frac * (values[i] - values[i - 1]))


def approximate_task_values(dist: TaskDistribution, key: str, num_tasks: int) -> list[float]:
    """Reconstruct num_tasks per-task values (sorted) by sampling the quantile curve."""
    values = dist.metrics.get(key)
    qs = dist.quantiles
    if num_tasks <= 0 or not values or not qs or len(values) != len(qs):
        return []
    if num_tasks == 1:
        single = quantile_value(dist, key, 0.5)
        return [] if single is None else [single]
    # One pass over the sorted sample points and the quantile grid together.
    out: list[float] = []
    last = len(qs) - 1
    j = 1
    step = 1.0 / (num_tasks - 1)
    for i in range(num_tasks):
        q = i * step
        if q <= qs[0]:
            out.append(float(values[0]))
            continue
        while j < last and q > qs[j]:
            j += 1
        if q > qs[j]:
            out.append(float(values[-1]))
            continue
        span = qs[j] - qs[j - 1]
        frac = 0.0 if span <= 0 else (q - qs[j - 1]) / span
        out.append(float(values[j - 1] + frac * (values[j] - values[j - 1])))
    return out


def stage_duration_ms(stage: StageSummary) -> int | None:
    """Wall time of a stage from its first task (or submission) to completion."""
    start = stage.first_task_launched_time_ms or stage.submission_time_ms
    if start is None or stage.completion_time_ms is None:
        return None
    return max(0, stage.completion_time_ms - start)


def safe_ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, with 0/0 = 0 and x/0 = inf."""
    if denominator > 0:
        return numerator / denominator
    return 0.0 if numerator <= 0 else math.inf


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence."""
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return float(ordered[mid]) if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def fmt_ms(ms: float) -> str:
    """Human duration: 850 ms, 5.1 s, 3.2 min, 1.5 h."""
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def fmt_bytes(num_bytes: float) -> str:
    """Human size in binary units: 512 B, 1.5 KiB, 3.0 GiB."""
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def fmt_ratio(value: float) -> str:
    """A ratio as 8.2× (or ∞×)."""
    return "∞×" if math.isinf(value) else f"{value:.1f}×"


def round2(value: float) -> float:
    """Round for display tables, keeping infinities JSON-safe via _json_scalar."""
    return value if math.isinf(value) else round(value, 2)
