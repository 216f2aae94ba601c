"""Where the files Sparkscope ships beside its code are: templates, static files, migrations and
the bundled config (heuristics.yaml, sparkscope.example.yaml), and Plotly's JavaScript.

An installed wheel carries the repository's top-level folders inside the package
(``sparkscope/_templates`` ...; see setup.py), found here with importlib.resources. A source tree
(an editable install, or ``PYTHONPATH`` set to a clone) has no such copies: there the folders beside
the ``sparkscope`` package are the ones that belong to the code being run. Nothing else in Sparkscope
builds a path to these files.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

#: The asset folders, by their name in the repository.
FOLDERS = ("templates", "static", "migrations", "config")


@cache
def folder(name: str) -> Path:
    """The folder ``name`` (one of :data:`FOLDERS`) as a real directory on disk."""
    if name not in FOLDERS:
        raise ValueError(f"unknown asset folder {name!r} (known: {', '.join(FOLDERS)})")
    package = Path(str(files("sparkscope")))
    installed = package / f"_{name}"
    if installed.is_dir():
        return installed
    source = package.parent / name
    if (package.parent / "pyproject.toml").is_file() and source.is_dir():
        return source
    raise FileNotFoundError(
        f"Sparkscope's {name}/ folder is missing (looked for {installed}): reinstall Sparkscope"
    )


@cache
def plotly_js() -> Path:
    """plotly.min.js as shipped by the installed ``plotly`` package (the version charts.py targets)."""
    path = Path(str(files("plotly") / "package_data" / "plotly.min.js"))
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall the plotly package")
    return path
