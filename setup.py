"""The one packaging step pyproject.toml cannot say: ship the top-level asset folders inside the
``sparkscope`` package, so that an installed wheel carries them (found at run time by sparkscope.assets).

The repository keeps its layout (templates/, static/, migrations/, config/ beside the code); the wheel
holds them as sparkscope/_templates, sparkscope/_static, sparkscope/_migrations and sparkscope/_config.
Metadata and dependencies are in pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

ASSETS = {
    "sparkscope._templates": "templates",
    "sparkscope._static": "static",
    "sparkscope._migrations": "migrations",
    "sparkscope._config": "config",
}
# Files of each asset folder that ship; config/ ships only the bundled files, never a local sparkscope.yaml.
FILES = {"sparkscope._config": ["heuristics.yaml", "sparkscope.example.yaml"]}


def asset_packages() -> dict[str, str]:
    """Each asset folder and its sub-folders as packages, mapped to where they are in the repository."""
    mapping = {}
    for package, folder in ASSETS.items():
        mapping[package] = folder
        for sub in find_namespace_packages(where=folder, exclude=["__pycache__", "*.__pycache__"]):
            mapping[f"{package}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    return mapping


MAPPING = asset_packages()
CODE = find_packages(
    include=["sparkscope", "sparkscope.*", "fetcher", "fetcher.*", "heuristics", "heuristics.*"]
)

setup(
    packages=[*CODE, *MAPPING],
    package_dir=MAPPING,
    package_data={
        "sparkscope": ["py.typed"],
        **{pkg: FILES.get(pkg, ["*"]) for pkg in MAPPING},
    },
)
