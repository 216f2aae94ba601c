"""heuristics/ may import only the standard library and its own modules."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

HEURISTICS_DIR = Path(__file__).resolve().parents[2] / "heuristics"
FILES = sorted(HEURISTICS_DIR.rglob("*.py"))


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import of our own package
                continue
            names.add((node.module or "").split(".")[0])
    return names


def test_there_are_modules_to_check() -> None:
    assert len(FILES) >= 14


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_only_stdlib_and_own_imports(path: Path) -> None:
    allowed = set(sys.stdlib_module_names) | {"heuristics", "__future__"}
    forbidden = _top_level_imports(path) - allowed
    assert not forbidden, f"{path.name} imports {sorted(forbidden)}"


def test_checker_catches_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import yaml\nfrom sqlalchemy.orm import Session\nimport os\n")
    assert _top_level_imports(bad) - set(sys.stdlib_module_names) == {"yaml", "sqlalchemy"}
