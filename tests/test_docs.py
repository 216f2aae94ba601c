"""Documentation stays true: the README is a front door with the two set-up commands, every
setting is in the configuration reference, every page the README links exists, and every
`sparkscope` command the docs name is a real one."""

from __future__ import annotations

import re
from pathlib import Path

from sparkscope.cli.main import cli
from sparkscope.config.reference import render
from sparkscope.config.settings import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def test_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 250


def test_every_setting_is_documented() -> None:
    reference = (DOCS / "configuration.md").read_text()
    missing = [s.name for s in SETTINGS if f"`{s.name}`" not in reference]
    assert not missing, f"settings missing from docs/configuration.md: {missing}"


def test_the_configuration_reference_is_the_settings_table() -> None:
    """Defaults, allowed values and help come from sparkscope/config/settings.py: `make docs`."""
    page = (DOCS / "configuration.md").read_text()
    assert render(page) == page, "docs/configuration.md is stale: run make docs"


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one() -> None:
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", setup, flags=re.S)
    assert [c.strip() for c in commands] == ["make run", "make check"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make check" in ci
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, flags=re.M) and re.search(r"^check:", makefile, flags=re.M)


def test_every_linked_page_exists_and_every_page_is_linked() -> None:
    linked = set(re.findall(r"\]\((docs/[^)#]+)\)", README))
    assert linked, "the README links the user guide"
    assert sorted(p for p in linked if not (ROOT / p).is_file()) == []
    pages = {p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md")}
    assert sorted(pages - linked) == [], "link every docs page from the README"


def test_every_command_the_docs_name_exists() -> None:
    texts = [README, *(p.read_text() for p in DOCS.rglob("*.md"))]
    named = {m for t in texts for m in re.findall(r"(?<![\w-])sparkscope ([a-z][a-z-]+)", t)}
    # a prose use of the name ("sparkscope answers ...") is not a command
    named = {n for n in named if n in cli.commands or n.split("-")[0] in cli.commands} | {
        n for n in named if re.search(rf"`sparkscope {n}\b", "\n".join(texts))
    }
    unknown = sorted(n for n in named if n not in cli.commands)
    assert unknown == [], f"commands the docs name but the CLI lacks: {unknown}"
