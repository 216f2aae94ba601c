"""The stage page's kept-task and per-executor rows, built in Python (sparkscope.web.rows): the
same cells, sort values and escaping as the Jinja loops they replace, kept here as the reference."""

from __future__ import annotations

import re
from types import SimpleNamespace

from jinja2 import Environment
from markupsafe import Markup

from sparkscope.present.display import fmt_bytes, fmt_count, fmt_duration_ms
from sparkscope.web.rows import stage_executor_rows, task_rows

# The loops of templates/stage/index.html before the rows moved to Python.
TASKS_REFERENCE = """
    {% for t in tasks %}<tr class="{{ 'failed' if t.status == 'FAILED' }}">
      <td data-v="{{ t.task_id }}">{{ t.task_id }}</td><td data-v="{{ t.index }}">{{ t.index }}</td><td data-v="{{ t.attempt }}">{{ t.attempt }}</td>
      <td>{{ t.executor_id or '–' }}</td><td>{{ t.host or '–' }}</td><td>{{ t.status }}</td><td>{{ t.kept_because }}</td>
      <td class="num" data-v="{{ t.duration_ms or 0 }}">{{ t.duration_ms|duration }}</td><td class="num" data-v="{{ t.executor_run_time_ms or 0 }}">{{ t.executor_run_time_ms|duration }}</td>
      <td class="num" data-v="{{ t.jvm_gc_time_ms or 0 }}">{{ t.jvm_gc_time_ms|duration }}</td><td class="num" data-v="{{ t.input_bytes }}">{{ t.input_bytes|bytes }}</td>
      <td class="num" data-v="{{ t.shuffle_read_bytes }}">{{ t.shuffle_read_bytes|bytes }}</td><td class="num" data-v="{{ t.shuffle_write_bytes }}">{{ t.shuffle_write_bytes|bytes }}</td>
      <td class="num" data-v="{{ t.disk_bytes_spilled }}">{{ t.disk_bytes_spilled|bytes }}</td>
      <td class="wrap">{% if t.error_message %}<details class="full-message"><summary>{{ t.error_message.splitlines()[0][:200] }}</summary><pre>{{ t.error_message }}</pre></details>{% endif %}</td></tr>
    {% endfor %}
"""
EXECUTORS_REFERENCE = """
    {% for e in executors %}<tr>
      <td>{{ e.executor_id }}</td><td class="num" data-v="{{ e.task_time_ms }}">{{ e.task_time_ms|duration }}</td>
      <td class="num" data-v="{{ e.succeeded_tasks }}">{{ e.succeeded_tasks|count }}</td><td class="num" data-v="{{ e.failed_tasks }}">{{ e.failed_tasks|count }}</td><td class="num" data-v="{{ e.killed_tasks }}">{{ e.killed_tasks|count }}</td>
      <td class="num" data-v="{{ e.input_bytes }}">{{ e.input_bytes|bytes }}</td><td class="num" data-v="{{ e.output_bytes }}">{{ e.output_bytes|bytes }}</td>
      <td class="num" data-v="{{ e.shuffle_read_bytes }}">{{ e.shuffle_read_bytes|bytes }}</td><td class="num" data-v="{{ e.shuffle_write_bytes }}">{{ e.shuffle_write_bytes|bytes }}</td>
      <td class="num" data-v="{{ e.memory_bytes_spilled }}">{{ e.memory_bytes_spilled|bytes }}</td><td class="num" data-v="{{ e.disk_bytes_spilled }}">{{ e.disk_bytes_spilled|bytes }}</td></tr>
    {% endfor %}
"""

HOSTILE = '<script>alert("x")</script> & co'


def _task(**overrides: object) -> SimpleNamespace:
    row: dict[str, object] = {
        "task_id": 41,
        "index": 7,
        "attempt": 0,
        "executor_id": "3",
        "host": "worker-3.example",
        "status": "SUCCESS",
        "kept_because": "slowest",
        "duration_ms": 192_000,
        "executor_run_time_ms": 190_500,
        "jvm_gc_time_ms": 850,
        "input_bytes": 5 * 2**30,
        "shuffle_read_bytes": 1536,
        "shuffle_write_bytes": 0,
        "disk_bytes_spilled": 2**20,
        "error_message": None,
    }
    row.update(overrides)
    return SimpleNamespace(**row)


TASKS = [
    _task(),
    _task(task_id=42, status="FAILED", kept_because="failed", error_message=f"{HOSTILE}\n\tat x"),
    _task(task_id=43, executor_id=None, host=None, duration_ms=None, jvm_gc_time_ms=None),
    _task(task_id=44, executor_id=HOSTILE, host="<b>h</b>", status="<i>KILLED</i>"),
]
EXECUTORS = [
    SimpleNamespace(
        executor_id=eid,
        task_time_ms=60_000 + n,
        succeeded_tasks=12_000 * n,
        failed_tasks=n,
        killed_tasks=0,
        input_bytes=2**30 * n,
        output_bytes=0,
        shuffle_read_bytes=512,
        shuffle_write_bytes=2**20,
        memory_bytes_spilled=0,
        disk_bytes_spilled=3 * n,
    )
    for n, eid in enumerate(["1", "driver", HOSTILE])
]


def _env() -> Environment:
    env = Environment(autoescape=True)
    env.filters.update(duration=fmt_duration_ms, bytes=fmt_bytes, count=fmt_count)
    return env


def _cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>.*?</td>", html, re.S)


def test_task_rows_equal_the_template_loop_they_replace() -> None:
    expected = _env().from_string(TASKS_REFERENCE).render(tasks=TASKS)
    built = task_rows(TASKS)
    assert isinstance(built, Markup)
    assert _cells(built) == _cells(expected)
    assert len(_cells(built)) == 15 * len(TASKS)
    assert built.count('<tr class="failed">') == 1 == expected.count('<tr class="failed">')


def test_executor_rows_equal_the_template_loop_they_replace() -> None:
    expected = _env().from_string(EXECUTORS_REFERENCE).render(executors=EXECUTORS)
    built = stage_executor_rows(EXECUTORS)
    assert _cells(built) == _cells(expected)
    assert len(_cells(built)) == 11 * len(EXECUTORS)


def test_other_peoples_strings_are_escaped() -> None:
    html = str(task_rows(TASKS)) + str(stage_executor_rows(EXECUTORS))
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co" in html
    assert 'data-v="192000">3.2 min</td>' in html
