"""The plan reliability scenario in a small form (the full one is ``make reliability``): crashes at
commits and inside acts, duplicated and lost continue messages, deadlines passing mid-way."""

from __future__ import annotations

import argparse

from bench.plan_reliability import run
from shared.state.docstore import DocStore


def test_small_plan_reliability_scenario_keeps_every_invariant(sqlite_docstore: DocStore) -> None:
    out = run(argparse.Namespace(sessions=12, seed=7, lease=0.1, max_rounds=2000), sqlite_docstore)
    assert out["violations"] == [] and out["ok"] is True, out
    assert out["acts_executed_twice"] == 0 and out["sessions_stuck"] == 0
    faults = out["faults"]
    assert faults.get("crashed_deliveries", 0) > 0  # the scenario really crashed invocations
    assert sum(out["statuses"].values()) == 12
