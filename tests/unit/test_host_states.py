"""Host state: typed by host kind, versioned; version 1 (an untyped dict) is migrated on read and a
newer version is refused like any record."""

from __future__ import annotations

from typing import Any

import pytest

from shared.state.host_states import HOST_STATE_VERSION, ChatState, OtherState, PlanRunState
from shared.state.records import RunRecord, SchemaVersionError


def run_doc(host: str, host_state: dict[str, Any] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"runId": "r1", "uid": "alice", "threadId": "t1", "status": "planning", "host": host}
    if host_state is not None:
        doc["hostState"] = host_state
    return doc


def test_a_version_1_plan_state_is_migrated_to_the_typed_state() -> None:
    legacy = {"sessionId": "ses_1", "objective": "o", "deadline": 123.0, "tools": ["search_memory"],
              "tasks": [{"id": "t1", "title": "one", "status": "in_progress"}], "taskId": "t1", "version": 3,
              "seq": 7, "parentRunId": "run_p", "parentActionId": "act_p", "virtualArgErrors": 1}
    run = RunRecord.from_doc(run_doc("plan", legacy))
    state = run.host_state
    assert isinstance(state, PlanRunState)
    assert (state.session_id, state.plan_version, state.seq, state.task_id) == ("ses_1", 3, 7, "t1")
    assert state.current is not None and state.current.status == "in_progress"
    assert (state.parent_run_id, state.parent_action_id) == ("run_p", "act_p")
    assert run.virtual_arg_errors == 1  # the loop's counter left the host's state
    stored = run.to_doc()["hostState"]
    assert stored["kind"] == "plan" and stored["schemaVersion"] == HOST_STATE_VERSION
    assert stored["planVersion"] == 3 and "version" not in stored and "virtualArgErrors" not in stored
    assert RunRecord.from_doc(run.to_doc()).host_state == state  # the typed form reads back as it is


def test_a_version_1_chat_state_and_a_missing_one_are_chat_states() -> None:
    legacy = {"agentState": "executing_plan", "executionModes": ["draft_only"], "planId": "ses_a",
              "virtualArgErrors": 2}
    run = RunRecord.from_doc(run_doc("chat", legacy))
    assert run.host_state == ChatState(agent_state="executing_plan", execution_modes=["draft_only"], plan_id="ses_a")
    assert run.virtual_arg_errors == 2
    assert RunRecord.from_doc(run_doc("chat", None)).host_state == ChatState()
    assert RunRecord(run_id="r", uid="u", thread_id="t", status="planning").host_state == ChatState()


def test_a_kind_without_a_model_keeps_its_fields() -> None:
    run = RunRecord.from_doc(run_doc("task", {"cursor": 4}))
    assert run.host_state == OtherState(kind="task", data={"cursor": 4})
    assert RunRecord(run_id="r", uid="u", thread_id="", status="planning", host="task").host_state.kind == "task"


def test_a_host_state_of_a_newer_version_is_refused() -> None:
    newer = {"kind": "chat", "schemaVersion": HOST_STATE_VERSION + 1}
    with pytest.raises(SchemaVersionError):
        RunRecord.from_doc(run_doc("chat", newer))


def test_the_plan_state_validates_its_tasks_once() -> None:
    run = RunRecord.from_doc(run_doc("plan", {"sessionId": "s", "objective": "o", "deadline": 1.0,
                                              "tasks": [{"id": "t1", "title": "one"}], "taskId": "t1"}))
    state = run.host_state
    assert isinstance(state, PlanRunState)
    assert state.tasks is state.tasks and state.current is state.tasks[0]  # no copy per access
