"""The README's two set-up commands are what CI runs and what the project provides."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [c.strip() for c in re.findall(r"```bash\n(.+?)\n\s*```", setup)]


def test_readme_has_exactly_two_setup_commands():
    cmds = _commands()
    assert len(cmds) == 2
    assert cmds[0].endswith(".venv/bin/kernel-lab")
    assert "pytest" in cmds[1] and "QT_QPA_PLATFORM=offscreen" in cmds[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _commands()[1] in ci.splitlines()


def test_the_readme_command_leaves_the_slow_checks_to_ci():
    """The README's command runs the quick suite (the ``slow`` marker deselected by the
    project's pytest options); ``.ci/run`` runs the slow checks too, with the same venv,
    and the README says so and how."""
    import shlex
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = shlex.split(options["tool"]["pytest"]["ini_options"]["addopts"])
    assert addopts[addopts.index("-m") + 1] == "not slow"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    readme_at = ci.index(_commands()[1])
    slow = [i for i, line in enumerate(ci)
            if line.startswith(".venv/bin/python -m pytest") and "-m slow" in line]
    assert slow and slow[0] > readme_at  # after the README's command has built the venv
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "-m slow" in text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    if " -n " in _commands()[1]:  # parallel: the test extra installs pytest-xdist
        extra = options["project"]["optional-dependencies"]["test"]
        assert any(d.startswith("pytest-xdist") for d in extra)
