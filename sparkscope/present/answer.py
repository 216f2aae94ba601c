"""The answer first: findings ranked, the one-line verdict of an application, the configuration
suggested for its next run as a ``--conf`` block, and what changed in a run in plain words.

Pure: results and stored change items in, text and small records out. A finding may carry
``conf`` (ordered (key, value) pairs: the settings its advice names) and ``stages`` ((stage id,
attempt id) pairs: where it was seen); results without them give neither.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from heuristics.result import HeuristicResult, Severity, rank_key
from sparkscope.present.display import fmt_bytes, fmt_duration_ms, fmt_hours, fmt_seconds


def finding_conf(f: Any) -> list[tuple[str, str]]:
    """The settings a finding suggests, in its order ((key, value) pairs as strings)."""
    pairs = getattr(f, "conf", None) or ()
    out = []
    for pair in pairs:
        if isinstance(pair, Mapping):
            key, value = pair.get("key"), pair.get("value")
        else:
            key, value = (tuple(pair) + (None, None))[:2]
        if key is not None and value is not None and str(key).strip():
            out.append((str(key).strip(), str(value)))
    return out


def finding_stages(f: Any) -> list[tuple[int, int]]:
    """The (stage id, attempt id) pairs a finding names; pairs that are not two integers are
    left out."""
    out = []
    for pair in getattr(f, "stages", None) or ():
        try:
            stage, attempt = (int(x) for x in tuple(pair)[:2])
        except (TypeError, ValueError):
            continue
        out.append((stage, attempt))
    return out


def _cost(f: HeuristicResult) -> tuple[float, float]:
    core_hours = f.impact.core_hours if f.impact and f.impact.core_hours else 0.0
    wall = f.impact.wall_seconds if f.impact and f.impact.wall_seconds else 0.0
    return core_hours, wall


def rank_findings(
    results: Iterable[HeuristicResult], by: str = "severity"
) -> list[HeuristicResult]:
    """Findings to read first first. ``severity``: the worst first, then the worse pattern (a
    capped SEVERE pattern before a LOW one), then the costliest (:func:`heuristics.result.rank_key`);
    ``impact``: the costliest first (core-hours, then wall time) whatever their severity."""
    if by != "impact":
        return sorted(results, key=rank_key)

    def key(f: HeuristicResult) -> tuple[float, ...]:
        core_hours, wall = _cost(f)
        return (-core_hours, -wall, -int(f.severity))

    return sorted(results, key=lambda f: (*key(f), f.name))


def cost_text(f: HeuristicResult) -> str:
    """What a finding costs in words, e.g. ``5.0 min of wall time, 1.25 core-hours``; "" when
    unknown."""
    if f.impact is None:
        return ""
    parts = []
    if f.impact.wall_seconds is not None:
        parts.append(f"{fmt_seconds(f.impact.wall_seconds)} of wall time")
    if f.impact.core_hours is not None:
        parts.append(f"{fmt_hours(f.impact.core_hours)} core-hours")
    return ", ".join(parts)


@dataclass(frozen=True)
class Verdict:
    """The one line under an application's title: its worst finding, what it costs, the fix."""

    severity: int
    heuristic: str
    heading: str  # the heuristic's title, e.g. "Stage skew"
    title: str  # the finding's own one-line summary
    cost: str
    fix: str  # the advice, "" when there is none
    conf: list[tuple[str, str]] = field(default_factory=list)
    others: int = 0  # further findings above NONE


def verdict_of(
    findings: Sequence[HeuristicResult], titles: Mapping[str, str] | None = None
) -> Verdict | None:
    """The verdict of an application from its findings (ranked or not); None when no finding is
    above NONE."""
    fired = rank_findings(f for f in findings if f.severity > Severity.NONE)
    if not fired:
        return None
    top = fired[0]
    return Verdict(
        severity=int(top.severity),
        heuristic=top.name,
        heading=(titles or {}).get(top.name, top.name),
        title=top.title,
        cost=cost_text(top),
        fix=top.advice,
        conf=finding_conf(top),
        others=len(fired) - 1,
    )


