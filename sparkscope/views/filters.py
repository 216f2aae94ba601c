"""Jinja filters: bytes, durations, UTC times, severities, numbers, and safe help text."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from markupsafe import Markup, escape

from heuristics.base import fmt_bytes as heuristic_fmt_bytes
from sparkscope.catalogs import Metric, severity_name, utc_iso


def fmt_bytes(value: float | None) -> str:
    """1536 -> '1.5 KiB' (binary units, as the findings' titles write them)."""
    return "–" if value is None else heuristic_fmt_bytes(value)


def fmt_duration_ms(value: float | None) -> str:
    """3723000 -> '1h 02m 03s'; under a minute keeps tenths ('4.2s')."""
    if value is None:
        return "–"
    ms = float(value)
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 60_000:
        return f"{sign}{ms / 1000:.1f}s" if ms >= 1000 or ms == 0 else f"{sign}{ms:.0f}ms"
    total_s = int(round(ms / 1000))
    hours, rest = divmod(total_s, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}h {minutes:02d}m {seconds:02d}s"
    return f"{sign}{minutes}m {seconds:02d}s"


def fmt_time_ms(value: int | None) -> str:
    """Epoch ms -> '2026-01-02T03:04:05Z' (UTC, seconds precision)."""
    return "–" if value is None else utc_iso(value)


def fmt_number(value: float | None, digits: int = 2) -> str:
    """Thousands separators for ints; fixed decimals for floats."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def fmt_metric(value: Any, metric: Metric) -> str:
    """A metric value in its unit."""
    if value is None:
        return "–"
    if metric.unit == "ms":
        return fmt_duration_ms(value)
    if metric.unit == "ns":
        return fmt_duration_ms(value / 1e6)
    if metric.unit == "bytes":
        return fmt_bytes(value)
    return fmt_number(value)


def fmt_pct(value: float | None) -> str:
    """+12.5% / -3.0%."""
    if value is None:
        return "–"
    return f"{value:+.1f}%"


def fmt_value(value: Any) -> str:
    """A details-table cell: floats rounded, the rest as text."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def merge_args(args: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Query arguments with ``changes`` applied; a None value removes the key."""
    out = dict(args)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*")


def _inline(text: str) -> Markup:
    out = Markup("")
    pos = 0
    for m in _INLINE.finditer(text):
        out += escape(text[pos : m.start()])
        if m.group(1) is not None:
            out += Markup("<code>%s</code>") % m.group(1)
        else:
            out += Markup("<strong>%s</strong>") % m.group(2)
        pos = m.end()
    return out + escape(text[pos:])


def render_doc(text: str) -> Markup:
    """A docstring as HTML: paragraphs, '- ' lists, `code` and **bold**; everything else escaped."""
    html = Markup("")
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.splitlines()
        if lines and lines[0].lstrip().startswith("- "):
            items: list[str] = []
            for line in lines:
                stripped = line.strip()
                if stripped.startswith("- "):
                    items.append(stripped[2:])
                elif items:
                    items[-1] += " " + stripped
            html += Markup("<ul>")
            for item in items:
                html += Markup("<li>%s</li>") % _inline(item)
            html += Markup("</ul>")
        else:
            # A paragraph may end with a list, as in "**How to fix.**\n- ...".
            para: list[str] = []
            rest: list[str] = []
            for i, line in enumerate(lines):
                if line.lstrip().startswith("- "):
                    rest = lines[i:]
                    break
                para.append(line.strip())
            html += Markup("<p>%s</p>") % _inline(" ".join(para))
            if rest:
                html += render_doc("\n".join(rest))
    return html


def register_filters(app: Flask) -> None:
    """Install the filters and globals on the app's Jinja environment."""
    app.jinja_env.filters.update(
        bytes=fmt_bytes,
        duration=fmt_duration_ms,
        utc=fmt_time_ms,
        num=fmt_number,
        metric=fmt_metric,
        pct=fmt_pct,
        cell=fmt_value,
        severity=severity_name,
        doc=render_doc,
        merge_args=merge_args,
    )
    app.jinja_env.globals["zip"] = zip
