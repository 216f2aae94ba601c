"""`sparkscope --config X fetch` computes predictions and what-if models with X's `predictions:`
(key_patterns), not with the default config file's."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from sparkscope.cli.main import cli
from sparkscope.models.predictions import RunPrediction
from sparkscope.models.whatif import WhatIfModel

CORPUS = Path(__file__).resolve().parents[3] / "demo" / "scaling-events"
NAMES = {"nightly_feature_build", "catalog_join_export", "churn_model_training"}


def _keys(url: str) -> tuple[set[str], set[str]]:
    engine = create_engine(url)
    with Session(engine) as session:
        predicted = set(session.scalars(select(RunPrediction.key)))
        fitted = set(session.scalars(select(WhatIfModel.name)))
    engine.dispose()
    return predicted, fitted


def test_fetch_uses_the_given_configs_key_patterns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default config file says nothing about the key; the given one strips a suffix.
    default = tmp_path / "default.yaml"
    default.write_text("predictions:\n  min_history: 5\n")
    monkeypatch.setenv("SPARKSCOPE_CONFIG", str(default))
    given = tmp_path / "given.yaml"
    url = f"sqlite:///{tmp_path / 'given.db'}"
    given.write_text(
        f"database_url: {url}\npredictions:\n  key_patterns: ['_(build|export|training)$']\n"
    )
    result = CliRunner().invoke(cli, ["--config", str(given), "fetch", "--url", str(CORPUS)])
    assert result.exit_code == 0, result.output
    predicted, fitted = _keys(url)
    assert predicted == fitted == {"nightly_feature", "catalog_join", "churn_model"}

    # The same corpus fetched with the default file's settings keeps the plain names.
    plain = f"sqlite:///{tmp_path / 'plain.db'}"
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", plain)
    result = CliRunner().invoke(cli, ["fetch", "--url", str(CORPUS)])
    assert result.exit_code == 0, result.output
    assert _keys(plain) == (NAMES, NAMES)
