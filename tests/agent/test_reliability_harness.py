"""The reliability scenario of issue 3 (``make reliability``), small: every scenario (single,
parallel, chain, mixed) with crashes injected in resume deliveries and in a mixed run's first
invocation, on both real stores. The invariants are the harness's (bench/invariants.py); these
tests check that they hold and that the crashes really happened, so the run could have failed."""

from __future__ import annotations

from typing import Any

import pytest

from bench.chaos import CrashPlan
from bench.reliability import Options, run_reliability
from shared.state.docstore import DocStore

CLASSIC = ("single", "parallel", "chain", "mixed")
"""The approval scenarios (their seeds below pick every one); the reconcilable tools' scenarios
have their own tests."""


def _assert_reliable(out: dict[str, Any], runs: int) -> None:
    assert out["violation_samples"] == [], out["violation_samples"]
    assert out["ok"] is True
    assert out["checked_runs"] == runs
    assert out["violations"] == 0
    assert out["runs_stuck"] == 0
    assert out["events_missing"] == 0
    assert out["events_duplicated"] == 0
    assert out["outbox_left"] == 0
    assert out["executions_of_rejected_actions"] == 0
    assert set(out["final_status"]) == {"completed"}
    for key in ("executions_and_outcome", "allowed_executions_and_outcome"):
        assert out[key], key
        # exactly once, or never / once with outcome unknown after a crash inside the tool
        assert set(out[key]) <= {"1:success", "1:unknown", "0:unknown"}, out[key]
    assert set(out["executions_per_approved_action"]) <= {"0", "1"}
    assert set(out["executions_per_allowed_action"]) <= {"0", "1"}
    counts = out["counts"]
    for scenario in CLASSIC:
        assert counts.get(f"scenario_{scenario}", 0) >= 1, scenario


def _crashes(out: dict[str, Any]) -> tuple[set[str], set[str]]:
    fired = out["crashes_fired"]
    initial = {k for k in fired if k.startswith("initial_")}
    return initial, set(fired) - initial


def test_reliability_sqlite(sqlite_docstore: DocStore) -> None:
    # seed 20: 12 runs with every scenario; four mixed runs crash in their first invocation
    # (inside notify before and after the side effect, and before notify's claim)
    out = run_reliability(Options(runs=12, workers=3, seed=20, lease=0.2, store="sqlite", scenarios=CLASSIC),
                          store=sqlite_docstore)
    _assert_reliable(out, 12)
    initial, deliveries = _crashes(out)
    assert len(initial) >= 2, initial
    assert len(deliveries) >= 3, deliveries
    assert sum(out["crashes_fired"].values()) >= 6
    assert out["counts"]["initial_runs_crashed"] >= 2
    assert out["settled_by"].get("sweep_resume", 0) >= 1
    # a crash inside notify after its side effect: executed once, outcome unknown, never again
    assert out["allowed_executions_and_outcome"].get("1:unknown", 0) >= 1


def test_reconcilable_tools_never_end_unknown_after_crashes_inside_them(sqlite_docstore: DocStore) -> None:
    """Every delivery of a ``file_note`` (reconciliation) or ``book_slot`` (idempotency key) run
    dies inside the tool or just before its result is recorded: recovery learns the true outcome
    every time (issue 14 item 4), and each side effect happened exactly once."""
    # The delivery's commits: 1 claims the run and the approved call together (issue 33), 2 records
    # its result.
    points = (CrashPlan("tool", "before"), CrashPlan("tool", "after"), CrashPlan("commit", "before", 2))
    out = run_reliability(Options(runs=16, workers=3, seed=5, lease=0.2, store="sqlite",
                                  scenarios=("reconciled", "keyed"), delivery_crash_p=1.0, dead_letter_p=0.0,
                                  delivery_crash_points=points), store=sqlite_docstore)
    assert out["ok"] is True, out["violation_samples"]
    assert out["unknown_outcomes"] == {"reconcilable": 0, "other": 0}
    assert set(out["executions_and_outcome"]) == {"1:success"}  # approved: done once (some are rejected)
    assert out["executions_and_outcome"]["1:success"] >= 8
    decisions = out["recovery_decisions"]
    assert decisions.get("reconciled_done", 0) >= 1 and decisions.get("reconciled_not_done", 0) >= 1, decisions
    assert decisions.get("retry", 0) >= 1 and "unknown" not in decisions, decisions
    # most approved calls were cut off (a crash armed in a delivery that lost the claim race never fires)
    assert sum(decisions.values()) >= out["executions_and_outcome"]["1:success"] // 2


