"""GET /api/apps/<id>/whatif, GET /api/advise and the pages' sections, on the recorded corpus."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import create_engine, delete, update
from sqlalchemy.orm import Session

from sparkscope.models.application import (
    Application,
    EnvironmentProperty,
    Stage,
    StageTaskDistribution,
)
from sparkscope.models.whatif import WhatIfInput
from tests.sparkscope.whatif.conftest import whatif_app

CHURN_8X = "app-20261130184609-0000"  # churn_model_training, 2x input, 8 executors, 69.2 s
NIGHTLY = "nightly_feature_build"


@pytest.fixture(scope="module")
def client(corpus_url: str) -> Iterator[FlaskClient]:
    yield whatif_app(corpus_url).test_client()


def test_whatif_shape_and_values(client: FlaskClient) -> None:
    r = client.get(f"/api/apps/{CHURN_8X}/whatif?executors=1,2,4,8")
    assert r.status_code == 200
    body = r.get_json()
    assert set(body) == {"app_id", "observed", "points", "floor_ms", "model"}
    assert body["app_id"] == CHURN_8X
    assert body["observed"] == {"executors": 8, "cores": 1, "duration_ms": 69243}
    pts = body["points"]
    assert [p["executors"] for p in pts] == [1, 2, 4, 8]
    for p in pts:
        assert set(p) == {
            "executors",
            "cores",
            "predicted_ms",
            "low_ms",
            "high_ms",
            "core_hours",
            "cost",
        }
        assert body["floor_ms"] <= p["low_ms"] <= p["predicted_ms"] <= p["high_ms"]
        assert p["cost"] is None  # no prices configured
    # At the observed size the prediction is near the observed run; fewer executors are slower.
    assert abs(pts[-1]["predicted_ms"] - 69243) / 69243 < 0.10
    assert pts[0]["predicted_ms"] > pts[1]["predicted_ms"] > pts[2]["predicted_ms"]
    # The real 1-executor run of the same input took 196.7 s.
    assert abs(pts[0]["predicted_ms"] - 196_700) / 196_700 < 0.15
    assert "history" in body["model"]


def test_cores_and_input_scale(client: FlaskClient) -> None:
    base = client.get(f"/api/apps/{CHURN_8X}/whatif?executors=2").get_json()["points"][0]
    wide = client.get(f"/api/apps/{CHURN_8X}/whatif?executors=2&cores=4").get_json()["points"][0]
    assert wide["cores"] == 4 and wide["predicted_ms"] < base["predicted_ms"]
    half = client.get(f"/api/apps/{CHURN_8X}/whatif?executors=2&input_scale=0.5").get_json()
    assert half["points"][0]["predicted_ms"] < base["predicted_ms"]


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("executors=0", "executors"),
        ("executors=-1", "executors"),
        ("executors=abc", "executors"),
        ("executors=" + ",".join(["1"] * 10_000), "executors"),
        ("executors=" + ",".join(str(i) for i in range(1, 100)), "executors"),
        ("cores=0", "cores"),
        ("cores=x", "cores"),
        ("input_scale=-1", "input_scale"),
        ("input_scale=nan", "input_scale"),
    ],
)
def test_bad_whatif_parameters_are_400_naming_them(
    client: FlaskClient, query: str, param: str
) -> None:
    r = client.get(f"/api/apps/{CHURN_8X}/whatif?{query}")
    assert r.status_code == 400
    assert f"'{param}'" in r.get_json()["message"]


def test_unknown_app_is_404(client: FlaskClient) -> None:
    assert client.get("/api/apps/nope/whatif").status_code == 404


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("deadline=soon", "deadline"),
        ("deadline=", "deadline"),
        ("deadline=5m&executors=0", "executors"),
        ("deadline=5m&input_bytes=-3", "input_bytes"),
    ],
)
def test_bad_advise_parameters_are_400(client: FlaskClient, query: str, param: str) -> None:
    r = client.get(f"/api/advise?name={NIGHTLY}&{query}")
    assert r.status_code == 400
    assert f"'{param}'" in r.get_json()["message"]
    assert client.get("/api/advise?deadline=5m").status_code == 400


def test_advise_recommends_the_cheapest_size_meeting_the_deadline(client: FlaskClient) -> None:
    body = client.get(f"/api/advise?name={NIGHTLY}&deadline=45s").get_json()
    assert set(body) == {
        "name",
        "deadline_ms",
        "recommended",
        "floor_ms",
        "curve",
        "other_cores",
        "cores_seen",
        "cores_considered",
        "model",
        "n_train",
    }
    assert body["deadline_ms"] == 45_000 and body["n_train"] == 12
    # Default sizes: 1 to twice the largest count in the history (8).
    assert [p["executors"] for p in body["curve"]] == list(range(1, 17))
    rec = body["recommended"]
    assert rec is not None and rec["high_ms"] <= 45_000
    meeting = [p for p in body["curve"] + body["other_cores"] if p["high_ms"] <= 45_000]
    assert rec["core_hours"] == min(p["core_hours"] for p in meeting)
    assert set(rec) == {
        "executors",
        "cores",
        "predicted_ms",
        "high_ms",
        "core_hours",
        "cost",
        "basis",
    }


def test_advise_considers_other_core_counts_on_the_simulation(client: FlaskClient) -> None:
    body = client.get(f"/api/advise?name={NIGHTLY}&deadline=45s&executors=1,2,4").get_json()
    seen = body["cores_seen"]
    assert len(seen) == 1
    # The seen count, and powers of two up to 8.
    assert body["cores_considered"] == sorted({*seen, 1, 2, 4, 8})
    assert {p["cores"] for p in body["curve"]} == set(seen)
    assert {p["basis"] for p in body["curve"]} == {"history"}
    others = body["other_cores"]
    assert {p["cores"] for p in others} == set(body["cores_considered"]) - set(seen)
    assert {p["basis"] for p in others} == {"simulation"}
    assert len(others) == 3 * (len(body["cores_considered"]) - 1)
    # More slots per executor: never slower on the simulation at the same executor count.
    by = {(p["executors"], p["cores"]): p["predicted_ms"] for p in others}
    assert by[(2, 8)] <= by[(2, 4)]


def test_advise_cores_parameter(client: FlaskClient) -> None:
    body = client.get(f"/api/advise?name={NIGHTLY}&deadline=45s&executors=2&cores=4").get_json()
    assert body["cores_considered"] == sorted({*body["cores_seen"], 4})
    r = client.get(f"/api/advise?name={NIGHTLY}&deadline=45s&cores=0")
    assert r.status_code == 400 and "cores" in r.get_json()["message"]


def test_advise_for_a_bigger_input_needs_more(client: FlaskClient) -> None:
    small = client.get(f"/api/advise?name={NIGHTLY}&deadline=60s&input_bytes=5177619").get_json()
    big = client.get(f"/api/advise?name={NIGHTLY}&deadline=60s&input_bytes=21562466").get_json()
    assert big["curve"][0]["predicted_ms"] > 1.5 * small["curve"][0]["predicted_ms"]


def test_deadline_below_the_floor_says_so(client: FlaskClient) -> None:
    body = client.get(f"/api/advise?name={NIGHTLY}&deadline=2s&executors=1,2,4,8").get_json()
    assert body["recommended"] is None
    assert body["floor_ms"] > 2000
    assert [p["executors"] for p in body["curve"]] == [1, 2, 4, 8]


def test_unknown_name_is_404(client: FlaskClient) -> None:
    assert client.get("/api/advise?name=nobody&deadline=5m").status_code == 404


def test_prices_turn_hours_into_money(corpus_url: str) -> None:
    c = whatif_app(
        corpus_url, {"core_hour": 0.05, "gb_hour": 0.01, "currency": "EUR"}
    ).test_client()
    body = c.get(f"/api/apps/{CHURN_8X}/whatif?executors=2").get_json()
    p = body["points"][0]
    # Core-hours (driver included) at 0.05 plus GB-hours at 0.01: 2 executors of 1 GiB + 384 MiB
    # overhead and the driver's 1 GiB + 384 MiB, over the predicted duration.
    hours = p["predicted_ms"] / 3_600_000
    gb_hours = (2 + 1) * (1 + 384 / 1024) * hours
    assert p["cost"] == pytest.approx(p["core_hours"] * 0.05 + gb_hours * 0.01, rel=1e-3)
    page = c.get(f"/apps/{CHURN_8X}").get_data(as_text=True)
    assert 'data-currency="EUR"' in page


def _change(url: str, *statements: Any) -> None:
    engine = create_engine(url)
    with Session(engine) as session, session.begin():
        for st in statements:
            session.execute(st)
    engine.dispose()


def _pk(url: str) -> int:
    engine = create_engine(url)
    with Session(engine) as session:
        pk = session.query(Application.id).filter(Application.app_id == CHURN_8X).scalar()
    engine.dispose()
    return int(pk)


@pytest.mark.parametrize("case", ["running", "failed_stage", "no_distributions"])
def test_missing_data_is_422_with_the_reason(fresh_corpus_url: str, case: str) -> None:
    pk = _pk(fresh_corpus_url)
    if case == "running":
        _change(
            fresh_corpus_url,
            update(Application).where(Application.id == pk).values(completed=False),
        )
        reason = "still running"
    elif case == "failed_stage":
        _change(
            fresh_corpus_url,
            update(Stage)
            .where(Stage.application_id == pk, Stage.stage_id == 3)
            .values(status="FAILED"),
            update(Application).where(Application.id == pk).values(num_failed_stages=1),
        )
        reason = "failed stage"
    else:
        _change(
            fresh_corpus_url,
            delete(StageTaskDistribution).where(StageTaskDistribution.application_id == pk),
        )
        reason = "no task-time distribution"
    # As fetched before the encoded input existed: read from the tables just changed.
    _change(fresh_corpus_url, delete(WhatIfInput).where(WhatIfInput.application_id == pk))
    client = whatif_app(fresh_corpus_url).test_client()
    r = client.get(f"/api/apps/{CHURN_8X}/whatif")
    assert r.status_code == 422
    assert reason in r.get_json()["message"]
    if case != "no_distributions":
        # The page says why from the application row, without asking the API.
        page = client.get(f"/apps/{CHURN_8X}").get_data(as_text=True)
        assert "data-whatif-url" not in page and reason in page


def test_stored_input_and_tables_give_the_same_run(corpus_url: str) -> None:
    from sparkscope.whatif.calibration import gather, load_run
    from sparkscope.whatif.inputs import build

    engine = create_engine(corpus_url)
    with Session(engine) as session:
        app = session.query(Application).filter(Application.app_id == CHURN_8X).one()
        stored, facts = load_run(session, app)
        from_tables, facts2 = build(gather(session, app))
    engine.dispose()
    assert stored == from_tables and facts == facts2
    assert len(stored.stages) == 8 and all(s.slowest_ms for s in stored.stages)


def test_dynamic_allocation_sizes_max_executors(fresh_corpus_url: str) -> None:
    pk = _pk(fresh_corpus_url)
    engine = create_engine(fresh_corpus_url)
    with Session(engine) as session, session.begin():
        session.execute(delete(WhatIfInput).where(WhatIfInput.application_id == pk))
        for k, v in (
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.dynamicAllocation.maxExecutors", "10"),
        ):
            session.add(EnvironmentProperty(application_id=pk, section="spark", name=k, value=v))
    engine.dispose()
    body = (
        whatif_app(fresh_corpus_url)
        .test_client()
        .get(f"/api/apps/{CHURN_8X}/whatif?executors=8,64,128")
        .get_json()
    )
    assert body["observed"]["executors"] == 10  # maxExecutors
    assert "maxExecutors" in body["model"]
    by_n = {p["executors"]: p for p in body["points"]}
    # No stage asks for more than 64 executors: beyond that a bigger maxExecutors changes nothing
    # and costs nothing (idle executors are released), unlike a static size.
    assert by_n[128]["core_hours"] == pytest.approx(by_n[64]["core_hours"], rel=1e-6)
    assert by_n[128]["predicted_ms"] == pytest.approx(by_n[64]["predicted_ms"], rel=1e-6)


def test_pages_have_the_sections_and_compute_nothing(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sparkscope.whatif import answers

    def boom(*_a: Any, **_k: Any) -> None:
        raise AssertionError("a page load must not compute a what-if")

    monkeypatch.setattr(answers, "app_whatif", boom)
    monkeypatch.setattr(answers, "advise", boom)
    page = client.get(f"/apps/{CHURN_8X}").get_data(as_text=True)
    assert 'id="whatif"' in page and f"/api/apps/{CHURN_8X}/whatif" in page
    assert "js/whatif.js" in page
    hist = client.get(f"/history?name={NIGHTLY}").get_data(as_text=True)
    assert 'id="sizing"' in hist and 'data-name="nightly_feature_build"' in hist


def test_cli_advise_cores(corpus_url: str) -> None:
    import json

    from click.testing import CliRunner

    from sparkscope.cli.main import cli

    env = {"SPARKSCOPE_DATABASE_URL": corpus_url}
    args = ["advise", "--name", NIGHTLY, "--deadline", "45s", "--executors", "1,2,4"]
    out = CliRunner().invoke(cli, [*args, "--cores", "2,4", "--json"], env=env)
    assert out.exit_code == 0, out.output
    body = json.loads(out.output)
    assert body["cores_considered"] == sorted({*body["cores_seen"], 2, 4})
    text_out = CliRunner().invoke(cli, [*args, "--cores", "2"], env=env)
    assert "cores per executor seen in the history: 1; considered: 1, 2" in text_out.output
    bad_out = CliRunner().invoke(cli, [*args, "--cores", "x"], env=env)
    assert bad_out.exit_code == 2 and "--cores" in bad_out.output
