"""docker-compose.yml and the Dockerfile: no Docker engine here, so check what can be checked."""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path

import yaml
from click.testing import CliRunner

from sparkscope.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_postgres_web_fetcher_with_config_mounted() -> None:
    services = _compose()["services"]
    assert {"db", "web", "fetcher", "migrate"} <= set(services)
    assert services["db"]["image"].startswith("postgres")
    for name in ("web", "fetcher", "migrate"):
        env = services[name]["environment"]
        assert env["SPARKSCOPE_DATABASE_URL"].startswith("postgresql://")
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


def _dockerfile_copies() -> list[tuple[str, list[str]]]:
    """(stage, sources) of every COPY in the Dockerfile; sources of ``COPY --from`` are in a stage."""
    copies = []
    stage = ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        words = line.split()  # FROM and COPY lines here hold no quotes
        if not words or words[0].upper() not in ("FROM", "COPY"):
            continue
        if words[0].upper() == "FROM":
            stage = words[-1] if len(words) >= 4 and words[-2].upper() == "AS" else words[1]
        elif words[0].upper() == "COPY":
            args = words[1:]
            from_stage = next((a.split("=", 1)[1] for a in args if a.startswith("--from=")), None)
            paths = [a for a in args if not a.startswith("--")]
            copies.append((from_stage or "", paths[:-1]))
    assert stage, "no FROM in the Dockerfile"
    return copies


def test_every_path_the_dockerfile_copies_exists() -> None:
    copies = _dockerfile_copies()
    sources = [src for from_stage, paths in copies if not from_stage for src in paths]
    assert sources
    missing = [src for src in sources if not (ROOT / src).exists()]
    assert not missing, f"Dockerfile copies paths that do not exist: {missing}"


def test_dockerfile_builds_the_wheel_from_its_inputs_and_installs_only_the_wheel() -> None:
    from tests.test_wheel import BUILD_INPUTS

    copies = _dockerfile_copies()
    sources = {src for from_stage, paths in copies if not from_stage for src in paths}
    # the wheel test builds from exactly these files, so the image gets a wheel that works
    assert sources == set(BUILD_INPUTS)
    assert any(from_stage == "build" for from_stage, _ in copies)
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip wheel" in dockerfile and "pip install --no-cache-dir /wheels/*.whl" in dockerfile
    assert " -e " not in dockerfile
