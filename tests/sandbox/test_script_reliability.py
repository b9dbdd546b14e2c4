"""``make reliability``'s script scenario runs and holds its invariants (a short run)."""

from __future__ import annotations

import json

import pytest

from bench import script_reliability


def test_the_script_scenario_never_runs_a_script_twice(capsys: pytest.CaptureFixture[str]) -> None:
    assert script_reliability.main(["--runs", "8", "--seed", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is True and out["scripts_executed_twice_or_more"] == 0 and out["stuck_runs"] == 0
    assert out["unknown_outcomes"] >= 1 and "completed/success" in out["outcomes"]  # both paths were taken
