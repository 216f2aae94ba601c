"""The code's shape: modules stay small, and every module is placed in the layer contract."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400
#: Folders whose files may be long: generated migrations, tests, benchmarks (and non-code).
EXEMPT = ("migrations", "tests", "benchmarks", ".venv", "node_modules", "build", "dist")

PACKAGES = ("sparkscope", "fetcher", "heuristics")


def _modules() -> dict[str, int]:
    out = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in EXEMPT or any(part.startswith(".") for part in rel.parts):
            continue
        with path.open("rb") as fh:
            out[rel.as_posix()] = sum(1 for _ in fh)
    return out


def test_no_module_is_over_the_line_limit() -> None:
    modules = _modules()
    assert "sparkscope/queries/detail.py" in modules  # the walk sees the packages' modules
    over = {name: n for name, n in modules.items() if n > MAX_LINES}
    assert over == {}, f"modules over {MAX_LINES} lines; split them by responsibility: {over}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_every_module_is_declared_in_one_layer() -> None:
    """`lint-imports` checks only the modules its layers name: a new module must join one."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["id"] == "layers")["layers"]
    declared = [m.strip() for layer in layers for m in layer.replace("|", ":").split(":")]
    assert len(declared) == len(set(declared))
    modules = {
        _module_name(p) for package in PACKAGES for p in (ROOT / package).rglob("*.py")
    } - set(PACKAGES)  # a package's own __init__ sits above its layers
    assert len(modules) > 40

    def layers_of(module: str) -> list[str]:
        return [d for d in declared if module == d or module.startswith(d + ".")]

    undeclared = sorted(m for m in modules if not layers_of(m))
    assert undeclared == [], (
        f"add to a layer of [tool.importlinter] in pyproject.toml: {undeclared}"
    )
    twice = sorted(m for m in modules if len(layers_of(m)) > 1)
    assert twice == []
