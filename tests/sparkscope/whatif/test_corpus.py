"""Accuracy on the recorded scaling corpus (36 real runs: 3 applications x 6 sizes x 2 inputs),
out of sample everywhere, against the targets of issue 14."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from sparkscope.advisor.whatif import evaluate
from sparkscope.models.whatif import WhatIfModel
from sparkscope.whatif.calibration import history_runs

NAMES = ("nightly_feature_build", "catalog_join_export", "churn_model_training")


@pytest.fixture(scope="module")
def runs(corpus_url: str) -> list[dict[str, Any]]:
    engine = create_engine(corpus_url)
    out = []
    with Session(engine) as session:
        for name in NAMES:
            for r in history_runs(session, 1, name):
                out.append({**r, "name": name})
    engine.dispose()
    return out


def test_fetch_fitted_and_stored_one_model_per_name(corpus_url: str) -> None:
    engine = create_engine(corpus_url)
    with Session(engine) as session:
        rows = session.execute(select(WhatIfModel.name, WhatIfModel.n_train)).all()
        assert session.scalar(select(func.count()).select_from(WhatIfModel)) == 3
    engine.dispose()
    assert sorted(rows) == [(n, 12) for n in sorted(NAMES)]


def test_every_run_can_be_simulated(runs: list[dict[str, Any]]) -> None:
    assert len(runs) == 36
    # Every stage of these runs has more tasks than the smallest size has slots, so the fetcher
    # must have stored the slowest tasks of each big stage.
    big = [s for r in runs for s in r["plan"].app.stages if s.num_tasks > 20]
    assert big and all(s.slowest_ms for s in big)
    for s in big:
        # The stored ones are tasks of this stage, and really its slowest: the longest is at least
        # the stage's mean executor run time.
        assert len(s.slowest_ms) <= s.num_tasks and min(s.slowest_ms) >= 0, s.stage_id
        assert max(s.slowest_ms) >= s.run_time_ms / s.num_tasks, s.stage_id


def test_single_run_what_if_meets_its_targets(runs: list[dict[str, Any]]) -> None:
    # One run of the application; contention and start-up from the other two applications only.
    errors = evaluate.single_run(runs, "cluster")
    assert len(errors.values) == 180
    assert errors.median <= 0.10, str(errors)
    assert errors.p90 <= 0.25, str(errors)
    # Its interval (nominal 80%) comes from how the prior did on the other applications.
    assert errors.coverage is not None and 0.70 <= errors.coverage <= 0.90, str(errors)


def test_corrections_beat_the_bare_simulation(runs: list[dict[str, Any]]) -> None:
    # The runs share a 2-core machine: task times and start-up grow with the executor count.
    # Without a correction the simulation over-predicts the speed-up; the server's other
    # applications show how much, the application's own other runs show it best.
    bare = evaluate.single_run(runs, "none")
    cluster = evaluate.single_run(runs, "cluster")
    own = evaluate.single_run(runs, "history")
    assert bare.median > cluster.median > own.median, (bare, cluster, own)
    assert bare.p90 > cluster.p90 > own.p90, (bare, cluster, own)
    assert own.median <= 0.10 and own.p90 <= 0.25, str(own)


def test_cluster_prior_of_one_application_is_no_prior(runs: list[dict[str, Any]]) -> None:
    # With no other application to learn from, the cluster correction is the bare simulation.
    alone = [r for r in runs if r["name"] == NAMES[0]]
    assert evaluate.single_run(alone, "cluster").values == evaluate.single_run(alone, "none").values


def test_history_calibrated_leave_one_out_meets_its_targets(runs: list[dict[str, Any]]) -> None:
    errors, coverage = evaluate.leave_one_out(runs)
    assert len(errors.values) == 36
    assert errors.median <= 0.06, str(errors)
    assert errors.p90 <= 0.15, str(errors)
    # Split-conformal at a nominal 80% (it measured 69% with the 10th-90th percentile band).
    assert coverage >= 0.75, coverage


def test_sizing_meets_its_targets(runs: list[dict[str, Any]]) -> None:
    result = evaluate.sizing(runs)
    assert result["cases"] == 60
    assert result["meets"] >= 0.90, result
    assert result["cheapest"] >= 0.80, result
