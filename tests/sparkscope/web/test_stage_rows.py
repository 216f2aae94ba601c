"""The stage table's rows, built in Python (sparkscope.web.rows): the same cells, sort values
and escaping as the Jinja loop they replace, which is kept here as the reference."""

from __future__ import annotations

import re
from types import SimpleNamespace

from jinja2 import Environment
from markupsafe import Markup

from sparkscope.present.display import fmt_bytes, fmt_duration_ms, fmt_number, stage_duration_ms
from sparkscope.web.rows import stage_rows

# The template loop of templates/detail/app.html before the rows moved to Python.
REFERENCE = """
    {% for s in d.stages %}
      {% set dur = s|stage_duration %}
      <tr>
        <td data-v="{{ s.stage_id }}">{{ s.stage_id }}</td><td data-v="{{ s.attempt_id }}">{{ s.attempt_id }}</td>
        <td class="wrap">{{ s.name or '' }}</td><td>{{ s.status }}</td>
        <td data-v="{{ s.num_tasks }}">{{ s.num_tasks|num }}</td><td data-v="{{ s.num_failed_tasks }}">{{ s.num_failed_tasks|num }}</td>
        <td data-v="{{ dur if dur is not none else -1 }}">{{ dur|duration }}</td>
        {% set wait = (s.first_task_launched_time_ms - s.submission_time_ms) if s.first_task_launched_time_ms and s.submission_time_ms else none %}
        <td data-v="{{ wait if wait is not none else -1 }}">{{ wait|duration }}</td>
        <td data-v="{{ s.executor_run_time_ms }}">{{ s.executor_run_time_ms|duration }}</td>
        <td data-v="{{ s.jvm_gc_time_ms }}">{{ s.jvm_gc_time_ms|duration }}</td>
        <td data-v="{{ s.input_bytes }}">{{ s.input_bytes|bytes }}</td>
        <td data-v="{{ s.output_bytes }}">{{ s.output_bytes|bytes }}</td>
        <td data-v="{{ s.shuffle_read_bytes }}">{{ s.shuffle_read_bytes|bytes }}</td>
        <td data-v="{{ s.shuffle_write_bytes }}">{{ s.shuffle_write_bytes|bytes }}</td>
        <td data-v="{{ s.memory_bytes_spilled }}">{{ s.memory_bytes_spilled|bytes }}</td>
        <td data-v="{{ s.disk_bytes_spilled }}">{{ s.disk_bytes_spilled|bytes }}</td>
      </tr>
    {% endfor %}
    </tbody>
  </table>
  </div>
"""


def _stage(**overrides: object) -> SimpleNamespace:
    row: dict[str, object] = {
        "stage_id": 7,
        "attempt_id": 0,
        "name": "collect at job.py:12",
        "status": "COMPLETE",
        "num_tasks": 12_000,
        "num_failed_tasks": 3,
        "submission_time_ms": 1_700_000_000_000,
        "first_task_launched_time_ms": 1_700_000_000_450,
        "completion_time_ms": 1_700_000_192_000,
        "executor_run_time_ms": 3_600_000,
        "jvm_gc_time_ms": 850,
        "input_bytes": 5 * 2**30,
        "output_bytes": 0,
        "shuffle_read_bytes": 1536,
        "shuffle_write_bytes": 512,
        "memory_bytes_spilled": 2**20,
        "disk_bytes_spilled": 0,
    }
    row.update(overrides)
    return SimpleNamespace(**row)


STAGES = [
    _stage(),
    _stage(stage_id=8, attempt_id=1, name=None, status="FAILED", num_failed_tasks=0),
    _stage(stage_id=9, name='<script>alert("x")</script> & co', status="<b>ACTIVE</b>"),
    _stage(stage_id=10, submission_time_ms=None, completion_time_ms=None),
    _stage(stage_id=11, first_task_launched_time_ms=None, input_bytes=None),
]


def _cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>.*?</td>", html)


def test_rows_equal_the_template_loop_they_replace() -> None:
    env = Environment(autoescape=True)
    env.filters.update(
        stage_duration=stage_duration_ms, duration=fmt_duration_ms, bytes=fmt_bytes, num=fmt_number
    )
    expected = env.from_string(REFERENCE).render(d=SimpleNamespace(stages=STAGES))
    built = stage_rows(STAGES)
    assert isinstance(built, Markup)
    assert built.count("<tr>") == len(STAGES) == expected.count("<tr>")
    assert _cells(built) == _cells(expected)
    assert len(_cells(built)) == 16 * len(STAGES)


def test_rows_escape_names_and_statuses() -> None:
    html = str(stage_rows(STAGES[2:3]))
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co" in html
    assert 'data-v="12000">12,000</td>' in html
    assert 'data-v="191550">3.2 min</td>' in html  # completion - first task launch
    assert 'data-v="450">450 ms</td>' in html  # the wait before the first task


def test_with_a_link_each_id_opens_its_stage_and_failed_stages_are_marked() -> None:
    def link(stage_id: int, attempt_id: int) -> str:
        return f"/apps/a%22b/stages/{stage_id}/{attempt_id}?server=x&y=<z>"

    html = str(stage_rows(STAGES, link))
    rows = re.findall(r"<tr[^>]*>.*?</tr>", html, re.S)
    assert len(rows) == len(STAGES)
    for s, row in zip(STAGES, rows, strict=True):
        href = f"/apps/a%22b/stages/{s.stage_id}/{s.attempt_id}?server=x&amp;y=&lt;z&gt;"
        assert f'<a href="{href}">{s.stage_id}</a>' in row
        failed = s.status == "FAILED" or (s.num_failed_tasks or 0) > 0
        assert row.startswith('<tr class="failed">') == failed
    assert any(r.startswith('<tr class="failed">') for r in rows)
    assert str(stage_rows(STAGES)).count('class="failed"') == 0  # without a link: as before
    # the same cells otherwise
    assert _cells(html.replace('<tr class="failed">', "<tr>")) != [] and len(_cells(html)) == len(
        _cells(str(stage_rows(STAGES)))
    )
