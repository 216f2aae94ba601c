"""Predictions end to end on the recorded recurring corpus: fetch, backtest figures, API, pages."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import delete, func, select, update

from sparkscope.advisor.predict.features import NUMERIC
from sparkscope.cli.main import cli
from sparkscope.config.loader import PredictionConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application
from sparkscope.models.predictions import RecurringForecast, RunPrediction
from sparkscope.prediction.refresh import refresh_server
from sparkscope.prediction.runs import load_runs
from tests.sparkscope.web.conftest import make_app

RECORDED = Path(__file__).resolve().parents[3] / "demo" / "recurring-events"
KEYS = {"store_revenue_rollup", "web_events_sorted_export", "order_enrichment"}


def test_predictions_on_the_recorded_corpus(fresh_db_url: str, tmp_path: Path) -> None:
    # The AQE-off run of order_enrichment took 16% more than expected, 9% above its interval's
    # top: a regression at a 5% margin (the default 10% calls it normal).
    config = tmp_path / "sparkscope.yaml"
    config.write_text("predictions:\n  margin: 0.05\n")
    env = {"SPARKSCOPE_DATABASE_URL": fresh_db_url, "SPARKSCOPE_CONFIG": str(config)}
    result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDED)], env=env)
    assert result.exit_code == 0, result.output
    factory = make_sessionmaker(make_engine(fresh_db_url))
    with factory() as s:
        assert s.scalar(select(func.count()).select_from(RunPrediction)) == 45
        assert set(s.scalars(select(RecurringForecast.key))) == KEYS

    # The backtest's light feature path (runs without stored predictions) gives the same vectors.
    with factory() as s:
        ids = list(s.scalars(select(Application.id)))
        full = {r.id: r.features.vector() for r in load_runs(s, ids)}
        light = {r.id: r.features.vector() for r in load_runs(s, ids, numbers_only=True)}
    assert light == full
    assert {v[NUMERIC.index("iterations")] for v in full.values()} == {0.0}  # no numbered rounds

    # The backtest: out of sample by construction; figures measured on this corpus.
    out = CliRunner().invoke(cli, ["backtest", "--json"], env=env)
    assert out.exit_code == 0, out.output
    figures = json.loads(out.output)
    overall = figures["overall"]
    assert overall["n"] == 30 and set(figures["keys"]) == KEYS
    assert list(figures["keys"]) == sorted(KEYS)  # the same document for the same runs
    # Targets: MAPE <= 4.5% (measured 4.1%, docs/dev/models.md), coverage within 10 points of
    # the level overall and in every regime with 10 runs or more, next-run forecast MAPE <= 10%.
    # Naive last run: 12.0%.
    assert overall["mape"] <= 0.045
    assert overall["skill_last"] >= 0.6
    assert abs(overall["coverage"] - overall["level"]) <= 0.10
    assert overall["forecast_mape"] <= 0.10
    regimes = figures["regimes"]
    assert sum(regimes[k]["n"] for k in ("interpolation", "extrapolation")) == overall["n"]
    assert regimes["new_key"]["n"] == 12  # runs 2-5 of each key
    for name, m in regimes.items():
        print(f"\n{name}: n={m['n']} MAPE {m['mape']:.3f} coverage {m['coverage']:.2f}")
        if m["n"] >= 10:
            assert abs(m["coverage"] - m["level"]) <= 0.10, name
    forward = figures["forward_split"]
    print(f"forward split: {forward['overall']}")
    assert forward["overall"]["n"] == 21 and set(forward["keys"]) == KEYS
    assert forward["overall"]["mape"] <= 0.10
    assert abs(forward["overall"]["coverage"] - overall["level"]) <= 0.10
    text = CliRunner().invoke(cli, ["backtest", "--name", "order_enrichment"], env=env)
    assert "order_enrichment" in text.output and "store_revenue_rollup" not in text.output

    client = make_app(fresh_db_url).test_client()
    body = client.get("/api/apps/local-1795976719085").get_json()  # order_enrichment, AQE off
    p = body["prediction"]
    assert set(p) == {
        "expected_ms", "low_ms", "high_ms", "level", "model", "n_train", "verdict",
        "excess_pct", "causes", "regime", "changes",
    }  # fmt: skip
    assert set(p["regime"]) == {"kind", "ratio", "feature", "text"}
    # What changed is stored for every predicted run (here against the run before it).
    assert {
        "kind": "setting", "key": "spark.sql.adaptive.enabled", "before": None, "after": "false"
    } in p["changes"]["items"]  # fmt: skip
    assert p["verdict"] == "regression" and p["n_train"] == 6
    assert any("spark.sql.adaptive.enabled (unset) -> false" in c for c in p["causes"])
    first = client.get("/api/apps/local-1795976515177").get_json()["prediction"]
    assert first["verdict"] == "insufficient_history" and first["expected_ms"] is None
    hist = client.get("/api/history?name=store_revenue_rollup").get_json()
    assert set(hist["forecast"]) == {
        "expected_ms", "low_ms", "high_ms", "level", "model", "assumes",
    }  # fmt: skip
    assert hist["forecast"]["assumes"]  # what the forecast knows of the next run
    assert (
        hist["forecast"]["low_ms"] <= hist["forecast"]["expected_ms"] <= hist["forecast"]["high_ms"]
    )
    assert [r["prediction"]["n_train"] for r in hist["runs"]] == list(range(15))
    found = client.get("/api/apps?verdict=regression").get_json()
    assert "local-1795976719085" in {a["app_id"] for a in found["apps"]}
    assert all(a["name"] in KEYS for a in found["apps"])
    assert client.get("/api/apps?verdict=bad").status_code == 400

    page = client.get("/apps/local-1795976719085").get_data(as_text=True)
    assert 'id="prediction-line">expected ' in page and "regression: setting changed" in page
    assert p["regime"]["text"] in page  # the line says the situation it predicts in
    # The last run of store_revenue_rollup read 1.4x the largest input before it.
    last = client.get("/api/apps/local-1795977032141").get_json()["prediction"]["regime"]
    assert last["kind"] == "extrapolation" and last["feature"] == "input_bytes"
    assert last["text"].startswith("extrapolated: input 1.4x the largest seen")
    assert last["text"] in client.get("/apps/local-1795977032141").get_data(as_text=True)
    assert "-&gt; false" in page  # escaped
    history = client.get("/history?name=order_enrichment").get_data(as_text=True)
    assert 'id="band-chart"' in history and "Next run: expected" in history
    assert 'id="regressions"' in client.get("/").get_data(as_text=True)

    # A deleted run updates the predictions that depended on it (and the key's count).
    with factory() as s, s.begin():
        victim = s.scalar(select(Application.id).where(Application.app_id == "local-1795976492641"))
        s.execute(delete(Application).where(Application.id == victim))
    stats = refresh_server(factory, 1, PredictionConfig())
    assert stats.keys == 1 and stats.runs == 14
    with factory() as s:
        fc = s.get(RecurringForecast, (1, "store_revenue_rollup"))
        assert fc is not None and fc.n_runs == 14
        n_trains = s.scalars(
            select(RunPrediction.n_train)
            .where(RunPrediction.key == "store_revenue_rollup")
            .order_by(RunPrediction.start_time_ms)
        ).all()
        assert list(n_trains) == list(range(14))
    # Nothing changed: nothing recomputed.
    assert refresh_server(factory, 1, PredictionConfig()).runs == 0
    # A re-fetched run (new fetched_at) is recomputed with every later run of its key.
    with factory() as s, s.begin():
        s.execute(
            update(Application)
            .where(Application.app_id == "local-1795976850790")  # store_revenue_rollup run 11
            .values(fetched_at_ms=Application.fetched_at_ms + 1)
        )
    assert refresh_server(factory, 1, PredictionConfig()).runs == 5
    # `sparkscope analyze --force` recomputes every prediction.
    out = CliRunner().invoke(cli, ["analyze", "--force", "--workers", "1"], env=env)
    assert out.exit_code == 0, out.output
    assert "predicted 44 runs" in out.output
