"""What changed is stored with every predicted run, whatever its verdict, and runs predicted before
it was kept (migration 0012: NULL) are recomputed by the next refresh, with the same verdicts
(PostgreSQL and SQLite)."""

from __future__ import annotations

from sqlalchemy import null, select, update

from sparkscope.config.loader import PredictionConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application, EnvironmentProperty
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RunPrediction
from sparkscope.prediction import refresh as predictions
from sparkscope.prediction import server_models

DAY_MS = 86_400_000
START = 1_700_000_000_000
MIB = 1 << 20


def test_changes_for_every_run_and_recomputed_when_missing(fresh_db_url: str) -> None:
    server_models.forget_models()
    engine = make_engine(fresh_db_url)
    factory = make_sessionmaker(engine)
    with factory() as s, s.begin():
        s.add(HistoryServer(id=1, name="one", url="-", created_at_ms=0))
        for i in range(12):
            size = 100 * MIB * (3 if i == 10 else 1)  # run 10 read three times the input
            start = START + i * DAY_MS
            app = Application(
                server_id=1,
                app_id=f"app-{i}",
                attempt_id="",
                name="nightly",
                start_time_ms=start,
                end_time_ms=start + 60_000,
                duration_ms=60_000,
                completed=True,
                fetched_at_ms=start + 60_000,
                input_bytes=size,
                num_tasks=10,
                num_stages=2,
                num_jobs=1,
                num_executors=1,
            )
            s.add(app)
            s.flush()
            partitions = "400" if i >= 11 else "200"  # changed for the last run only
            s.add(
                EnvironmentProperty(
                    application_id=app.id,
                    section="spark",
                    name="spark.sql.shuffle.partitions",
                    value=partitions,
                )
            )
            if i == 11:
                s.add(
                    AnalysisResult(
                        application_id=app.id, heuristic="disk_spill", severity=2, title="spilled"
                    )
                )
    assert predictions.refresh_server(factory, 1, PredictionConfig()).runs == 12

    def stored() -> dict[str, tuple[str, object]]:
        with factory() as s:
            return {
                app_id: (p.verdict, p.changes)
                for p, app_id in s.execute(
                    select(RunPrediction, Application.app_id).join(
                        Application, Application.id == RunPrediction.application_id
                    )
                )
            }

    first = stored()
    assert first["app-0"][1] == {"against": None, "items": []}
    # Every later run has its changes, normal or not; the same run is compared with the one before.
    assert all(isinstance(c, dict) and c["against"] for k, (_v, c) in first.items() if k != "app-0")
    assert first["app-5"][1]["items"] == []  # type: ignore[index]
    input_change = first["app-10"][1]["items"]  # type: ignore[index]
    assert [i["kind"] for i in input_change] == ["input"] and input_change[0]["ratio"] == 3.0
    last = first["app-11"][1]["items"]  # type: ignore[index]
    assert {
        "kind": "setting",
        "key": "spark.sql.shuffle.partitions",
        "before": "200",
        "after": "400",
    } in last
    assert {"kind": "finding", "heuristic": "disk_spill", "change": "new"} in last
    assert first["app-11"][0] != "regression" or last  # whatever the verdict, it is said

    # As stored before migration 0012: no changes. The next refresh computes them again.
    with factory() as s, s.begin():
        s.execute(update(RunPrediction).values(changes=null()))  # SQL NULL, as the upgrade adds it
    assert predictions.refresh_server(factory, 1, PredictionConfig()).runs == 12
    assert stored() == first
    assert predictions.refresh_server(factory, 1, PredictionConfig()).runs == 0  # then nothing
    server_models.forget_models()
    engine.dispose()
