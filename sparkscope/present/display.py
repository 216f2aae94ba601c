"""The presentation vocabulary: severity names, colours and CSS classes, and one formatter per unit.

Everything a page, a chart or the API shows as text goes through here, so a duration reads the
same in a finding's title, a table, a chart's hover and the JSON. No database, no Flask.

Durations follow the rule of the heuristics' titles (``heuristics.stats.fmt_ms``: 850 ms, 5.1 s,
3.2 min, 1.5 h), so a title and the table beside it never disagree; bytes are binary units
(``fmt_bytes``: 1.5 KiB). Unknown values print as an en dash.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import cast

from heuristics.appdata import StageSummary
from heuristics.result import Severity
from heuristics.stats import fmt_bytes as _bytes_rule
from heuristics.stats import fmt_ms as _duration_rule
from heuristics.stats import stage_duration_ms as _stage_duration_rule

#: What an unknown value prints as.
MISSING = "–"

# ------------------------------------------------------------------------------------ severity

#: Colour of each severity: badges, borders and chart markers all read it from here.
SEVERITY_COLORS: dict[Severity, str] = {
    Severity.NONE: "#2e7d32",
    Severity.LOW: "#7cb342",
    Severity.MODERATE: "#f9a825",
    Severity.SEVERE: "#ef6c00",
    Severity.CRITICAL: "#c62828",
}
#: Applications not analysed yet have no severity.
UNKNOWN_COLOR = "#90a4ae"
# Text on a light badge colour needs to be dark to stay readable.
_DARK_TEXT = {Severity.MODERATE}


@dataclass(frozen=True)
class SeverityStyle:
    """How one severity is shown: its name, label, colours and CSS classes."""

    level: int | None
    name: str
    color: str
    text_color: str

    @property
    def label(self) -> str:
        """Upper-case label, as in tables ("SEVERE")."""
        return self.name.upper()

    @property
    def css_class(self) -> str:
        """Class of a badge in this severity's colour."""
        return f"sev-{self.name}"

    @property
    def border_class(self) -> str:
        """Class of a panel or finding whose left border takes this severity's colour."""
        return f"sev-border-{self.name}"


#: Every severity from NONE to CRITICAL, in order.
SEVERITIES: tuple[SeverityStyle, ...] = tuple(
    SeverityStyle(int(s), s.name.lower(), SEVERITY_COLORS[s], "#222" if s in _DARK_TEXT else "#fff")
    for s in Severity
)
UNKNOWN = SeverityStyle(None, "unknown", UNKNOWN_COLOR, "#fff")
#: Lower-case severity names by level ("none" … "critical").
SEVERITY_NAMES: tuple[str, ...] = tuple(s.name for s in SEVERITIES)


def severity_style(level: int | None) -> SeverityStyle:
    """The style of a severity level; UNKNOWN for None or a level out of range."""
    if level is None or isinstance(level, bool) or not 0 <= int(level) < len(SEVERITIES):
        return UNKNOWN
    return SEVERITIES[int(level)]


def severity_name(level: int | None) -> str:
    """Lower-case name of a severity level; 'unknown' before the application is analysed."""
    return severity_style(level).name


def severity_level(name: str) -> int | None:
    """The level of a severity name (any case), None when it is not one."""
    lowered = name.lower()
    return SEVERITY_NAMES.index(lowered) if lowered in SEVERITY_NAMES else None


def severity_css() -> str:
    """Stylesheet rules for every severity: a variable, a badge class and a border class."""
    rules = []
    for s in (*SEVERITIES, UNKNOWN):
        rules.append(
            f".{s.css_class}{{background:{s.color};color:{s.text_color}}}"
            f".{s.border_class}{{border-left-color:{s.color}}}"
        )
    variables = ";".join(f"--sev-{s.name}:{s.color}" for s in (*SEVERITIES, UNKNOWN))
    return f":root{{{variables}}}" + "".join(rules)


# ---------------------------------------------------------------------------------- formatters


def fmt_duration_ms(value: float | None) -> str:
    """A duration in milliseconds: 850 ms, 5.1 s, 3.2 min, 1.5 h (negative keeps its sign)."""
    if value is None or _bad(value):
        return MISSING
    ms = float(value)
    return ("-" if ms < 0 else "") + _duration_rule(abs(ms))


