"""`sparkscope backtest --whatif` on the recorded scaling corpus replayed into SQLite (the
embedded default): the issue's what-if figures, from the stored runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from sparkscope.advisor.whatif import evaluate
from sparkscope.cli.main import cli
from sparkscope.whatif.calibration import key_histories

CORPUS = Path(__file__).resolve().parents[3] / "demo" / "scaling-events"


@pytest.fixture(scope="module")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('bw') / 'corpus.db'}"
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(CORPUS)], env={"SPARKSCOPE_DATABASE_URL": url}
    )
    assert result.exit_code == 0, result.output
    yield url


def _run(url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["backtest", "--whatif", *args], env={"SPARKSCOPE_DATABASE_URL": url}
    )
    return result.exit_code, result.output


def test_json_figures_meet_the_targets(sqlite_url: str) -> None:
    code, out = _run(sqlite_url, "--json")
    assert code == 0, out
    body = json.loads(out)
    assert body["runs"] == 36 and body["keys"] == 3
    # From each run, every other run of its application and input: 3 x 2 x 6 x 5.
    assert body["single_run"]["n"] == body["bare_simulation"]["n"] == 180
    assert body["single_run_own_history"]["n"] == 180
    assert body["single_run"]["median_ape"] <= 0.10 and body["single_run"]["p90_ape"] <= 0.25
    loo = body["leave_one_out"]
    assert loo["n"] == 36 and loo["median_ape"] <= 0.06 and loo["p90_ape"] <= 0.15
    assert 0 <= loo["coverage"] <= 1
    assert body["sizing"]["meets"] >= 0.9 and body["sizing"]["cheapest"] >= 0.8
    # The server's prior helps, the key's own other runs more: both beat the bare simulation.
    assert (
        body["bare_simulation"]["median_ape"]
        > body["single_run"]["median_ape"]
        > body["single_run_own_history"]["median_ape"]
    )


def test_figures_are_the_evaluation_of_the_stored_runs(sqlite_url: str) -> None:
    code, out = _run(sqlite_url, "--json", "--name", "catalog_join_export")
    assert code == 0, out
    body = json.loads(out)
    engine = create_engine(sqlite_url)
    with Session(engine) as session:
        runs = key_histories(session, (), ["catalog_join_export"])
    engine.dispose()
    loo, coverage = evaluate.leave_one_out(runs)
    assert body["runs"] == len(runs) == 12 and body["keys"] == 1
    assert body["leave_one_out"]["median_ape"] == pytest.approx(loo.median)
    assert body["leave_one_out"]["coverage"] == pytest.approx(coverage)
    assert body["sizing"] == evaluate.sizing(runs)


def test_text_output_and_unknown_name(sqlite_url: str) -> None:
    code, out = _run(sqlite_url)
    assert code == 0, out
    assert "what-if on 36 runs of 3 recurring keys" in out
    for label in ("server's prior", "key's other runs", "leave one out", "meets the deadline"):
        assert label in out
    code, out = _run(sqlite_url, "--name", "nobody")
    assert code == 2 and "nobody" in out
