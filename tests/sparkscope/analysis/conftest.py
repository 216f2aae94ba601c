"""Fixtures of the analysis tests that score the 21 recorded applications (test_scoring.py,
test_scoring_equivalence.py): the database holding them, its sessions, and the stored analysis
to compare."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from heuristics.registry import builtin_heuristics
from sparkscope.cli.main import cli
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import Analysis, AnalysisResult
from sparkscope.models.application import Application
from tests.fetcher.recorded import RECORDING

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = ROOT / "config" / "heuristics.yaml"
N_HEURISTICS = len(builtin_heuristics())


@pytest.fixture(scope="module")
def loaded_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """A PostgreSQL database holding the 21 recorded applications, not yet analysed."""
    from tests.conftest import create_pg_database, drop_pg_database

    url = create_pg_database(pg_server_url, template=pg_template)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARKSCOPE_DATABASE_URL", url)
        result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING), "--no-analyze"])
    assert result.exit_code == 0, result.output
    yield url
    drop_pg_database(pg_server_url, url)


@pytest.fixture
def factory(loaded_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(loaded_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def stored_analysis(factory: sessionmaker[Session]) -> dict[str, tuple]:
    """Per application: its fingerprint, worst severity, every result, and its finding rows."""
    with factory() as s:
        findings: dict[int, list[tuple]] = {}
        for row in s.execute(
            select(
                AnalysisResult.application_id,
                AnalysisResult.heuristic,
                AnalysisResult.severity,
                AnalysisResult.title,
                AnalysisResult.value,
                AnalysisResult.impact_core_hours,
            ).order_by(AnalysisResult.application_id, AnalysisResult.heuristic)
        ):
            findings.setdefault(row[0], []).append(tuple(row[1:]))
        return {
            app_id: (fp, worst, orjson.loads(results or "null"), findings.get(pk, []))
            for pk, app_id, fp, worst, results in s.execute(
                select(
                    Application.id,
                    Application.app_id,
                    Application.analysis_fingerprint,
                    Application.worst_severity,
                    Analysis.results,
                ).outerjoin(Analysis, Analysis.application_id == Application.id)
            )
        }