def fmt_seconds(value: float | None) -> str:
    """A duration in seconds, written as :func:`fmt_duration_ms` writes it."""
    return MISSING if value is None else fmt_duration_ms(float(value) * 1000)


def fmt_duration_ns(value: float | None) -> str:
    """A duration in nanoseconds (Spark's CPU time), written as :func:`fmt_duration_ms` does."""
    return MISSING if value is None else fmt_duration_ms(float(value) / 1e6)


def fmt_bytes(value: float | None) -> str:
    """A size in binary units: 512 B, 1.5 KiB, 3.0 GiB (negative keeps its sign)."""
    if value is None or _bad(value):
        return MISSING
    return _bytes_rule(value)


def fmt_hours(value: float | None) -> str:
    """Core- or GB-hours: two decimals from 1 up, three significant digits below (0.0042), so a
    small application never reads 0.00; "< 0.001" below that."""
    if value is None or _bad(value):
        return MISSING
    if abs(value) >= 1:
        return f"{value:,.2f}"
    if value != 0 and abs(value) < 0.001:
        return "< 0.001" if value > 0 else "> -0.001"
    return "0" if value == 0 else f"{value:.3g}"


def fmt_money(value: float | None, currency: str = "") -> str:
    """An amount with two decimals and its currency: 12.50 USD."""
    if value is None or _bad(value):
        return MISSING
    return f"{value:,.2f} {currency}".rstrip()


def fmt_times(value: float | None) -> str:
    """A ratio of two like quantities: 8.2× (∞× when the denominator was zero)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return "∞×" if math.isinf(value) else f"{value:,.1f}×"


def fmt_fraction(value: float | None, digits: int = 1) -> str:
    """A share of a whole (0.085) as a percentage: 8.5%."""
    if value is None or _bad(value):
        return MISSING
    return f"{value * 100:.{digits}f}%"


def fmt_pct_change(value: float | None) -> str:
    """A change already in percent, with its sign: +12.5% / -3.0%."""
    if value is None or _bad(value):
        return MISSING
    return f"{value:+.1f}%"


def fmt_count(value: float | None) -> str:
    """A count with thousands separators: 1,234."""
    if value is None or _bad(value):
        return MISSING
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"


def fmt_number(value: float | None, digits: int = 2) -> str:
    """A plain number: integers with separators, floats with ``digits`` decimals."""
    if isinstance(value, bool):
        return fmt_bool(value)
    if value is None or _bad(value):
        return MISSING
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def fmt_bool(value: bool | None) -> str:
    """yes / no."""
    return MISSING if value is None else ("yes" if value else "no")


def fmt_time_ms(value: int | None) -> str:
    """Epoch ms -> '2026-01-02T03:04:05Z' (UTC, seconds precision)."""
    if value is None:
        return MISSING
    stamp = dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_time_short_ms(value: int | None) -> str:
    """Epoch ms -> '2026-01-02 03:04' (UTC, minutes): for narrow table columns."""
    if value is None:
        return MISSING
    stamp = dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%d %H:%M")


def fmt_value(value: object) -> str:
    """A value of unknown unit: numbers rounded, booleans yes/no, the rest as text."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return fmt_bool(value)
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return "∞" if math.isinf(value) else MISSING
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def fmt_unit(value: object, unit: str, currency: str = "") -> str:
    """``value`` in ``unit``: ms, ns, seconds, bytes, hours, money, times, fraction, count, bool,
    severity; anything else as :func:`fmt_value`."""
    if value is None:
        return MISSING
    if unit == "severity":
        return severity_style(value if isinstance(value, int) else None).label
    if unit == "bool":
        return fmt_bool(bool(value))
    if not isinstance(value, int | float) or isinstance(value, bool):
        return fmt_value(value)
    formatter = _BY_UNIT.get(unit)
    if unit == "money":
        return fmt_money(value, currency)
    return formatter(value) if formatter is not None else fmt_value(value)


_BY_UNIT = {
    "ratio": fmt_fraction,  # the resource catalog's efficiencies: a share of one
    "ms": fmt_duration_ms,
    "ns": fmt_duration_ns,
    "seconds": fmt_seconds,
    "bytes": fmt_bytes,
    "hours": fmt_hours,
    "times": fmt_times,
    "fraction": fmt_fraction,
    "count": fmt_count,
}


def stage_duration_ms(stage: object) -> int | None:
    """A stage attempt's wall time by the heuristics' rule: completion − first task launch (or
    submission). ``stage`` is any row with those three ``*_time_ms`` attributes."""
    return _stage_duration_rule(cast(StageSummary, stage))


