"""A single what-if or sizing request cannot exhaust the server: the parameters that scale its
work are bounded by what the stored runs support (400 naming the parameter, answered before any
simulation), and what is allowed runs under a time budget (503 when it runs out). The issue's
probes: ``input_bytes=10000000000000`` (155 s and 6.4 GB before), ``executors=100000&cores=1024``
(a 69 s job simulated for 3.1 years), ``deadline=`` with 309 nines (a 500)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from sparkscope.advisor.whatif.limits import INPUT_FACTOR, MIN_SLOTS
from sparkscope.models.application import Application
from tests.sparkscope.whatif.conftest import whatif_app

CHURN_8X = "app-20261130184609-0000"  # 8 executors x 1 core
NIGHTLY = "nightly_feature_build"
#: Far more than any of these requests needs when it is refused before simulating (the probes
#: took 155 s, or failed, before).
QUICK_S = 10.0


@pytest.fixture(scope="module")
def client(corpus_url: str) -> Iterator[FlaskClient]:
    yield whatif_app(corpus_url).test_client()


@pytest.fixture(scope="module")
def nightly_max_input(corpus_url: str) -> int:
    engine = create_engine(corpus_url)
    with Session(engine) as s:
        top = s.scalar(select(func.max(Application.input_bytes)).where(Application.name == NIGHTLY))
    engine.dispose()
    assert top
    return int(top)


def refused(client: FlaskClient, url: str, param: str) -> str:
    started = time.monotonic()
    r = client.get(url)
    assert time.monotonic() - started < QUICK_S
    assert r.status_code == 400, r.get_data(as_text=True)
    message = r.get_json()["message"]
    assert message.startswith(f"invalid parameter '{param}': "), message
    return str(message)


@pytest.mark.parametrize(
    ("query", "param", "says"),
    [
        ("input_bytes=10000000000000", "input_bytes", f"more than {INPUT_FACTOR} times"),
        ("executors=100000&cores=1024", "executors", "task slots"),
        ("cores=2048", "cores", "at most 1024"),
        ("deadline=" + "9" * 309 + "s", "deadline", "not a duration"),
        ("deadline=" + "9" * 309, "deadline", "not a duration"),
        ("deadline=9999h", "deadline", "at most 366 days"),
    ],
)
def test_the_probes_of_advise_answer_400_naming_the_parameter(
    client: FlaskClient, query: str, param: str, says: str
) -> None:
    base = f"/api/advise?name={NIGHTLY}" + ("" if query.startswith("deadline") else "&deadline=1h")
    assert says in refused(client, f"{base}&{query}", param)


@pytest.mark.parametrize(
    ("query", "param", "says"),
    [
        ("executors=100000&cores=1024", "executors", "more than the 1,024 task slots this run"),
        (f"executors={MIN_SLOTS + 1}", "executors", "task slots"),
        ("executors=2&cores=1024", "executors", "2,048 task slots"),
        (f"input_scale={INPUT_FACTOR + 1}", "input_scale", f"more than {INPUT_FACTOR} times"),
        ("input_scale=100000", "input_scale", "at most 1000"),
    ],
)
def test_the_probes_of_the_whatif_answer_400_naming_the_parameter(
    client: FlaskClient, query: str, param: str, says: str
) -> None:
    assert says in refused(client, f"/api/apps/{CHURN_8X}/whatif?{query}", param)


def test_the_limits_are_what_the_runs_support(client: FlaskClient, nightly_max_input: int) -> None:
    top = INPUT_FACTOR * nightly_max_input
    ok = client.get(f"/api/advise?name={NIGHTLY}&deadline=1h&input_bytes={top}&executors=1,2")
    assert ok.status_code == 200, ok.get_json()
    refused(client, f"/api/advise?name={NIGHTLY}&deadline=1h&input_bytes={top + 1}", "input_bytes")
    at = client.get(f"/api/apps/{CHURN_8X}/whatif?executors={MIN_SLOTS}&input_scale=10")
    assert at.status_code == 200 and at.get_json()["points"][0]["executors"] == MIN_SLOTS
    # the default curve of the sizing stays within the limits by itself
    wide = client.get(f"/api/advise?name={NIGHTLY}&deadline=1h&cores=1,512,1024")
    assert wide.status_code == 200, wide.get_json()
    assert max(p["executors"] * p["cores"] for p in wide.get_json()["other_cores"]) <= MIN_SLOTS


def test_a_request_that_outlives_its_time_budget_answers_503(corpus_url: str) -> None:
    app = whatif_app(corpus_url)
    app.config["WHATIF_BUDGET_SECONDS"] = 0.0
    c = app.test_client()
    for url in (f"/api/apps/{CHURN_8X}/whatif", f"/api/advise?name={NIGHTLY}&deadline=1h"):
        r = c.get(url)
        assert r.status_code == 503, r.get_data(as_text=True)
        assert "did not finish within its 0 s budget" in r.get_json()["message"]
    app.config["WHATIF_BUDGET_SECONDS"] = 60.0
    assert c.get(f"/api/apps/{CHURN_8X}/whatif").status_code == 200
