"""Issue 31: ``make dev`` (and ``make demo``) install the runtime only (requirements.txt), ``make
test`` adds the development tools (requirements-dev.txt) on top: checked on what make would run for
a virtualenv that does not exist yet (``make -n``, nothing is installed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def dry_run(target: str, tmp_path: Path) -> str:
    done = subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'fresh-venv'}"], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout


def test_make_dev_and_demo_install_the_runtime_only(tmp_path: Path) -> None:
    for target in ("dev", "demo"):
        commands = dry_run(target, tmp_path)
        assert "pip install -q --disable-pip-version-check -r requirements.txt" in commands, commands
        assert "requirements-dev.txt" not in commands, commands
        assert "playwright" not in commands and "npm" not in commands and "chromium" not in commands


def test_make_test_adds_the_development_tools(tmp_path: Path) -> None:
    commands = dry_run("test", tmp_path).splitlines()
    runtime = next(i for i, c in enumerate(commands) if c.endswith("-r requirements.txt"))
    dev = next(i for i, c in enumerate(commands) if c.endswith("-r requirements-dev.txt"))
    assert runtime < dev  # the runtime first, the tools on top
    assert any("-m pytest -q" in c for c in commands) and any("ruff check" in c for c in commands)
    assert any("-m mypy" in c for c in commands)
