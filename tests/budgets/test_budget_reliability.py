"""The money-budget reliability scenario of ``make reliability`` (bench/budget_reliability.py), small:
concurrent runs of two users under a daily cap and run budgets, with crashes, on both stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.budget_reliability import counter_violations, run_scenario
from shared.state.budget_repo import BudgetRepo
from shared.state.docstore import DocStore
from shared.state.records import UsageEntry
from shared.state.usage_repo import UsageRepo, entry_day


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
    # The month's spend is this month's ledger entries, the earlier one included (counter_violations:
    # no violation), whether or not the scenario ran across a UTC midnight (today's counter alone
    # would not be the month's spend less the earlier one then).
    for spent in out["users_spend"].values():
        assert spent["spentThisMonthUsd"] >= 0.02 or datetime.now(UTC).day == 1  # a new month since
        assert spent["spentThisMonthUsd"] <= spent["monthlyCapUsd"] + 5 * out["max_call_usd"]


ACROSS_MIDNIGHT = """
import json, os, sys, tempfile, time
real, shift = time.time, [0.0]
time.time = lambda: real() + shift[0]  # before anything binds it (clock defaults)
import bench.budget_reliability as scenario
from shared.state.sqlite_docstore import SqliteDocStore
from shared.state.usage_repo import UsageRepo, entry_day
DAY = 86400.0
now = real()
shift[0] = (now // DAY + 1) * DAY - 3600 - now  # the clock reads 23:00 UTC
decide = scenario.decide
def decide_after_midnight(*args, **kwargs):
    if time.time() % DAY >= 3600:  # the first approval: the clock jumps to the next midnight
        shift[0] += DAY - time.time() % DAY
    return decide(*args, **kwargs)
scenario.decide = decide_after_midnight
with tempfile.TemporaryDirectory() as d:
    store = SqliteDocStore(os.path.join(d, "s.db"))
    out = scenario.run_scenario(store, users=2, per_user=5, cap=0.02, crash_share=0.1, seed=3)
    days = {u: sorted({entry_day(e) for e in UsageRepo(store).between(u, 0, 2 * time.time())})
            for u in out["users_spend"]}
    print(json.dumps({"out": out, "days": days}))
"""


def test_a_scenario_across_a_utc_midnight_compares_each_days_counter_with_that_days_entries() -> None:
    """Seen once under load (issue 33s): the scenario ran across a UTC midnight, so today's counter
    held only the calls after it while the ledger held them all. The calls before the first
    approval are made at 23:00 UTC, the rest (the approved resumes) after midnight: a subprocess
    whose ``time.time`` is shifted before any module binds it."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", ACROSS_MIDNIGHT], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root)}, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    out = got["out"]
    assert all(len(days) == 2 for days in got["days"].values()), got["days"]  # spent on both days
    assert out["violations"] == [] and out["statuses"] == {"completed": 10}


def test_the_counter_check_finds_an_entry_written_without_its_increment(docstore: DocStore) -> None:
    """The day-by-day check can fail: an entry committed without its counter's increment is named
    with its day, and the month's spend then differs from the month's entries too."""
    usage, budgets = UsageRepo(docstore), BudgetRepo(docstore)
    at = time.time()
    yesterday = at - 86400

    def entry(n: int, when: float) -> UsageEntry:
        return UsageEntry(entry_id=f"run_a-{n}", uid="alice", unit_kind="run", unit_id="run_a", component="loop",
                          operation_type="chat", model="gemini-3-flash-preview", cost_usd=0.00038 * n, at=when)

    usage.record(entry(1, yesterday))
    usage.record(entry(2, at))
    assert counter_violations(usage, budgets, "alice", ["run_a"]) == []  # two days, each its own counter
    lost = entry(3, at)
    docstore.commit([UsageRepo.entry_writes(lost)[0]])  # the entry alone
    today = entry_day(lost)
    found = counter_violations(usage, budgets, "alice", ["run_a"])
    assert found[0] == f"alice: day counter {today} 0.00076 != ledger 0.0019"
    assert len(found) == 2 and found[1].startswith("alice: month's counters")
