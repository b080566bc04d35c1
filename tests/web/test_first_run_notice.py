"""The first ``make run`` says before installing that it may take minutes, and the README's
demo timing is the one measured (issue 32, second walk)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_install_step_announces_itself_before_pip_runs():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("$(RUN_STAMP): pyproject.toml constraints.txt\n", 1)[1].split("\n\n", 1)[0]
    lines = recipe.splitlines()
    notice = next(i for i, line in enumerate(lines) if "may take several minutes" in line)
    assert lines[notice].lstrip().startswith("@echo")
    assert notice < next(i for i, line in enumerate(lines) if "pip install" in line)


def test_the_readme_gives_the_demo_s_measured_time():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "about ten\n  seconds" not in readme and "about ten seconds" not in readme
    assert re.search(r"about 16 seconds from the press to the outcome", readme)
