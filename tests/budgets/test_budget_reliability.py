"""The money-budget reliability scenario of ``make reliability`` (bench/budget_reliability.py), small:
concurrent runs of two users under a daily cap and run budgets, with crashes, on both stores."""

from __future__ import annotations

from bench.budget_reliability import run_scenario
from shared.state.docstore import DocStore


def test_budgets_hold_under_concurrency_and_crashes_and_approving_finishes_every_run(docstore: DocStore) -> None:
    out = run_scenario(docstore, users=2, per_user=5, cap=0.02, crash_share=0.1, seed=3)
    assert out["violations"] == [] and out["violation_count"] == 0
    assert out["statuses"] == {"completed": 10}
    assert out["duplicate_tool_executions"] == 0 and out["missing_tool_executions"] == 0
    assert out["crashes"] >= 1 and out["budget_pauses"] >= 2
    assert set(out["pauses_by_scope"]) == {"run", "user_day"}
