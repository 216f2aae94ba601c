"""The offline fetch loop stores what a fetch of the same answers stores, and times each phase."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, text

from benchmarks.fetch_lab import PHASES, ROOT, run


def test_the_lab_loads_every_application_with_its_findings(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    per_app = run(ROOT / "demo" / "spark-events", repeat=1, batch=4, db_url=url)
    assert set(per_app) == set(PHASES)
    assert all(ms > 0 for ms in per_app.values())
    engine = create_engine(url)
    with engine.connect() as conn:
        ids = [r[0] for r in conn.execute(text("SELECT app_id FROM application"))]
        scored = conn.execute(text("SELECT count(*) FROM analysis")).scalar()
        encoded = conn.execute(text("SELECT count(*) FROM analysis_input")).scalar()
    engine.dispose()
    # the 21 recorded applications under their lab ids, and the unmeasured first batch of four
    assert len([i for i in ids if i.endswith("-lab0")]) == 21
    assert len([i for i in ids if i.endswith("-warm")]) == 4
    assert scored == encoded == 25
