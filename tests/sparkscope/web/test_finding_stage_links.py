"""A finding seen in many stages links the first twelve and counts the rest (a page must not
build thousands of links for one finding)."""

from __future__ import annotations

import re
from types import SimpleNamespace

from flask import render_template

from heuristics.result import HeuristicResult, Severity
from tests.sparkscope.web.conftest import make_app


def _render(stages: list[tuple[int, int]]) -> str:
    app = make_app("sqlite:///:memory:")
    f = HeuristicResult(
        name="stage_skew",
        severity=Severity.LOW,
        value=None,
        title="t",
        thresholds={},
        details=None,
        advice="",
        impact=None,
        stages=tuple(stages),
    )
    d = SimpleNamespace(
        app=SimpleNamespace(app_id="a/b", attempt_id=""), server=SimpleNamespace(name="prod")
    )
    with app.test_request_context("/"):
        return render_template("detail/_finding.html", f=f, d=d, titles={})


def test_a_finding_in_thousands_of_stages_links_twelve_and_counts_the_rest() -> None:
    html = _render([(i, 0) for i in range(2000)])
    links = re.findall(r'href="(/apps/[^"]+/stages/\d+/\d+[^"]*)"', html)
    assert len(links) == 12 and links[0].startswith("/apps/a%2Fb/stages/0/0")
    assert "and 1,988 more stages" in html


def test_a_finding_in_a_few_stages_links_each() -> None:
    html = _render([(3, 0), (5, 1)])
    assert len(re.findall(r"/stages/\d+/\d+", html)) == 2
    assert "(attempt 1)" in html and "more stages" not in html
