"""Run features of a recurring application, from what Sparkscope stores about one run.

Pure: the caller hands in plain mappings (the application's totals, its environment properties,
executors and stages); no database, no clock. A :class:`RunFeatures` is what every model and the
verdict's causes read, and it round-trips through JSON (``to_json`` / ``from_json``) so that it can
be stored once per run and re-read cheaply by the backtest.

Key normalisation: the recurring key of a run is its application name with the configured
regexes removed (``recurring_key``), e.g. ``r"\\d{4}-\\d{2}-\\d{2}"`` turns ``etl 2026-10-05`` and
``etl 2026-10-06`` into one key ``etl``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from sparkscope.advisor.predict.iterations import iterations, round_ms
from sparkscope.saferegex import admitted

#: Spark settings whose change is reported as a cause and that enter the models.
KEY_SETTINGS = (
    "spark.master",
    "spark.executor.instances",
    "spark.executor.cores",
    "spark.executor.memory",
    "spark.sql.shuffle.partitions",
    "spark.sql.adaptive.enabled",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.serializer",
    "spark.dynamicAllocation.enabled",
    "spark.default.parallelism",
    "spark.memory.fraction",
)

#: Numeric features, in the order of :meth:`RunFeatures.vector`.
NUMERIC = (
    "input_bytes",
    "input_records",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
    "output_bytes",
    "tasks",
    "stages",
    "jobs",
    "executors",
    "cores",
    "executor_memory_bytes",
    "shuffle_partitions",
    "aqe",
    "broadcast_threshold_bytes",
    "hour_sin",
    "hour_cos",
    "weekday",
    "arg_day",
    "arg_0",
    "arg_1",
    "startup_ms",
    "iterations",
    # The wall time of one round of the run's loop (``iterations.round_ms``; 0 without one): a
    # time-like measure, read only from training runs (``rounds_prior``), never from the run
    # predicted. Last, so that vectors stored before it only lack their tail (``padded``).
    "round_ms",
)

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_LOCAL = re.compile(r"^local\[(\d+|\*)(?:,\d+)?\]$")
_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_DIGITS = re.compile(r"\d+")
#: A whole number as Spark writes one ('²' is a digit to str.isdigit, not to int).
_ASCII_DIGITS = re.compile(r"[0-9]{1,18}")
#: Stages kept per run for the per-stage causes of a regression.
MAX_STAGES = 40
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def padded(vector: Sequence[float]) -> list[float]:
    """A stored vector in the order of ``NUMERIC``: one stored before a feature was appended
    gets 0 for it (not measured)."""
    out = [float(v) for v in vector[: len(NUMERIC)]]
    return out + [0.0] * (len(NUMERIC) - len(out))


def parse_size(text: str | None, default_unit: str = "") -> float | None:
    """Spark's size strings ('2g', '512m', '10485760') in bytes; None when unreadable."""
    if text is None:
        return None
    m = _SIZE.match(text)
    if not m:
        return None
    unit = (m.group(2) or default_unit).lower()
    return float(m.group(1)) * _UNITS.get(unit, 1)


def recurring_key(name: str, patterns: Sequence[str] = ()) -> str:
    """The application name with every normalisation regex removed, whitespace collapsed.

    Each pattern runs as :mod:`sparkscope.saferegex` admits it: a pattern whose worst case is
    superlinear rewrites only the first ``limit`` characters of a very long name."""
    out = name
    for p in patterns:
        out = admitted(p).sub("", out)
    out = " ".join(out.split())
    return out or name


def command_args(command: str | None) -> tuple[float | None, list[float]]:
    """The date and the numbers among the application's own arguments in ``sun.java.command``.

    Only what follows the application file (the first ``.py``/``.jar``/``.R`` after the
    spark-submit options) counts. Returns the first date as a day number (days since 1970-01-01)
    or None, and up to two other numbers.
    """
    if not command:
        return None, []
    parts = command.split()
    start = 0
    for i, p in enumerate(parts):
        if p.endswith((".py", ".jar", ".R")) and i > 0:
            start = i + 1
            break
    tail = " ".join(parts[start:])
    day: float | None = None
    for m in _DATE.finditer(tail):
        try:
            day = float(date(*map(int, m.groups())).toordinal() - EPOCH_ORDINAL)
        except ValueError:
            continue
        break
    numbers = [float(m.group(0)) for m in _NUMBER.finditer(_DATE.sub(" ", tail))]
    return day, numbers[:2]


def _cores(settings: Mapping[str, str], executors: Iterable[Mapping[str, Any]]) -> float:
    execs = list(executors)
    workers = [e for e in execs if not e.get("is_driver")]
    total = sum(int(e.get("total_cores") or 0) for e in workers)
    if total <= 0:  # local mode: the driver is the one executor
        total = sum(int(e.get("total_cores") or 0) for e in execs if e.get("is_driver"))
    if total <= 0:
        m = _LOCAL.match(settings.get("spark.master", ""))
        if m and m.group(1).isdigit():
            total = int(m.group(1))
    return float(max(total, 1))


def _stage_label(name: str | None) -> str:
    return _DIGITS.sub("#", (name or "?").split("\n")[0])[:80]


@dataclass
class RunFeatures:
    """What one run had to do and how it was set up (numbers, settings, per-stage work)."""

    values: dict[str, float]
    settings: dict[str, str] = field(default_factory=dict)
    shape: str = ""
    #: [label, bytes read (input + shuffle), executor run time ms] per completed stage, in order.
    stage_work: list[list[Any]] = field(default_factory=list)
    failed_tasks: int = 0
    failed_stages: int = 0
    spark_version: str = ""

    def vector(self) -> list[float]:
        return [float(self.values.get(n, 0.0)) for n in NUMERIC]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunFeatures:
        return cls(
            values={str(k): float(v) for k, v in dict(data.get("values") or {}).items()},
            settings={str(k): str(v) for k, v in dict(data.get("settings") or {}).items()},
            shape=str(data.get("shape") or ""),
            stage_work=[list(x) for x in data.get("stage_work") or []],
            failed_tasks=int(data.get("failed_tasks") or 0),
            failed_stages=int(data.get("failed_stages") or 0),
            spark_version=str(data.get("spark_version") or ""),
        )


