"""SQL metric values as the History Server formats them (``SQLMetrics.stringValue``), parsed.

Spark 3.1 - 4.x: a sum or count is ``"1,700"``; a size, timing or nano-timing metric with more
than one task is ``"total (min, med, max (stageId: taskId))\\n45.8 MiB (22.9 MiB, 22.9 MiB,
22.9 MiB (stage 5.0: task 16))"`` and with one task just ``"280.0 B"``; a maximum computed on the
driver says ``(driver)``; an average metric is ``"(min, med, max (stageId: taskId)):\\n(1.2, 1.3,
1.3 (stage 8.0: task 19))"``. Spark 3.0 and older put ``total (min, med, max)`` in the metric's
name and leave out the stage and task. Sizes are 1024-based (``B`` .. ``EiB``; old ``KB``/``MB``
labels are read the same way), durations ``ms`` / ``s`` / ``m`` / ``h``, counts US-formatted.

Nothing here raises: a value in an unknown format keeps its text and gets the unit ``unknown``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, NamedTuple

#: The raw text kept for a metric whose value could not be read.
RAW_METRIC_KEEP_CHARS = 200

_SIZE_UNITS: dict[str, float] = {
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "mb": 1024**2,
    "mib": 1024**2,
    "gb": 1024**3,
    "gib": 1024**3,
    "tb": 1024**4,
    "tib": 1024**4,
    "pb": 1024**5,
    "pib": 1024**5,
    "eb": 1024**6,
    "eib": 1024**6,
}
# "m" alone is minutes in Spark's duration strings (msDurationToString), never megabytes.
_TIME_UNITS_MS: dict[str, float] = {
    "ns": 1e-6,
    "us": 1e-3,
    "µs": 1e-3,
    "ms": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "m": 60_000.0,
    "min": 60_000.0,
    "h": 3_600_000.0,
    "hr": 3_600_000.0,
    "d": 86_400_000.0,
}

#: Units a parsed metric carries: bytes, milliseconds, a count, an average (no total) or unknown.
BYTES, MS, COUNT, AVERAGE, UNKNOWN = "bytes", "ms", "count", "average", "unknown"

_NUM = r"[-+]?(?:\d[\d,]*)?(?:\.\d+)?(?:[eE][-+]?\d+)?"
_QTY_RE = re.compile(r"^\s*(" + _NUM + r")\s*([A-Za-zµ]+)?\s*$")
_DECIMAL_COMMA_RE = re.compile(r"[-+]?\d+,\d{1,2}")
# What Spark itself prints: a US-grouped count ("1,700") or a plain decimal, then one space and a
# unit ("45.8 MiB", "12 ms"). Read with str methods; anything else takes the general path.
# (Possessive runs and ``(?:x|)`` for ``(?:x)?``: the same matches with less backtracking and
# without the regex engine's slow general repeat for an optional group.)
_PLAIN_NUM_RE = re.compile(r"\d{1,3}+(?:,\d{3})*+(?:\.\d++|)|\d++(?:\.\d++|)", re.ASCII)
# unit (lower case) -> (factor, unit kind): sizes first, as parse_quantity looks them up
_UNIT_FACTORS: dict[str, tuple[float, str]] = {
    **{u: (f, BYTES) for u, f in _SIZE_UNITS.items()},
    **{u: (f, MS) for u, f in _TIME_UNITS_MS.items() if u not in _SIZE_UNITS},
}


def _to_float(num: str) -> float | None:
    text = num.strip()
    if not text or text in "+-.":
        return None
    # A decimal comma ("45,8") from a non-US locale: one or two digits after the only comma.
    text = text.replace(",", ".") if _DECIMAL_COMMA_RE.fullmatch(text) else text.replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def parse_quantity(text: str | None) -> tuple[float | None, str]:
    """``'1,700'`` -> (1700, count); ``'45.8 MiB'`` -> (bytes, bytes); ``'1.2 s'`` -> (1200, ms)."""
    if text:
        num, _, unit = text.partition(" ")
        if num.isdigit() and num.isascii():  # most counts: the pattern's plainest form
            figure: float | None = float(num)
        elif _PLAIN_NUM_RE.fullmatch(num):
            figure = float(num.replace(",", ""))
        else:
            figure = None
        if figure is not None:
            if not unit:
                return figure, COUNT
            if unit.isascii() and unit.isalpha():
                factor = _UNIT_FACTORS.get(unit.lower())
                return (figure * factor[0], factor[1]) if factor is not None else (None, UNKNOWN)
    m = _QTY_RE.match(text or "")
    if not m:
        return None, UNKNOWN
    value = _to_float(m.group(1))
    if value is None:
        return None, UNKNOWN
    unit = (m.group(2) or "").lower()
    if not unit:
        return value, COUNT
    if unit in _SIZE_UNITS:
        return value * _SIZE_UNITS[unit], BYTES
    if unit in _TIME_UNITS_MS:
        return value * _TIME_UNITS_MS[unit], MS
    return None, UNKNOWN


class ParsedMetric(NamedTuple):
    """One metric of a plan node. ``total`` is bytes, ms or a count (None for an average, whose
    median is ``med``); ``min``/``med``/``max`` are per-task figures when the text has them, and
    ``max_stage_id``/``max_stage_attempt``/``max_task_id`` the task with the maximum."""

    name: str
    unit: str
    total: float | None
    min: float | None = None
    med: float | None = None
    max: float | None = None
    max_stage_id: int | None = None
    max_stage_attempt: int | None = None
    max_task_id: int | None = None
    raw: str | None = None  # the text, only when it could not be read

    def stored(self) -> list[object]:
        """The compact form a node row keeps (see :data:`STORED_FIELDS`): every field but the
        name, in order."""
        return list(self[1:])


#: A metric's values as a plain tuple in :data:`STORED_FIELDS` order (a ParsedMetric without its
#: name): what a graph node keeps and its row stores (JSON writes a tuple as a list), made once.
MetricValues = tuple[
    str, float | None, float | None, float | None, float | None, int | None, int | None,
    int | None, str | None,
]  # fmt: skip
#: Where a value is in :data:`MetricValues`.
TOTAL_AT: Final = 1
STAGE_AT: Final = 5

_new = tuple.__new__
_NO_STATS: tuple[None, None, None, None, None, None, None] = (None,) * 7  # after the total

#: The order of the values of a stored metric (``sql_node.metrics`` maps name -> this list).
STORED_FIELDS = (
    "unit",
    "total",
    "min",
    "med",
    "max",
    "stage_id",
    "stage_attempt",
    "task_id",
    "raw",
)

# Old names (Spark 2.x / 3.0) and renamings, mapped to the Spark 3.1+ / 4.x names used downstream.
METRIC_ALIASES = {
    "number of files": "number of files read",
    "metadata time (ms)": "metadata time",
    "scan time total": "scan time",
    "data size (bytes)": "data size",
    "time to collect (ms)": "time to collect",
    "time to build (ms)": "time to build",
    "time to broadcast (ms)": "time to broadcast",
    "bytes of written output": "written output",
    "duration total": "duration",
}
_NAME_SUFFIXES = (
    " total (min, med, max)",
    " (min, med, max)",
    " total (min, med, max (stageId: taskId))",
)
_WHERE_RE = re.compile(r"^stage\s+(\d+)(?:\.(\d+))?\s*:\s*task\s+(\d+)$")
_STATS_RE = re.compile(
    r"^(?P<sum>[^()\n]*?)\s*\(\s*(?P<min>[^,()]+),\s*(?P<med>[^,()]+),\s*(?P<max>[^,()]+?)"
    r"\s*(?:\((?P<where>[^()]*)\))?\s*\)\s*$"
)
# The stats as Spark prints them ("45.8 MiB (22.9 MiB, 22.9 MiB, 22.9 MiB (stage 5.0: task 16))",
# "... (driver))"), each figure as number and unit: what _STATS_RE, parse_quantity and _WHERE_RE
# make of them, in one pass without backtracking; any other spacing or form is left to those.
# The runs are possessive (``++``: what follows them never starts with a digit or letter, so
# giving characters back could not help) and the optional parts are written as ``(?:x|)``: the
# same matches, without the regex engine's general repeat (``?``), which is much slower here.
_FIG = r"([0-9]++(?:\.[0-9]++|)) ([A-Za-z]++)"
_SPARK_STATS_RE = re.compile(
    rf"{_FIG} \({_FIG}, {_FIG}, {_FIG} "
    r"\((?:stage ([0-9]++)(?:\.([0-9]++)|): task ([0-9]++)|driver)\)\)"
)


@lru_cache(maxsize=4096)  # a small vocabulary: the metric names Spark's operators report
def canonical_metric_name(raw_name: str) -> tuple[str, str | None]:
    """Strip old ``total (min, med, max)`` suffixes and map renamed metrics: (name, unit hint)."""
    name = " ".join((raw_name or "").split())
    for suffix in _NAME_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    hint = MS if name.endswith(" (ms)") else BYTES if name.endswith(" (bytes)") else None
    name = METRIC_ALIASES.get(name, name)
    if name.endswith((" (ms)", " (bytes)")):
        name = name.rsplit(" (", 1)[0]
    return name, hint


def _where(where: str | None) -> tuple[int | None, int | None, int | None]:
    m = _WHERE_RE.match((where or "").strip())
    if not m:
        return None, None, None  # none, "driver", or unreadable
    return int(m.group(1)), int(m.group(2) or 0), int(m.group(3))


def _spark_stats(text: str, pos: int = 0) -> MetricValues | None:
    """Stats in Spark's own form (:data:`_SPARK_STATS_RE`) from ``text[pos:]``, else None."""
    sm = _SPARK_STATS_RE.fullmatch(text, pos)
    if sm is None:
        return None
    num, unit, mn, mn_unit, med, med_unit, mx, mx_unit, stage, attempt, task = sm.groups()
    factors = _UNIT_FACTORS
    factor = factors.get(unit.lower())
    if factor is None:
        return None
    # (the figures' factors looked up here rather than in a helper: this runs for most metrics)
    mn_f, med_f, mx_f = (
        factors.get(mn_unit.lower()),
        factors.get(med_unit.lower()),
        factors.get(mx_unit.lower()),
    )
    return (
        factor[1],
        float(num) * factor[0],
        float(mn) * mn_f[0] if mn_f is not None else None,
        float(med) * med_f[0] if med_f is not None else None,
        float(mx) * mx_f[0] if mx_f is not None else None,
        int(stage) if stage else None,
        int(attempt or 0) if stage else None,
        int(task) if stage else None,
        None,
    )


