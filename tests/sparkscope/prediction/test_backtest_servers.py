"""The backtest of a database of several servers is each server's own: a run's interval borrows
the residuals of its own server's other keys, as at fetch time (prediction.server_models.pools),
never those of another server's applications."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sparkscope.cli.main import cli

ROOT = Path(__file__).resolve().parents[3]
ITERATIVE = ROOT / "demo" / "iterative-events"
SCALING = ROOT / "demo" / "scaling-events"


def _backtest(tmp_path: Path, name: str, folders: list[Path]) -> dict:
    config = tmp_path / "none.yaml"
    config.write_text("predictions: {}\n")
    env = {
        "SPARKSCOPE_DATABASE_URL": f"sqlite:///{tmp_path / name}",
        "SPARKSCOPE_CONFIG": str(config),
    }
    for folder in folders:
        result = CliRunner().invoke(cli, ["fetch", "--url", str(folder)], env=env)
        assert result.exit_code == 0, result.output
    out = CliRunner().invoke(cli, ["backtest", "--json"], env=env)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def test_another_servers_runs_change_no_figure_of_a_server(tmp_path: Path) -> None:
    alone = _backtest(tmp_path, "alone.db", [ITERATIVE])
    both = _backtest(tmp_path, "both.db", [ITERATIVE, SCALING])
    key = "account_graph_rank"
    assert both["keys"][f"iterative-events: {key}"] == alone["keys"][key]
    forward = both["forward_split"]["keys"][f"iterative-events: {key}"]
    assert forward == alone["forward_split"]["keys"][key]
