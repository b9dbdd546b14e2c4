"""One approval shape on every route and event (issue 27): a paused chat run's approval and a
plan session's are read from every place that shows them, on both stores, and each place gives the
same object (docs/event-protocol.md, "Names and times")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.openapi import build_openapi
from shared.state import paths
from shared.state.docstore import Write
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script
from tests.plans.test_sessions_http import ALICE, create, deliver, events

ALWAYS = {"approvalId", "id", "tool", "reason", "preview", "status", "createdAt", "expiresAt", "runId", "kind"}
"""The keys every pending tool approval has (a plan's adds ``sessionId`` and ``taskId``)."""


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def _get(client: FlaskClient, path: str) -> dict[str, Any]:
    resp = client.get(path, headers=ALICE)
    assert resp.status_code == 200, resp.get_data()[:300]
    return resp.get_json()  # type: ignore[no-any-return]


def _run_events(client: FlaskClient, run_id: str) -> list[dict[str, Any]]:
    resp = client.get(f"/api/agent/runs/{run_id}/events", headers=ALICE)
    assert resp.status_code == 200
    return [json.loads(line) for line in resp.data.decode().splitlines() if line]


def _everywhere(client: FlaskClient, approval_id: str, run_id: str) -> dict[str, dict[str, Any]]:
    """The approval as each route shared by chat and plan runs shows it."""
    runs = {r["runId"]: r for r in _get(client, "/api/agent/runs")["runs"]}
    inbox = {a["approvalId"]: a for a in _get(client, "/api/agent/approvals")["approvals"]}
    run = _get(client, f"/api/agent/runs/{run_id}")
    return {"runs list": one(runs[run_id]["approvals"], approval_id), "inbox": inbox[approval_id],
            "detail": _get(client, f"/api/agent/approvals/{approval_id}")["approval"],
            **({"run record result": one([run["result"]["approval"]], approval_id)}
               if run.get("result", {}).get("approval") else {})}


def one(approvals: list[dict[str, Any]], approval_id: str) -> dict[str, Any]:
    [found] = [a for a in approvals if a["approvalId"] == approval_id]
    return found


def test_every_route_and_event_shows_an_approval_in_one_shape(make_rt: MakeRuntime, client: FlaskClient) -> None:
    rt = make_rt(Script(acts={"": [("save_memory", {"text": "chat note"})],  # a chat run has no current task
                              "Read the notes": [("save_memory", {"text": "the notes"})]}))
    chat = client.post("/api/agent/run", json={"prompt": "remember"}, headers=ALICE).get_json()
    assert chat["status"] == "awaiting_confirmation"
    chat_id, chat_run = chat["approval"]["approvalId"], chat["runId"]
    shown = {"run result approval": chat["approval"], "run result approvals[]": one(chat["approvals"], chat_id),
             **_everywhere(client, chat_id, chat_run)}
    [result_event] = [e for e in _run_events(client, chat_run) if e["type"] == "result"]
    shown["result event"] = result_event["result"]["approval"]
    assert len(shown) == 7
    for where, approval in shown.items():
        assert approval == shown["inbox"], where
    chat_shape = shown["inbox"]
    assert set(chat_shape) == ALWAYS and chat_shape["id"] == chat_id and chat_shape["runId"] == chat_run
    assert chat_shape["status"] == "pending" and chat_shape["kind"] == "tool" and chat_shape["tool"] == "save_memory"

    sid = create(client)["sessionId"]
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE).status_code == 202
    deliver(rt)
    session = _get(client, f"/api/agent/sessions/{sid}")
    [pending] = session["pendingApprovals"]
    plan_id, plan_run = pending["approvalId"], session["runId"]
    plan_shown = {"session pendingApprovals": pending, **_everywhere(client, plan_id, plan_run)}
    [required] = [e for e in _run_events(client, plan_run) if e["type"] == "approval_required"]
    plan_shown["approval_required event"] = required["approval"]
    [session_required] = [e for e in events(client, sid) if e["type"] == "approval_required"]
    plan_shown["session approval_required event"] = session_required["approval"]
    assert len(plan_shown) == 6
    for where, approval in plan_shown.items():
        assert approval == plan_shown["inbox"], where
    plan_shape = plan_shown["inbox"]
    assert plan_shape["sessionId"] == sid and plan_shape["runId"] == plan_run and plan_shape["taskId"]
    assert required["approvalId"] == plan_id and required["toolName"] == plan_shape["tool"]  # the flat fields stay

    # One shape across chat and plan runs: the plan's names what it belongs to, nothing else differs.
    assert set(plan_shape) == set(chat_shape) | {"sessionId", "taskId"}
    schema = build_openapi()["components"]["schemas"]["Approval"]
    assert set(schema["required"]) <= set(chat_shape) <= set(schema["properties"])


def test_a_result_stored_with_the_short_approval_still_reads(make_rt: MakeRuntime, client: FlaskClient) -> None:
    """A run result stored before the one shape (``{id, tool, reason, preview}``) reads on both
    stores: the run is the result's, the approval pending as at the stop, the times unknown."""
    rt = make_rt(Script(acts={"": [("save_memory", {"text": "chat note"})]}))
    chat = client.post("/api/agent/run", json={"prompt": "remember"}, headers=ALICE).get_json()
    run_id, approval_id = chat["runId"], chat["approval"]["approvalId"]
    doc = rt.store.get(paths.run(run_id))
    assert doc is not None
    short = {k: chat["approval"][k] for k in ("id", "tool", "reason", "preview")}
    rt.store.commit([Write("set", doc.path, {**doc.data, "result": {**doc.data["result"], "approval": short,
                                                                     "approvals": [short]}})])
    old = {"approvalId": approval_id, **short, "status": "pending", "runId": run_id, "kind": "tool"}
    result = _get(client, f"/api/agent/runs/{run_id}")["result"]
    assert result["approval"] == old and result["approvals"] == [old]
    assert one(_get(client, "/api/agent/runs")["runs"][0]["approvals"], approval_id) == old
