"""Documentation stays true: every setting is in the README, and the README's two commands exist."""

from __future__ import annotations

import re
from pathlib import Path

from sparkscope.config.settings import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_setting_is_documented() -> None:
    missing = [s.name for s in SETTINGS if f"`{s.name}`" not in README]
    assert not missing, f"settings missing from README: {missing}"


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one() -> None:
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", setup, flags=re.S)
    assert [c.strip() for c in commands] == ["make run", "make check"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make check" in ci
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, flags=re.M) and re.search(r"^check:", makefile, flags=re.M)
