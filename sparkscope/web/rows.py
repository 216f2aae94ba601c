"""Table rows built in Python for the big tables of a page (the application page's stages and
the plan trees of its Queries section; the stage page's kept tasks and executors).

A page of 200 stage attempts has 16 cells a row, each with a sort value and a formatted text:
written cell by cell by Jinja, that is ~6,400 escaped expressions and a third of the page's time.
Here each row is one formatted string. Every text is still escaped, with one ``str.translate``
(the same entities as ``markupsafe.escape``, at a fraction of its cost per call); integers are
written as digits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from markupsafe import Markup

from sparkscope.accounting.waits import stage_wait_ms
from sparkscope.present.display import (
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_number,
    severity_style,
    stage_duration_ms,
)

_BYTES = (
    "input_bytes",
    "output_bytes",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
)


# What markupsafe.escape replaces, with the entities it writes.
_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})


def _esc(value: Any) -> str:
    """``value`` as escaped HTML text (None reads "None", as Jinja prints it)."""
    if type(value) is int:
        return str(value)
    return str(value).translate(_ENTITIES)


def _cell(sort_value: Any, text: str) -> str:
    return f'<td data-v="{_esc(sort_value)}">{text.translate(_ENTITIES)}</td>'


def stage_rows(stages: Iterable[Any], link: Callable[[int, int], str] | None = None) -> Markup:
    """The ``<tr>`` rows of the stage table (id, attempt, name, status, tasks, failed, duration,
    wait, run time, GC, input, output, shuffle read/write, spill memory/disk). With ``link``
    (stage id, attempt -> URL) each id opens its stage page and a failed stage's row, or one with
    failed tasks, is marked (class ``failed``)."""
    out = []
    for s in stages:
        dur = stage_duration_ms(s)
        wait = stage_wait_ms(s)
        id_cell = _cell(s.stage_id, str(s.stage_id))
        if link is not None:
            href = _esc(link(s.stage_id, s.attempt_id))
            id_cell = f'<td data-v="{_esc(s.stage_id)}"><a href="{href}">{int(s.stage_id)}</a></td>'
        cells = [
            id_cell,
            _cell(s.attempt_id, str(s.attempt_id)),
            f'<td class="wrap">{_esc(s.name or "")}</td><td>{_esc(s.status)}</td>',
            _cell(s.num_tasks, fmt_number(s.num_tasks)),
            _cell(s.num_failed_tasks, fmt_number(s.num_failed_tasks)),
            _cell(dur if dur is not None else -1, fmt_duration_ms(dur)),
            _cell(wait if wait is not None else -1, fmt_duration_ms(wait)),
            _cell(s.executor_run_time_ms, fmt_duration_ms(s.executor_run_time_ms)),
            _cell(s.jvm_gc_time_ms, fmt_duration_ms(s.jvm_gc_time_ms)),
        ]
        cells.extend(_cell(getattr(s, key), fmt_bytes(getattr(s, key))) for key in _BYTES)
        failed = link is not None and (s.status == "FAILED" or (s.num_failed_tasks or 0) > 0)
        out.append(('<tr class="failed">' if failed else "<tr>") + "".join(cells) + "</tr>")
    return Markup("\n".join(out))


def _num(value: Any, text: str) -> str:
    return f'<td class="num" data-v="{_esc(value)}">{text.translate(_ENTITIES)}</td>'


def task_rows(tasks: Iterable[Any]) -> Markup:
    """The ``<tr>`` rows of the stage page's kept tasks (task, partition, attempt, executor, host,
    status, kept as, duration, run time, GC, input, shuffle read/write, disk spill, error); a
    failed task's row has class ``failed`` and its error folds under its first line."""
    out = []
    for t in tasks:
        error = ""
        if t.error_message:
            first = _esc(t.error_message.splitlines()[0][:200])
            error = (
                f'<details class="full-message"><summary>{first}</summary>'
                f"<pre>{_esc(t.error_message)}</pre></details>"
            )
        cells = [
            _cell(t.task_id, str(t.task_id)),
            _cell(t.index, str(t.index)),
            _cell(t.attempt, str(t.attempt)),
            f"<td>{_esc(t.executor_id or '–')}</td><td>{_esc(t.host or '–')}</td>",
            f"<td>{_esc(t.status)}</td><td>{_esc(t.kept_because)}</td>",
            _num(t.duration_ms or 0, fmt_duration_ms(t.duration_ms)),
            _num(t.executor_run_time_ms or 0, fmt_duration_ms(t.executor_run_time_ms)),
            _num(t.jvm_gc_time_ms or 0, fmt_duration_ms(t.jvm_gc_time_ms)),
            _num(t.input_bytes, fmt_bytes(t.input_bytes)),
            _num(t.shuffle_read_bytes, fmt_bytes(t.shuffle_read_bytes)),
            _num(t.shuffle_write_bytes, fmt_bytes(t.shuffle_write_bytes)),
            _num(t.disk_bytes_spilled, fmt_bytes(t.disk_bytes_spilled)),
            f'<td class="wrap">{error}</td>',
        ]
        row = '<tr class="failed">' if t.status == "FAILED" else '<tr class="">'
        out.append(row + "".join(cells) + "</tr>")
    return Markup("\n".join(out))


