"""Jinja filters and globals: the formatters of sparkscope.present.display, severity styles, finding
details tables, and safe help text."""

from __future__ import annotations

import re
from typing import Any, Protocol

from flask import Flask
from markupsafe import Markup, escape

from sparkscope.accounting.resources import price_of
from sparkscope.present.answer import change_lines, conf_block, finding_conf, finding_stages
from sparkscope.present.columns import details_table, finding_value, param_unit
from sparkscope.present.display import (
    SEVERITIES,
    UNKNOWN,
    change_class,
    fmt_bool,
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_fraction,
    fmt_hours,
    fmt_money,
    fmt_number,
    fmt_pct_change,
    fmt_seconds,
    fmt_time_ms,
    fmt_time_short_ms,
    fmt_times,
    fmt_unit,
    fmt_value,
    severity_css,
    severity_name,
    severity_style,
    stage_duration_ms,
)
from sparkscope.present.sizing import fmt_deadline, point_sentence, size_conf, size_words
from sparkscope.redaction import redact_text
from sparkscope.web.rows import plan_tree, stage_executor_rows, stage_rows, task_rows


class _HasUnit(Protocol):
    @property
    def unit(self) -> str: ...


def fmt_metric(value: Any, metric: _HasUnit) -> str:
    """A metric value in its unit."""
    return fmt_unit(value, metric.unit)


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
        seconds=fmt_seconds,
        hours=fmt_hours,
        money=fmt_money,
        price_of=price_of,
        fraction=fmt_fraction,
        times=fmt_times,
        count=fmt_count,
        yesno=fmt_bool,
        utc=fmt_time_ms,
        utc_short=fmt_time_short_ms,
        num=fmt_number,
        metric=fmt_metric,
        unit=fmt_unit,
        pct=fmt_pct_change,
        cell=fmt_value,
        severity=severity_name,
        sev=severity_style,
        details_table=details_table,
        finding_value=finding_value,
        param_unit=param_unit,
        stage_duration=stage_duration_ms,
        stage_rows=stage_rows,
        plan_tree=plan_tree,
        task_rows=task_rows,
        stage_executor_rows=stage_executor_rows,
        change_class=change_class,
        doc=render_doc,
        merge_args=merge_args,
        size_words=size_words,
        size_conf=size_conf,
        point_sentence=point_sentence,
        deadline=fmt_deadline,
        conf_text=conf_block,
        change_lines=change_lines,
        finding_conf=finding_conf,
        finding_stages=finding_stages,
        masked=redact_text,
    )
    app.jinja_env.globals.update(
        zip=zip,
        SEVERITIES=SEVERITIES,
        SEVERITY_CSS=Markup(severity_css()),
        UNKNOWN_SEVERITY=UNKNOWN,
    )
