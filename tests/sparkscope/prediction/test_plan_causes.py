"""A regression's causes name the change of plan against the runs it is predicted from, on the
recorded recurring application whose join turned from a broadcast into a sort-merge join."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import select, update

from sparkscope.cli.main import cli
from sparkscope.config.loader import PredictionConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application
from sparkscope.models.predictions import RunPrediction
from sparkscope.prediction.plan_causes import plan_changes
from sparkscope.prediction.refresh import refresh_server
from tests.sparkscope.web.conftest import make_app

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "demo" / "recurring-events"
# order_enrichment: the 8th run is the first whose join is a sort-merge join (customers outgrew
# the broadcast threshold); the 13th is a broadcast again (the threshold was raised)
SMJ_RUN = "local-1795976759157"
BACK_RUN = "local-1795977072042"


def test_a_regression_names_its_plan_change(fresh_pg_url: str) -> None:
    result = CliRunner().invoke(
        cli,
        ["fetch", "--url", str(RECORDED), "--no-analyze"],
        env={"SPARKSCOPE_DATABASE_URL": fresh_pg_url},
    )
    assert result.exit_code == 0, result.output
    engine = make_engine(fresh_pg_url)
    factory = make_sessionmaker(engine)
    with factory() as s:
        runs = s.execute(
            select(Application.id, Application.app_id)
            .where(Application.name == "order_enrichment")
            .order_by(Application.start_time_ms)
        ).all()
        ids = [r.app_id for r in runs]
        pks = [r.id for r in runs]
        i = ids.index(SMJ_RUN)
        causes = plan_changes(s, pks[i], pks[i - 5 : i])
        assert causes[:2] == [
            "plan changed: BroadcastHashJoin → SortMergeJoin in query 0 'enrich orders and aggregate revenue'",
            "plan changed: BroadcastHashJoin → SortMergeJoin in query 1 'top customers of the day'",
        ]
        # the next run is compared with what most of its predecessors had: still the broadcast
        assert plan_changes(s, pks[i + 1], pks[i - 4 : i + 1])[:1] == causes[:1]
        # once most predecessors sort-merge, that is the plan: no change to report
        assert not any("Join" in c for c in plan_changes(s, pks[i + 4], pks[i - 1 : i + 4]))
        j = ids.index(BACK_RUN)
        assert plan_changes(s, pks[j], pks[j - 5 : j])[0] == (
            "plan changed: SortMergeJoin → BroadcastHashJoin in query 0 'enrich orders and aggregate revenue'"
        )
        assert plan_changes(s, pks[0], []) == []
    # the run really is slower: make it a regression and let the predictions refresh find it
    with factory() as s, s.begin():
        app = s.scalars(select(Application).where(Application.app_id == SMJ_RUN)).one()
        s.execute(
            update(Application)
            .where(Application.id == app.id)
            .values(duration_ms=app.duration_ms * 4, fetched_at_ms=app.fetched_at_ms + 1)
        )
    refresh_server(factory, app.server_id, PredictionConfig())
    with factory() as s:
        verdict, stored = s.execute(
            select(RunPrediction.verdict, RunPrediction.causes)
            .join(Application, Application.id == RunPrediction.application_id)
            .where(Application.app_id == SMJ_RUN)
        ).one()
    assert verdict == "regression"
    assert causes[0] in stored
    # the compare page shows the same change between the two runs
    client = make_app(fresh_pg_url).test_client()
    before = ids[i - 1]
    page = client.get(f"/compare?left={before}&right={SMJ_RUN}").get_data(as_text=True)
    listed = page[page.index('id="compare-plan-changes"') :]
    assert (
        "BroadcastHashJoin → SortMergeJoin in query 0 &#39;enrich orders and aggregate revenue&#39;"
        in listed
    )
    api = client.get(f"/api/compare?left={before}&right={SMJ_RUN}").get_json()
    assert api["plan_changes"][0] == {
        "kind": "join",
        "text": causes[0].removeprefix("plan changed: "),
    }
    same = client.get(f"/api/compare?left={ids[0]}&right={ids[1]}").get_json()
    assert not [c for c in same["plan_changes"] if c["kind"] == "join"]
    engine.dispose()