def _bad(value: float) -> bool:
    return isinstance(value, float) and (math.isnan(value) or math.isinf(value))


def one_line(doc: str, title: str = "") -> str:
    """The first sentence of a heuristic's docstring, without the title it starts with
    ("Disk spill: how much a stage spilled…" -> "How much a stage spilled…")."""
    first = " ".join(doc.strip().split("\n\n", 1)[0].split())
    head, sep, rest = first.partition(": ")
    if sep and rest and (not title or head.lower() == title.lower() or len(head) <= 40):
        first = rest
    return first[:1].upper() + first[1:]


# -------------------------------------------------------------------------------------- compare

#: Application totals whose increase is a regression: time, failures, spill and waste. Other
#: totals (input, output, shuffle, task counts, executors) change with the data, neither better
#: nor worse, so a compare page does not colour them.
WORSE_WHEN_HIGHER = frozenset(
    {
        "duration_ms",
        "executor_run_time_ms",
        "executor_cpu_time_ns",
        "jvm_gc_time_ms",
        "num_failed_jobs",
        "num_failed_stages",
        "num_failed_tasks",
        "memory_bytes_spilled",
        "disk_bytes_spilled",
        "allocated_core_hours",
        "wasted_core_hours",
    }
)


def change_class(metric_key: str, delta: float | None) -> str:
    """'worse', 'better' or '' for a change of an application total from left to right."""
    if not delta or metric_key not in WORSE_WHEN_HIGHER:
        return ""
    return "worse" if delta > 0 else "better"


#: Spark settings that differ on every run (ids, times, ports, per-run paths): a compare page
#: hides them, as they say nothing about why two runs behaved differently.
PER_RUN_CONFIG_KEYS = frozenset(
    {
        "spark.app.id",
        "spark.app.attempt.id",
        "spark.app.startTime",
        "spark.app.submitTime",
        "spark.app.initial.jar.urls",
        "spark.app.initial.file.urls",
        "spark.app.initial.archive.urls",
        "spark.driver.port",
        "spark.driver.host",
        "spark.driver.appUIAddress",
        "spark.blockManager.port",
        "spark.driver.blockManager.port",
        "spark.ui.proxyBase",
        "spark.repl.class.uri",
        "spark.repl.class.outputDir",
        "spark.yarn.app.id",
        "spark.yarn.app.container.log.dir",
        "spark.kubernetes.driver.pod.name",
        "spark.kubernetes.executor.podNamePrefix",
    }
)
#: Prefixes of per-run settings (YARN's proxy filter parameters name the application).
PER_RUN_CONFIG_PREFIXES = ("spark.org.apache.hadoop.yarn.server.webproxy.amfilter.",)


def is_per_run_setting(key: str) -> bool:
    """True for a Spark setting that changes on every run (see ``PER_RUN_CONFIG_KEYS``)."""
    return key in PER_RUN_CONFIG_KEYS or key.startswith(PER_RUN_CONFIG_PREFIXES)


# ------------------------------------------------------------------------------ chart scaling

_DURATION_SCALES = ((3_600_000.0 * 2, 3_600_000.0, "hours"), (120_000.0, 60_000.0, "minutes"))
_BYTE_SCALES = tuple((1024.0**p, 1024.0**p, u) for p, u in ((4, "TiB"), (3, "GiB"), (2, "MiB")))


def axis_scale(unit: str, values: list[float]) -> tuple[float, str]:
    """Divisor and axis label that show ``values`` in ``unit`` as numbers people read at a glance:
    seconds for runs under two minutes, minutes under two hours, hours above; bytes in the
    largest binary unit the biggest value reaches."""
    top = max((abs(v) for v in values), default=0.0)
    if unit in ("ms", "ns"):
        ms = top / 1e6 if unit == "ns" else top
        factor = 1e6 if unit == "ns" else 1.0
        for bound, divisor, label in _DURATION_SCALES:
            if ms >= bound:
                return divisor * factor, label
        return 1000.0 * factor, "seconds"
    if unit == "bytes":
        for bound, divisor, label in _BYTE_SCALES:
            if top >= bound:
                return divisor, label
        return 1024.0, "KiB"
    if unit == "hours":
        return 1.0, "core-hours"
    return 1.0, ""