@dataclass(frozen=True)
class ConfLine:
    """One setting of the suggested configuration, with the findings that ask for it."""

    key: str
    value: str
    heuristics: tuple[str, ...]
    #: Other values other findings asked for (the first finding's value is kept).
    overruled: tuple[tuple[str, str], ...] = ()

    @property
    def arg(self) -> str:
        """``--conf key=value``, quoted for a shell."""
        return f"--conf {shlex.quote(f'{self.key}={self.value}')}"


def suggested_conf(findings: Sequence[HeuristicResult]) -> list[ConfLine]:
    """The settings the findings above NONE suggest, in the order of the ranked findings; when
    two ask for different values of one key, the higher-ranked one's value is kept and the
    other is listed as overruled."""
    lines: dict[str, ConfLine] = {}
    for f in rank_findings(x for x in findings if x.severity > Severity.NONE):
        for key, value in finding_conf(f):
            line = lines.get(key)
            if line is None:
                lines[key] = ConfLine(key, value, (f.name,))
            elif line.value == value:
                lines[key] = ConfLine(key, value, (*line.heuristics, f.name), line.overruled)
            else:
                lines[key] = ConfLine(
                    key, line.value, line.heuristics, (*line.overruled, (f.name, value))
                )
    return list(lines.values())


def conf_block(lines: Sequence[ConfLine]) -> str:
    """The ``--conf`` arguments for ``spark-submit``, one a line, ready to paste."""
    return " \\\n".join(line.arg for line in lines)


# ------------------------------------------------------------------------------ what changed


def _setting(value: Any) -> str:
    return "(unset)" if value is None else str(value)


def change_text(item: Mapping[str, Any], titles: Mapping[str, str] | None = None) -> str:
    """One stored change item (``sparkscope.advisor.predict.changes``) in plain words."""
    kind = item.get("kind")
    if kind == "setting":
        return f"{item.get('key')}: {_setting(item.get('before'))} → {_setting(item.get('after'))}"
    if kind == "size":
        before, after = (int(item.get(k) or 0) for k in ("before", "after"))
        return f"{item.get('what')}: {before} → {after}"
    if kind == "input":
        ratio = float(item.get("ratio") or 0)
        return (
            f"input {fmt_bytes(item.get('after'))}, {ratio:.1f}× the median of the earlier runs "
            f"({fmt_bytes(item.get('before'))})"
        )
    if kind == "stage":
        ratio = float(item.get("ratio") or 1)
        way = "slower" if ratio >= 1 else "faster"
        factor = ratio if ratio >= 1 else 1 / ratio
        return (
            f"{item.get('label')}: {factor:.1f}× {way} per byte read "
            f"({fmt_duration_ms(item.get('after_ms'))} for {fmt_bytes(item.get('after_bytes'))}, "
            f"was {fmt_duration_ms(item.get('before_ms'))} for "
            f"{fmt_bytes(item.get('before_bytes'))})"
        )
    if kind == "failures":
        return (
            f"more failures: {item.get('failed_tasks')} failed tasks, "
            f"{item.get('failed_stages')} failed stages (earlier runs at most "
            f"{item.get('before_tasks')} and {item.get('before_stages')})"
        )
    if kind == "finding":
        name = str(item.get("heuristic"))
        label = (titles or {}).get(name, name)
        return f"new finding: {label}" if item.get("change") == "new" else f"no longer: {label}"
    return str(item)


#: The order the kinds of change are listed in: what a person can act on first.
CHANGE_ORDER = ("setting", "size", "input", "stage", "failures", "finding")


def change_lines(
    items: Iterable[Mapping[str, Any]] | None, titles: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """(kind, text) of stored change items, settings first."""
    kept = [i for i in items or () if isinstance(i, Mapping)]
    order = {k: n for n, k in enumerate(CHANGE_ORDER)}
    kept.sort(key=lambda i: order.get(str(i.get("kind")), len(order)))
    return [(str(i.get("kind")), change_text(i, titles)) for i in kept]
