"""The deployment docs name every deployed function and the scheduled recovery sweep."""

from __future__ import annotations

import re
from pathlib import Path

from tests.infra.test_bundle import main_entry_points

REPO = Path(__file__).resolve().parents[2]


def test_deploying_md_has_a_row_per_function() -> None:
    text = (REPO / "docs" / "deploying.md").read_text()
    rows = set(re.findall(r"^\| `agent-([a-z0-9]+)` \| `([a-z0-9]+)` \|", text, flags=re.MULTILINE))
    assert rows == {(name, name) for name in main_entry_points()}
    assert "agent-resume-sweep" in text and '{"kind":"sweep"}' in text


def test_readme_lists_every_function() -> None:
    text = (REPO / "README.md").read_text()
    layout = next(line for line in text.splitlines() if line.startswith("main.py "))
    deploying = text.split("## Deploying", 1)[1]
    for name in main_entry_points():
        assert re.search(rf"\b{name}\b", layout), name
        assert f"`agent-{name}`" in deploying, name
    assert "agent-resume-sweep" in deploying
