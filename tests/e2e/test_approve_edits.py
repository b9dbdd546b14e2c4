"""Approve with edits over HTTP (issue 34): ``POST /api/agent/approve`` with ``arguments``; the call
runs once with the edited arguments, the model is told so, the audit keeps both versions; an edit
that fails the tool's schema or that policy refuses is refused and nothing is recorded."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from tests.agent.test_loop import audits
from tests.e2e.conftest import ALICE, Install
from tests.messages import deliver_published as deliver


def paused(rt: Runtime, client: FlaskClient) -> dict[str, Any]:
    body = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers=ALICE).get_json()
    assert body["status"] == "awaiting_confirmation"
    return body  # type: ignore[no-any-return]


def test_an_approval_with_edits_runs_the_edited_call_once(install: Install, client: FlaskClient) -> None:
    model = ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved.")])
    rt = install(model)
    body = paused(rt, client)
    approval_id = body["approval"]["approvalId"]
    edited = {"text": "Alice likes green tea", "tags": ["preference"]}
    resp = client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": "approve",
                                                   "arguments": edited}, headers=ALICE)
    assert resp.status_code == 202, resp.get_json()
    assert resp.get_json() == {"ok": True, "runId": body["runId"], "approvalId": approval_id, "decision": "approved",
                               "status": "resume_requested", "arguments": edited}
    deliver(rt, copies=3)  # duplicate deliveries: still once
    assert [(m.text, m.tags) for m in rt.users.list_memories("alice")] == [("Alice likes green tea", ["preference"])]
    run = client.get(f"/api/agent/runs/{body['runId']}", headers=ALICE).get_json()
    assert run["status"] == "completed" and run["result"]["toolArgs"] == edited
    (action,) = rt.runs.list_actions(body["runId"])
    assert (action.args, action.original_args, action.attempts) == (edited, {"text": "Alice likes tea"}, 1)
    # the model sees the call as executed with the edited arguments
    answer = model.requests[-1].turns[-1].parts[0].function_response
    assert answer is not None and answer.response["executedWithArguments"] == edited
    # the audit keeps both versions
    [decided] = [a for a in audits(rt) if a["kind"] == "approval_decided"]
    assert (decided["argsBefore"], decided["argsAfter"], decided["decision"]) == (
        {"text": "Alice likes tea"}, edited, "approved")
    # the events show the edited call being executed
    events = client.get(f"/api/agent/runs/{body['runId']}/events", headers=ALICE).data.decode()
    assert "Alice likes green tea" in events


@pytest.mark.parametrize(("arguments", "field"), [
    ({"text": 5}, "arguments.text"),
    ({"tags": ["x"]}, "arguments.text"),
    ({"text": "ok", "unexpected": 1}, "arguments.unexpected"),
])
def test_an_edit_that_fails_the_schema_is_refused(install: Install, client: FlaskClient, arguments: dict[str, Any],
                                                  field: str) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved.")]))
    body = paused(rt, client)
    approval_id = body["approval"]["approvalId"]
    resp = client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": "approve",
                                                   "arguments": arguments}, headers=ALICE)
    assert resp.status_code == 400
    error = resp.get_json()["error"]
    assert error["code"] == "INVALID_ARGUMENTS" and field in [e["field"] for e in error["details"]["errors"]]
    # nothing recorded: the approval still waits, and a plain approval runs the model's call
    assert [a.status for a in rt.runs.list_actions(body["runId"])] == ["awaiting_confirmation"]
    assert client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": "approve"},
                       headers=ALICE).status_code == 202
    deliver(rt)
    assert [m.text for m in rt.users.list_memories("alice")] == ["Alice likes tea"]


def test_an_edit_policy_refuses_is_refused(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"}))]))
    body = paused(rt, client)
    # the kill switch is thrown while the approval waits: policy denies the edited call
    install(ScriptedModel([]), store_override=rt.store, side_effects_enabled=False)
    resp = client.post("/api/agent/approve", json={"approvalId": body["approval"]["approvalId"], "decision": "approve",
                                                   "arguments": {"text": "Alice likes coffee"}}, headers=ALICE)
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "EDIT_DENIED_BY_POLICY"
    assert [(a.status, a.args) for a in rt.runs.list_actions(body["runId"])] == [
        ("awaiting_confirmation", {"text": "Alice likes tea"})]
    assert not [a for a in audits(rt) if a["kind"] == "approval_decided"]


@pytest.mark.parametrize(("extra", "code"), [
    ({"decision": "reject", "arguments": {"text": "x"}}, "INVALID_REQUEST"),
    ({"decision": "approve", "arguments": "text"}, "INVALID_REQUEST"),
])
def test_edits_only_go_with_an_approval(install: Install, client: FlaskClient, extra: dict[str, Any],
                                        code: str) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"}))]))
    body = paused(rt, client)
    resp = client.post("/api/agent/approve", json={"approvalId": body["approval"]["approvalId"], **extra},
                       headers=ALICE)
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == code


def test_edits_of_an_unknown_approval_are_404(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([]))
    resp = client.post("/api/agent/approve", json={"approvalId": "apr_nope", "decision": "approve",
                                                   "arguments": {"text": "x"}}, headers=ALICE)
    assert resp.status_code == 404 and resp.get_json()["error"]["code"] == "APPROVAL_NOT_FOUND"