#: The first line of a size or timing metric of several tasks as Spark 3.1+ prints it.
_SPARK_HEADER = "total (min, med, max (stageId: taskId))\n"


def parse_metric(raw_name: str, raw_value: object) -> ParsedMetric:
    """One ``{name, value}`` pair of a node; never raises."""
    name, hint = canonical_metric_name(raw_name if type(raw_name) is str else str(raw_name))
    return _new(ParsedMetric, (name, *metric_values(raw_value, hint)))  # type: ignore[no-any-return]


def _unknown(raw: str) -> MetricValues:
    return (UNKNOWN, None, None, None, None, None, None, None, raw[:RAW_METRIC_KEEP_CHARS])


def metric_values(raw_value: object, hint: str | None) -> MetricValues:
    """The values of a metric whose name gave the unit ``hint`` (:func:`canonical_metric_name`)
    and whose value is ``raw_value``; never raises."""
    if type(raw_value) is str:
        # The two forms nearly every value has, read without the general path's tests (which
        # give the same answer for them): a plain total, and Spark's stats after its header.
        if "(" not in raw_value:
            text = raw_value.strip()
            if text.isdigit() and text.isascii():  # a count: parse_quantity's plainest form
                return (hint or COUNT, float(text)) + _NO_STATS
            total, unit = parse_quantity(text)
            if total is None:
                return _unknown(raw_value)
            return (hint if (unit == COUNT and hint) else unit, total) + _NO_STATS
        if raw_value.startswith(_SPARK_HEADER):
            spark = _spark_stats(raw_value, len(_SPARK_HEADER))
            if spark is not None:
                return spark
    raw = str(raw_value if raw_value is not None else "")
    text = raw.strip()
    header = ""
    if text.startswith(("total (min, med, max", "(min, med, max")) and "\n" in text:
        header, text = text.split("\n", 1)
        text = text.strip()
    if text.startswith("(") or header.startswith("(min"):
        m = _STATS_RE.match("x " + text if text.startswith("(") else text)
        if m:
            mn, med, mx = (_to_float(m.group(g)) for g in ("min", "med", "max"))
            return (AVERAGE, None, mn, med, mx, *_where(m.group("where")), None)
    if "(" in text:  # total (min, med, max ...); without a parenthesis, a plain total
        spark = _spark_stats(text)
        if spark is not None:
            return spark
        m = _STATS_RE.match(text)
        if m and m.group("sum").strip():
            total, unit = parse_quantity(m.group("sum"))
            if total is not None:
                mn = parse_quantity(m.group("min"))[0]
                med = parse_quantity(m.group("med"))[0]
                mx = parse_quantity(m.group("max"))[0]
                unit = hint if (unit == COUNT and hint) else unit
                return (unit, total, mn, med, mx, *_where(m.group("where")), None)
    total, unit = parse_quantity(text)
    if total is None:
        return _unknown(raw)
    return (hint if (unit == COUNT and hint) else unit, total) + _NO_STATS
