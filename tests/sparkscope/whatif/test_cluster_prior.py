"""The server's contention and start-up prior: what a single run without history of its own is
corrected by (constructed cases with known answers, and the recorded corpus)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from sqlalchemy import create_engine, select, update
from sqlalchemy.orm import Session

from sparkscope.advisor.whatif.calibrate import Overheads
from sparkscope.advisor.whatif.combine import Calibration, predict
from sparkscope.advisor.whatif.prior import (
    ClusterPrior,
    fit_cluster_prior,
    key_overheads_terms,
    pool_halfwidth,
    update_pool,
)
from sparkscope.advisor.whatif.simulate import build_plan, simulate
from sparkscope.advisor.whatif.stageplan import AppRun
from sparkscope.models.application import Application
from sparkscope.models.whatif import WhatIfCluster, WhatIfModel
from sparkscope.whatif.calibration import load_run
from tests.sparkscope.advisor.whatif.test_simulate import run, stage
from tests.sparkscope.whatif.conftest import whatif_app

NAMES = ("nightly_feature_build", "catalog_join_export", "churn_model_training")
CHURN_1X = "app-20261130183105-0000"  # churn_model_training, 1x input, 1 executor, 98.6 s


def uniform_run() -> AppRun:
    """16 tasks of 1 s on 2 executors, the stage submitted after 5 s of start-up."""
    return run([stage(0, [1000.0] * 16, 5000, 13_000)], end=13_000, executors=2)


def test_prior_is_the_median_over_the_keys_that_show_it() -> None:
    terms = [(0.1, 1000.0), (0.2, 3000.0), (None, None), (0.4, 500.0), (0.3, None)]
    prior = fit_cluster_prior(terms)
    assert prior == ClusterPrior(contention=0.25, startup_per_executor_ms=1000.0, n_keys=4)
    assert fit_cluster_prior([(None, 800.0), (None, None)]) is None
    assert fit_cluster_prior([]) is None
    assert ClusterPrior.from_dict(json.loads(json.dumps(prior.to_dict()))) == prior


def test_prior_corrects_a_single_run_by_hand() -> None:
    plan = build_plan(uniform_run())
    assert simulate(plan, 4).duration_ms == pytest.approx(9000)  # 5 s + 4 waves of 1 s
    prior = ClusterPrior(contention=0.1, startup_per_executor_ms=1000.0, n_keys=2)
    cal = Calibration(prior=prior)
    # Tasks (1 + 0.1·4) / (1 + 0.1·2) times longer, two more executors start 2 s later.
    assert predict(plan, cal, 4).predicted_ms == pytest.approx(7000 + 4000 * 1.4 / 1.2)
    # Fewer executors: shorter start-up and tasks, but never a negative start-up.
    assert predict(plan, cal, 1).predicted_ms == pytest.approx(4000 + 16_000 * 1.1 / 1.2)
    big = Calibration(prior=ClusterPrior(0.0, 10_000.0, 1))
    assert predict(plan, big, 1).predicted_ms == pytest.approx(16_000)
    # At the observed size the run is kept as observed.
    assert predict(plan, cal, 2).predicted_ms == pytest.approx(13_000)
    assert "other recurring application" in cal.describe()
    assert "other recurring application" in cal.simulation_only().describe()


def test_pool_keeps_the_latest_keys_and_thins_each() -> None:
    pool = update_pool({}, {"a": [0.1] * 100, "b": [], "c": [0.3, -0.2]})
    assert list(pool) == ["a", "c"] and len(pool["a"]) == 40
    # A refitted key replaces its residuals and becomes the latest; an empty one leaves.
    pool = update_pool(pool, {"a": [0.5], "c": []})
    assert pool == {"a": [0.5]}
    many = update_pool({}, {str(i): [float(i)] for i in range(60)})
    assert list(many) == [str(i) for i in range(10, 60)]
    # Conformal rank ceil((n + 1) * 0.8) of the |r|: 9 values -> the 8th smallest.
    values = {"k": [0.01 * i for i in range(1, 10)]}
    assert pool_halfwidth(values) == pytest.approx(0.08)
    assert pool_halfwidth({"k": [-0.3]}) == pytest.approx(0.3)  # too few: the largest |r|
    assert pool_halfwidth({}) == 0.0


def test_prior_interval_is_its_halfwidth_around_the_prediction() -> None:
    plan = build_plan(uniform_run())
    cal = Calibration(prior=ClusterPrior(0.1, 1000.0, 2, halfwidth=0.2))
    p = predict(plan, cal, 4)
    assert p.low_ms == pytest.approx(p.predicted_ms * 0.8)
    assert p.high_ms == pytest.approx(p.predicted_ms * 1.2)


def test_the_keys_own_history_wins_over_the_prior() -> None:
    plan = build_plan(uniform_run())
    own = Overheads(work=(1.0, 0.0), startup=(5000.0, 0.0))  # no contention, flat start-up
    cal = Calibration(overheads=own, prior=ClusterPrior(0.5, 5000.0, 3))
    assert predict(plan, cal, 4).predicted_ms == pytest.approx(9000)


# ----------------------------------------------------------------------- on the recorded corpus


def test_fetch_stores_the_servers_prior(corpus_url: str) -> None:
    engine = create_engine(corpus_url)
    with Session(engine) as session:
        row = session.scalars(select(WhatIfCluster)).one()
        models = session.execute(
            select(WhatIfModel.model, WhatIfModel.contention, WhatIfModel.startup_per_executor_ms)
        ).all()
    engine.dispose()
    terms = [
        key_overheads_terms(Calibration.from_dict(json.loads(m)).overheads) for m, _, _ in models
    ]
    # Each model row carries its own two terms (what the prior is fitted from).
    assert [x for _, c, s in models for x in (c, s)] == pytest.approx([x for t in terms for x in t])
    assert row.n_keys == 3
    stored = ClusterPrior.from_dict(json.loads(row.model))
    pool = json.loads(row.model)["pool"]
    # Every application's residuals under the prior fitted without it make the interval.
    assert sorted(pool) == sorted(NAMES) and all(len(v) == 40 for v in pool.values())
    assert stored == fit_cluster_prior(terms, pool_halfwidth(pool))
    assert 0 < stored.halfwidth < 0.5
    # The corpus's 2-core machine: tasks slow down and start-up grows with more executors.
    assert stored.contention > 0 and stored.startup_per_executor_ms > 0


@pytest.fixture
def lonely(fresh_corpus_url: str) -> Iterator[tuple[FlaskClient, str]]:
    """The 1-executor churn run renamed: an application with one run and no history."""
    engine = create_engine(fresh_corpus_url)
    with Session(engine) as session, session.begin():
        session.execute(
            update(Application).where(Application.app_id == CHURN_1X).values(name="lonely_job")
        )
    engine.dispose()
    yield whatif_app(fresh_corpus_url).test_client(), fresh_corpus_url


def test_a_run_without_history_gets_the_servers_correction(
    lonely: tuple[FlaskClient, str],
) -> None:
    client, url = lonely
    body = client.get(f"/api/apps/{CHURN_1X}/whatif?executors=1,8").get_json()
    assert "other recurring application" in body["model"]
    one, eight = body["points"]
    # Its own size is kept as observed (98.6 s); the interval is the prior's (how it did on the
    # server's other applications), the same relative width at every size.
    assert one["predicted_ms"] == pytest.approx(98_582, rel=0.05)
    widths = [(p["high_ms"] - p["predicted_ms"]) / p["predicted_ms"] for p in (one, eight)]
    assert widths[0] > 0.01 and widths[0] == pytest.approx(widths[1], abs=0.002)
    # The real 8-executor run of the same input took 46.6 s: the bare simulation (tasks as
    # observed, start-up as at 1 executor) says far less; the prior brings it closer.
    engine = create_engine(url)
    with Session(engine) as session:
        app = session.scalars(select(Application).where(Application.app_id == CHURN_1X)).one()
        run, _ = load_run(session, app)
    engine.dispose()
    bare = predict(build_plan(run), Calibration(), 8).predicted_ms
    real = 46_617
    assert abs(eight["predicted_ms"] - real) < abs(bare - real)
    assert abs(eight["predicted_ms"] - real) / real < 0.25  # the P90 target


def test_upgrade_to_0009_fills_the_terms_of_stored_models(fresh_db_url: str) -> None:
    from sqlalchemy import text

    from sparkscope import migrate

    migrate.downgrade(fresh_db_url, "0008")
    engine = create_engine(fresh_db_url)
    cal = Calibration(overheads=Overheads(work=(2e-3, 5e-4), startup=(3000.0, 1200.0)))
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO history_server (name, url, created_at_ms) VALUES ('s', 'http://s', 1)"
            )
        )
        sid = conn.execute(text("SELECT id FROM history_server")).scalar_one()
        for name, model in (("known", cal.to_dict()), ("one size", Calibration().to_dict())):
            conn.execute(
                text(
                    "INSERT INTO whatif_model (server_id, name, fitted_at_ms, n_train, model)"
                    " VALUES (:s, :n, 1, 4, :m)"
                ),
                {"s": sid, "n": name, "m": json.dumps(model)},
            )
    engine.dispose()
    migrate.upgrade(fresh_db_url)
    engine = create_engine(fresh_db_url)
    with Session(engine) as session:
        got = dict(
            session.execute(
                select(
                    WhatIfModel.name,
                    WhatIfModel.contention,
                ).order_by(WhatIfModel.name)
            ).all()
        )
        slope = session.scalar(
            select(WhatIfModel.startup_per_executor_ms).where(WhatIfModel.name == "known")
        )
    engine.dispose()
    assert got["known"] == pytest.approx(0.25) and slope == pytest.approx(1200.0)
    assert got["one size"] is None