def run_features(
    app: Mapping[str, Any],
    properties: Mapping[tuple[str, str], str | None],
    executors: Iterable[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    first_job_ms: int | None = None,
    jobs: Iterable[Mapping[str, Any]] = (),
) -> RunFeatures:
    """Features of one run from its stored rows.

    ``app`` holds the application's columns (input_bytes, num_tasks, start_time_ms, ...),
    ``properties`` maps (section, name) to value, ``stages`` are stage-attempt rows and
    ``first_job_ms`` the submission of the first job: the time before it is the run's start-up
    (JVM, session, driver set-up), a fixed cost the size of the input does not explain. ``jobs``
    (description, and ``submitted`` / ``completed`` epoch ms) give the run's iterations and the
    wall time of one of its rounds (see ``iterations``).
    """
    jobs = list(jobs)
    spark = {n: v or "" for (s, n), v in properties.items() if s == "spark"}
    settings = {k: spark[k] for k in KEY_SETTINGS if k in spark}
    ran = sorted(
        (s for s in stages if s.get("status") != "SKIPPED" and int(s.get("num_tasks") or 0) > 0),
        key=lambda s: (int(s.get("stage_id") or 0), int(s.get("attempt_id") or 0)),
    )
    records = sum(int(s.get("input_records") or 0) for s in ran)
    labels = [_stage_label(s.get("name")) for s in ran if not s.get("attempt_id")]
    shape = hashlib.sha1("|".join(labels).encode()).hexdigest()[:12] if labels else ""
    start = app.get("start_time_ms")
    hour = weekday = 0.0
    if start:
        t = datetime.fromtimestamp(int(start) / 1000, tz=UTC)
        hour, weekday = t.hour + t.minute / 60, float(t.weekday())
    day, args = command_args(properties.get(("system", "sun.java.command")))
    aqe = spark.get("spark.sql.adaptive.enabled", "true").strip().lower() != "false"
    values = {
        "input_bytes": float(app.get("input_bytes") or 0),
        "input_records": float(records),
        "shuffle_read_bytes": float(app.get("shuffle_read_bytes") or 0),
        "shuffle_write_bytes": float(app.get("shuffle_write_bytes") or 0),
        "output_bytes": float(app.get("output_bytes") or 0),
        "tasks": float(app.get("num_tasks") or 0),
        "stages": float(app.get("num_stages") or 0),
        "jobs": float(app.get("num_jobs") or 0),
        "executors": float(app.get("num_executors") or 0),
        "cores": _cores(spark, executors),
        "executor_memory_bytes": parse_size(spark.get("spark.executor.memory"), "m") or 1 << 30,
        "shuffle_partitions": float(
            int(spark.get("spark.sql.shuffle.partitions", "200") or 200)
            if _ASCII_DIGITS.fullmatch(spark.get("spark.sql.shuffle.partitions", "200").strip())
            else 200
        ),
        "aqe": 1.0 if aqe else 0.0,
        "broadcast_threshold_bytes": parse_size(
            spark.get("spark.sql.autoBroadcastJoinThreshold"), ""
        )
        or 10.0 * (1 << 20),
        "hour_sin": math.sin(2 * math.pi * hour / 24),
        "hour_cos": math.cos(2 * math.pi * hour / 24),
        "weekday": weekday,
        "arg_day": day if day is not None else 0.0,
        "startup_ms": _startup(first_job_ms, start, app.get("duration_ms")),
        "iterations": float(iterations(jobs)),
    }
    if day is not None:  # the logical day the run is for beats the wall clock's
        values["weekday"] = float((int(day) + 3) % 7)  # 1970-01-01 was a Thursday (3)
    for i, a in enumerate(args):
        values[f"arg_{i}"] = a
    if values["iterations"] > 0:
        values["round_ms"] = round_ms(jobs)
    return RunFeatures(
        values=values,
        settings=settings,
        shape=shape,
        stage_work=_stage_work(ran),
        failed_tasks=int(app.get("num_failed_tasks") or 0),
        failed_stages=int(app.get("num_failed_stages") or 0),
        spark_version=str(app.get("spark_version") or ""),
    )


def _startup(first_job_ms: int | None, start: Any, duration_ms: Any) -> float:
    """The time before the first job, never negative and never longer than the run itself (a
    first job stamped after the run ended is a clock that disagrees, not a start-up)."""
    if first_job_ms is None or not start:
        return 0.0
    value = max(0, first_job_ms - int(start))
    if duration_ms:
        value = min(value, int(duration_ms))
    return float(value)


def _stage_work(ran: Sequence[Mapping[str, Any]], keep: int = MAX_STAGES) -> list[list[Any]]:
    """[label, bytes read, run time ms] of the ``keep`` longest stages, in stage order."""
    longest = sorted(ran, key=lambda s: -int(s.get("executor_run_time_ms") or 0))[:keep]
    chosen = {id(s) for s in longest}
    return [
        [
            f"stage {s.get('stage_id')} ({_stage_label(s.get('name'))[:40]})",
            int(s.get("input_bytes") or 0) + int(s.get("shuffle_read_bytes") or 0),
            int(s.get("executor_run_time_ms") or 0),
        ]
        for s in ran
        if id(s) in chosen
    ]
