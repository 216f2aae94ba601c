"""The code's shape: modules stay small, and every module is placed in the layer contract."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400
#: Folders whose files may be long: Alembic migrations (one file per revision) and non-code.
#: Tests and benchmarks are code like the packages: the limit holds for them too.
EXEMPT = ("migrations", ".venv", "node_modules", "build", "dist")

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
    assert "tests/fetcher/conftest.py" in modules  # ... the tests' (helpers included)
    assert "benchmarks/fleet.py" in modules  # ... and the benchmarks'
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


def test_type_checking_imports_count_as_edges() -> None:
    """An import only for annotations is still a dependency of the design: no exemption."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert not config.get("exclude_type_checking_imports", False)


#: The one package whose namespace is a documented public API (the heuristic plugin contract).
PUBLIC_API = {"heuristics/__init__.py"}


def _names(path: Path) -> tuple[set[str], set[str]]:
    """(names a module defines, names it only imports from our packages) at its top level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined: set[str] = set()
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
            imported |= {a.asname or a.name for a in node.names}
    defined.discard("__all__")
    return defined, imported


def test_no_module_is_mostly_re_exports() -> None:
    """Import a thing from the module that defines it: a module whose ``__all__`` names more of
    other modules' things than its own is a facade (the plugin contract excepted)."""
    facades = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            defined, imported = _names(path)
            text = path.read_text(encoding="utf-8")
            exported = imported if "__all__" in text else set()
            if rel not in PUBLIC_API and len(exported) > len(defined):
                facades.append(rel)
            if (
                rel.endswith("__init__.py")
                and rel not in PUBLIC_API
                and defined - {"register_blueprints"}
            ):
                facades.append(f"{rel} defines {sorted(defined)}")
    assert facades == []


def test_no_folder_spells_a_feature_as_a_filename_prefix() -> None:
    """Three or more modules of one folder sharing a ``name_`` prefix are a feature without its
    folder (``prediction_data``, ``prediction_views``, ...): give it one."""
    crowded = []
    for package in PACKAGES:
        for folder in [ROOT / package, *(p for p in (ROOT / package).rglob("*") if p.is_dir())]:
            stems = [p.stem for p in folder.glob("*.py") if "_" in p.stem.strip("_")]
            prefixes = [s.split("_", 1)[0] for s in stems]
            crowded += [
                f"{folder.relative_to(ROOT)}/{p}_*" for p in set(prefixes) if prefixes.count(p) >= 3
            ]
    assert crowded == []


#: Class names the heuristic plugin contract fixes: every heuristic module defines its own.
CONTRACT_CLASS_NAMES = {"Params"}


def test_class_names_are_unique() -> None:
    """One name, one class: a reader (and a traceback) never has to ask which ``Plan`` it is."""
    where: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in CONTRACT_CLASS_NAMES:
                    where.setdefault(node.name, []).append(path.relative_to(ROOT).as_posix())
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert twice == {}


def test_every_code_folder_is_a_package() -> None:
    # The wheel ships packages only (setup.py's find_packages): a folder of modules without an
    # __init__.py is left out of it, and the installed command fails on its first import.
    missing = [
        str(folder.relative_to(ROOT))
        for top in ("sparkscope", "fetcher", "heuristics")
        for folder in [ROOT / top, *(ROOT / top).rglob("*")]
        if folder.is_dir()
        and folder.name != "__pycache__"
        and any(folder.glob("*.py"))
        and not (folder / "__init__.py").exists()
    ]
    assert missing == []
