"""Status transitions live in one table (an illegal one raises); failure codes are declared once
and each is documented in docs/failure-codes.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.failures import FailureCode
from shared.state.records import ActionRecord, RunRecord
from shared.state.transitions import ACTION_TRANSITIONS, RUN_TRANSITIONS, IllegalTransition, move_action, move_run

DOCS = Path(__file__).resolve().parents[2] / "docs" / "failure-codes.md"


def run(status: str) -> RunRecord:
    return RunRecord(run_id="r1", uid="u", thread_id="t", status=status)  # type: ignore[arg-type]


def test_every_run_transition_of_the_table_is_allowed_and_no_other() -> None:
    statuses = list(RUN_TRANSITIONS)
    for src in statuses:
        for dst in statuses:
            r = run(src)
            if dst == src or dst in RUN_TRANSITIONS[src]:
                move_run(r, dst)  # type: ignore[arg-type]
                assert r.status == dst
            else:
                with pytest.raises(IllegalTransition, match=f"{src} -> {dst}"):
                    move_run(r, dst)  # type: ignore[arg-type]
                assert r.status == src


def test_terminal_runs_and_actions_never_move() -> None:
    for status in ("completed", "failed"):
        with pytest.raises(IllegalTransition):
            move_run(run(status), "planning")
    action = ActionRecord(action_id="a", run_id="r", uid="u", tool="t", args={}, args_hash="h", turn_index=0,
                          call_index=0, status="completed")
    with pytest.raises(IllegalTransition):
        move_action(action, "executing")
    assert all(ACTION_TRANSITIONS[s] == frozenset() for s in ("completed", "failed", "rejected"))


def test_every_failure_code_is_documented() -> None:
    text = DOCS.read_text()
    missing = [code.value for code in FailureCode if f"`{code.value}`" not in text]
    assert missing == []
