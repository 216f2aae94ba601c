"""The what-if history and sizing group runs by the predictions' recurring key
(predictions.key_patterns), not by the raw application name."""

from __future__ import annotations

from sqlalchemy import create_engine, select, update
from sqlalchemy.orm import Session

from sparkscope.models.application import Application
from sparkscope.models.whatif import WhatIfModel
from sparkscope.whatif.calibration import history_runs, refit_models
from tests.sparkscope.whatif.conftest import whatif_app

NIGHTLY = "nightly_feature_build"
DATE = r"\d{4}-\d{2}-\d{2}"


def _dated(url: str) -> list[str]:
    """Give each nightly_feature_build run its own dated name (as a daily job would have)."""
    engine = create_engine(url)
    with Session(engine) as session, session.begin():
        ids = session.scalars(
            select(Application.id).where(Application.name == NIGHTLY).order_by(Application.id)
        ).all()
        for i, pk in enumerate(ids):
            session.execute(
                update(Application)
                .where(Application.id == pk)
                .values(name=f"{NIGHTLY} 2026-10-{i + 1:02d}")
            )
        names = session.scalars(
            select(Application.name).where(Application.name.like(f"{NIGHTLY} %"))
        ).all()
    engine.dispose()
    return sorted(names)


def test_dated_names_are_one_application_for_history_and_models(fresh_corpus_url: str) -> None:
    names = _dated(fresh_corpus_url)
    assert len(names) == 12 and len(set(names)) == 12
    engine = create_engine(fresh_corpus_url)
    with Session(engine) as session, session.begin():
        # Without the patterns every dated name is its own application of one run.
        assert len(history_runs(session, 1, names[0])) == 1
        assert history_runs(session, 1, NIGHTLY) == []
        runs = history_runs(session, 1, NIGHTLY, patterns=(DATE,))
        assert len(runs) == 12
        assert sorted(r["executors"] for r in runs) == [1, 1, 2, 2, 3, 3, 4, 4, 6, 6, 8, 8]
        # The fetch hook's refit: one model per key, trained on every run of it.
        assert refit_models(session, 1, [*names, "catalog_join_export"], (DATE,)) == 2
        rows = session.execute(
            select(WhatIfModel.name, WhatIfModel.n_train).where(
                WhatIfModel.name.like(f"{NIGHTLY}%") | (WhatIfModel.name == "catalog_join_export")
            )
        ).all()
    engine.dispose()
    assert sorted(rows) == [("catalog_join_export", 12), (NIGHTLY, 12)]


def test_advise_by_any_dated_name_or_the_key(fresh_corpus_url: str) -> None:
    names = _dated(fresh_corpus_url)
    keyed = whatif_app(fresh_corpus_url, patterns=[DATE]).test_client()
    by_name = keyed.get(f"/api/advise?name={names[3]}&deadline=45s").get_json()
    by_key = keyed.get(f"/api/advise?name={NIGHTLY}&deadline=45s").get_json()
    assert by_name["n_train"] == by_key["n_train"] == 12
    assert by_name["curve"] == by_key["curve"]
    assert by_name["recommended"] is not None
    # Without the patterns a dated name is one run and the bare key is unknown.
    plain = whatif_app(fresh_corpus_url, patterns=[]).test_client()
    assert plain.get(f"/api/advise?name={names[3]}&deadline=45s").get_json()["n_train"] == 1
    assert plain.get(f"/api/advise?name={NIGHTLY}&deadline=45s").status_code == 404


def test_whatif_of_a_dated_run_uses_its_key_calibration(fresh_corpus_url: str) -> None:
    names = _dated(fresh_corpus_url)
    engine = create_engine(fresh_corpus_url)
    with Session(engine) as session, session.begin():
        refit_models(session, 1, names, (DATE,))
        app_id = session.scalar(select(Application.app_id).where(Application.name == names[0]))
    engine.dispose()
    keyed = whatif_app(fresh_corpus_url, patterns=[DATE]).test_client()
    plain = whatif_app(fresh_corpus_url, patterns=[]).test_client()
    with_key = keyed.get(f"/api/apps/{app_id}/whatif?executors=1,8").get_json()
    without = plain.get(f"/api/apps/{app_id}/whatif?executors=1,8").get_json()
    # The key's calibration (12 runs) serves the dated run; a dated name alone has no model of
    # its own and gets the server's prior (the other applications' contention and start-up).
    assert "history" in with_key["model"] and "other recurring" not in with_key["model"]
    assert "other recurring application" in without["model"]
    assert any(p["high_ms"] > p["low_ms"] for p in with_key["points"])