_EXECUTOR_COUNTS = ("succeeded_tasks", "failed_tasks", "killed_tasks")


def stage_executor_rows(executors: Iterable[Any]) -> Markup:
    """The ``<tr>`` rows of the stage page's per-executor summary (executor, task time,
    succeeded / failed / killed tasks, input, output, shuffle read/write, spill memory/disk)."""
    out = []
    for e in executors:
        cells = [
            f"<td>{_esc(e.executor_id)}</td>",
            _num(e.task_time_ms, fmt_duration_ms(e.task_time_ms)),
        ]
        cells.extend(_num(getattr(e, k), fmt_count(getattr(e, k))) for k in _EXECUTOR_COUNTS)
        cells.extend(_num(getattr(e, k), fmt_bytes(getattr(e, k))) for k in _BYTES)
        out.append("<tr>" + "".join(cells) + "</tr>")
    return Markup("\n".join(out))


def _badge(level: int, text: str, title: str | None = None) -> str:
    """The page's severity badge (templates/_macros.html ``severity_badge``)."""
    hint = f' title="{_esc(title)}"' if title else ""
    return f'<span class="badge {severity_style(level).css_class}"{hint}>{_esc(text)}</span>'


def plan_tree(nodes: Iterable[Any], execution_id: int) -> Markup:
    """The ``<li>`` lines of a plan tree (:class:`sparkscope.queries.sql.TreeRow`): operator, node
    id, codegen id and stages, each finding on it, its metrics; flagged nodes marked."""
    out = []
    for n in nodes:
        classes = "plan-node" + (" flagged" if n.flags else "") + (" cached" if n.cached else "")
        meta = f"#{n.node_id}"
        if n.codegen_id is not None:
            meta += f" · codegen {n.codegen_id}"
        if n.stage_ids:
            meta += " · stage " + ", ".join(map(str, n.stage_ids))
        if n.cached:
            meta += " · cached plan, not run here"
        parts = [
            f'<li class="{classes}" id="query-{int(execution_id)}-node-{int(n.node_id)}" '
            f'style="margin-left: {int(n.depth)}em">'
            f'<span class="op">{_esc(n.name)}</span> <span class="muted">{_esc(meta)}</span>'
        ]
        if n.repeat:
            parts.append('<span class="muted">(drawn above: reused)</span>')
        else:
            parts.extend(
                f'<div class="node-flag">{_badge(f.severity, f.heuristic)} {_esc(f.text)}</div>'
                for f in n.flags
            )
            if n.metrics:
                shown = " · ".join(
                    f"<span>{_esc(k)}: <b>{_esc(v)}</b></span>" for k, v in n.metrics
                )
                parts.append(f'<div class="node-metrics">{shown}</div>')
        out.append("".join(parts) + "</li>")
    return Markup("\n".join(out))
