"""Help pages: one per heuristic with its thresholds; docstrings rendered safely."""

from __future__ import annotations

from flask.testing import FlaskClient

from heuristics.registry import builtin_heuristics
from sparkscope.web.filters import render_doc


def test_help_index_lists_every_heuristic(client: FlaskClient) -> None:
    html = client.get("/help").get_data(as_text=True)
    for h in builtin_heuristics():
        assert f'href="/help/{h.name}"' in html


def test_heuristic_page_has_doc_and_current_thresholds(client: FlaskClient) -> None:
    html = client.get("/help/executor_gc").get_data(as_text=True)
    assert "Executor GC" in html
    assert "<code>gc_ratio</code></th><td>0.08</td><td>0.1</td><td>0.15</td><td>0.2</td>" in html
    assert "<td>GC time / task run time over executors (ratio; ascending)</td>" in html
    skew = client.get("/help/stage_skew").get_data(as_text=True)
    assert "<strong>How to fix.</strong>" in skew and "<li>" in skew
    assert "<code>spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes</code>" in skew
    # the cost caps in force are on every help page, with what they mean
    assert "<code>cost_caps.wall_seconds</code></th><td>0</td><td>300</td>" in skew
    assert "<code>cost_caps.core_hours</code></th><td>0</td><td>2</td><td>8</td><td>32</td>" in skew
    assert "cap by wall-time cost" in skew


def test_unknown_heuristic_is_404(client: FlaskClient) -> None:
    assert client.get("/help/nope").status_code == 404


def test_render_doc_escapes_everything_else() -> None:
    html = str(render_doc("**Bold** <b>x</b> `a<b`\n\n- one\n  more\n- two <i>"))
    assert html == (
        "<p><strong>Bold</strong> &lt;b&gt;x&lt;/b&gt; <code>a&lt;b</code></p>"
        "<ul><li>one more</li><li>two &lt;i&gt;</li></ul>"
    )