def test_the_same_crashes_leave_other_tools_unknown(sqlite_docstore: DocStore) -> None:
    """The control: ``send_note`` cannot ask its service, so the same crashes leave it ``unknown``."""
    out = run_reliability(Options(runs=6, workers=2, seed=5, lease=0.2, store="sqlite", scenarios=("single",),
                                  delivery_crash_p=1.0, dead_letter_p=0.0,
                                  delivery_crash_points=(CrashPlan("tool", "after"),)), store=sqlite_docstore)
    assert out["ok"] is True, out["violation_samples"]
    unknown = out["unknown_outcomes"]["other"]
    assert out["unknown_outcomes"]["reconcilable"] == 0 and unknown >= 3
    assert unknown == out["executions_and_outcome"].get("1:unknown", 0)


def test_reliability_sweep_republishes_dead_lettered_decisions(sqlite_docstore: DocStore) -> None:
    """Every resume delivery dies before claiming the run and its message is dead-lettered: only
    the sweep re-publishing the decision's outbox entry can finish the run."""
    out = run_reliability(Options(runs=4, workers=2, seed=3, lease=0.2, store="sqlite", delivery_crash_p=1.0,
                                  dead_letter_p=1.0, delivery_crash_points=(CrashPlan("commit", "before", 1),)),
                          store=sqlite_docstore)
    assert out["ok"] is True, out["violation_samples"]
    assert out["runs_stuck"] == 0
    assert out["counts"]["deliveries_dead_lettered"] >= 4
    assert out["settled_by"].get("sweep_republish", 0) >= 3
    assert "redelivery" not in out["settled_by"]


@pytest.mark.firestore
def test_reliability_firestore(firestore_docstore: DocStore) -> None:
    # seed 34: 6 runs with every scenario; two mixed runs crash in their first invocation
    out = run_reliability(Options(runs=6, workers=2, seed=34, lease=0.3, store="firestore", scenarios=CLASSIC),
                          store=firestore_docstore)
    _assert_reliable(out, 6)
    initial, deliveries = _crashes(out)
    assert initial, out["crashes_fired"]
    assert len(deliveries) >= 2, deliveries


def test_mcp_side_effects_are_never_run_twice_after_crashes_around_the_call(sqlite_docstore: DocStore) -> None:
    """The tools of a real MCP server (tests/agent/mcp_servers/ledger_server.py, stdio), which
    counts every call it receives: every delivery of an approved call dies just before the call
    goes out, just after its answer came back, or just before its result is recorded. The
    unannotated ``append_note`` is never called again (outcome ``unknown``); the ``idempotentHint``
    ``put_note`` is called again and its note kept once."""
    # The delivery's commits: 1 claims the run and the approved call together (issue 33), 2 records
    # its result.
    points = (CrashPlan("tool", "before"), CrashPlan("tool", "after"), CrashPlan("commit", "before", 2))
    out = run_reliability(Options(runs=8, workers=3, seed=2, lease=0.2, store="sqlite", scenarios=("mcp", "mcp_keyed"),
                                  delivery_crash_p=1.0, dead_letter_p=0.0, delivery_crash_points=points),
                          store=sqlite_docstore)
    assert out["ok"] is True, out["violation_samples"]
    assert out["mcp_actions_executed_twice_or_more"] == 0
    outcomes = out["mcp_executions_and_outcome"]
    assert set(outcomes) <= {"append_note 0:unknown", "append_note 1:unknown", "put_note 1:success"}, outcomes
    assert outcomes.get("append_note 0:unknown", 0) >= 1 and outcomes.get("append_note 1:unknown", 0) >= 1, outcomes
    assert outcomes.get("put_note 1:success", 0) >= 1, outcomes
    calls, effects = out["mcp_server_calls"], out["mcp_server_effects"]
    # the server's own count: each append_note it received once; put_note received again after a
    # crash (a retry) and kept once
    assert calls["append_note"] == effects["append_note"] == outcomes["append_note 1:unknown"]
    assert calls["put_note"] > effects["put_note"] == outcomes["put_note 1:success"]
    assert out["unknown_outcomes"] == {"reconcilable": 0, "other": sum(
        v for k, v in outcomes.items() if k.startswith("append_note"))}
    assert out["recovery_decisions"].get("retry", 0) >= 1
