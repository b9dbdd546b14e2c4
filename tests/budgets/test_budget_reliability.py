"""The money-budget reliability scenario of ``make reliability`` (bench/budget_reliability.py), small:
concurrent runs of two users under a daily cap and run budgets, with crashes, on both stores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.budget_reliability import run_scenario
from shared.state.docstore import DocStore


def test_budgets_hold_under_concurrency_and_crashes_and_approving_finishes_every_run(docstore: DocStore) -> None:
    out = run_scenario(docstore, users=2, per_user=5, cap=0.02, crash_share=0.1, seed=3)
    assert out["violations"] == [] and out["violation_count"] == 0
    assert out["statuses"] == {"completed": 10}
    assert out["duplicate_tool_executions"] == 0 and out["missing_tool_executions"] == 0
    assert out["crashes"] >= 1 and out["budget_pauses"] >= 2
    assert set(out["pauses_by_scope"]) == {"run", "user_day"}


def test_a_monthly_cap_over_an_earlier_days_spend_holds_too(docstore: DocStore) -> None:
    """The same with a monthly cap and spend on an earlier day of the month: the month's spend is
    the sum of its days' counters; the monthly cap pauses runs, approving raises it, none exceeds it."""
    out = run_scenario(docstore, users=2, per_user=5, cap=0.05, crash_share=0.1, seed=3, month_cap=0.03,
                       earlier=0.02)
    assert out["violations"] == [] and out["violation_count"] == 0
    assert out["statuses"] == {"completed": 10}
    assert out["duplicate_tool_executions"] == 0 and out["missing_tool_executions"] == 0
    assert out["pauses_by_scope"].get("user_month", 0) >= 1, out["pauses_by_scope"]
    first_of_month = datetime.now(UTC).day == 1  # the earlier spend is today's then
    for spent in out["users_spend"].values():
        assert spent["spentThisMonthUsd"] == pytest.approx(spent["spentUsd"] + (0 if first_of_month else 0.02))
        assert spent["spentThisMonthUsd"] <= spent["monthlyCapUsd"] + 5 * out["max_call_usd"]
