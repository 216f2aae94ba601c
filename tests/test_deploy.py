"""docker-compose.yml and the Dockerfile: no Docker engine here, so check what can be checked."""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path

import yaml
from click.testing import CliRunner

from sparkscope.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_postgres_web_fetcher_with_config_mounted() -> None:
    services = _compose()["services"]
    assert {"db", "web", "fetcher", "migrate"} <= set(services)
    assert services["db"]["image"].startswith("postgres")
    for name in ("web", "fetcher", "migrate"):
        env = services[name]["environment"]
        assert env["SPARKSCOPE_DATABASE_URL"].startswith("postgresql+psycopg2://")
        assert any(v.endswith(":/etc/sparkscope:ro") for v in services[name]["volumes"])


def test_every_sparkscope_command_in_compose_exists() -> None:
    for name, service in _compose()["services"].items():
        command = service.get("command")
        if not command:
            continue
        argv = command if isinstance(command, list) else shlex.split(command)
        if argv[0] == "sparkscope":
            # `--help` after the real arguments: click parses them, so an unknown subcommand or
            # option fails here, and nothing runs.
            result = CliRunner().invoke(cli, [*argv[1:], "--help"])
            assert result.exit_code == 0, (name, result.output)
        elif argv[0] == "gunicorn":
            module, _, factory = argv[-1].partition(":")
            app_factory = getattr(importlib.import_module(module), factory.removesuffix("()"))
            assert callable(app_factory), name
        else:
            raise AssertionError(f"{name}: unexpected command {argv[0]}")


def test_dockerfile_copies_every_package_and_folder_the_app_reads() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    for folder in (
        "sparkscope",
        "fetcher",
        "heuristics",
        "templates",
        "static",
        "migrations",
        "config",
    ):
        assert f"COPY {folder} {folder}" in dockerfile
