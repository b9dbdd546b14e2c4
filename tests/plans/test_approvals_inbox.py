"""The approvals inbox (issue 18 finding 5): ``GET /api/agent/approvals`` lists what waits for the
caller's decision across chat runs and plan sessions, owner-only, newest first; deciding stays
``POST /api/agent/approve``."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.runtime import Runtime
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script
from tests.plans.test_sessions_http import ALICE, BOB, create, deliver

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
CHAT_AND_PLAN = Script(acts={"": [("save_memory", {"text": "chat note"})],  # a chat run has no current task
                             "Write the summary": [("save_memory", {"text": "the summary"})]})


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def inbox(client: FlaskClient, query: str = "", headers: dict[str, str] = ALICE) -> list[dict[str, Any]]:
    resp = client.get(f"/api/agent/approvals{query}", headers=headers)
    assert resp.status_code == 200, resp.get_json()
    body = resp.get_json()
    assert body["ok"] is True
    return body["approvals"]  # type: ignore[no-any-return]


def paused_session(rt: Runtime, client: FlaskClient) -> str:
    sid = create(client)["sessionId"]
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE).status_code == 202
    deliver(rt)
    return sid


def test_a_plan_sessions_pending_approval_is_in_the_inbox_and_on_its_run(make_rt: MakeRuntime,
                                                                         client: FlaskClient) -> None:
    rt = make_rt(CHAT_AND_PLAN)
    sid = paused_session(rt, client)
    session = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    [pending] = inbox(client)
    assert pending["approvalId"] == session["pendingApprovals"][0]["approvalId"]
    assert pending["sessionId"] == sid and pending["taskId"] == "t2" and pending["status"] == "pending"
    assert pending["tool"] == "save_memory" and "the summary" in pending["preview"] and pending["reason"]
    assert RFC3339.match(pending["createdAt"]) and RFC3339.match(pending["expiresAt"])
    # finding 5: the run behind the session shows the approval it waits for, not ``approvals: []``
    runs = client.get("/api/agent/runs", headers=ALICE).get_json()["runs"]
    [plan_run] = [r for r in runs if r["runId"] == pending["runId"]]
    assert plan_run["status"] == "awaiting_confirmation"
    assert [a["approvalId"] for a in plan_run["approvals"]] == [pending["approvalId"]]
    assert inbox(client, headers=BOB) == []  # owner-only
    assert client.post("/api/agent/approve", json={"approvalId": pending["approvalId"], "decision": "approve"},
                       headers=ALICE).status_code == 202
    deliver(rt)
    assert inbox(client) == []
    [decided] = inbox(client, "?status=decided")
    assert decided["approvalId"] == pending["approvalId"] and decided["status"] == "approved"
    assert RFC3339.match(decided["decidedAt"])
    assert client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()["status"] == "completed"


def test_chat_and_plan_approvals_newest_first_with_status_and_limit(make_rt: MakeRuntime,
                                                                    client: FlaskClient) -> None:
    rt = make_rt(CHAT_AND_PLAN)
    chat = client.post("/api/agent/run", json={"prompt": "remember this"}, headers=ALICE).get_json()
    assert chat["status"] == "awaiting_confirmation"
    sid = paused_session(rt, client)
    newest, oldest = inbox(client)
    assert (newest["sessionId"], oldest["runId"]) == (sid, chat["runId"])
    assert "sessionId" not in oldest and "taskId" not in oldest  # a chat run's approval belongs to the run
    assert oldest["approvalId"] == chat["approval"]["approvalId"] == chat["approval"]["id"]
    assert [a["approvalId"] for a in inbox(client, "?limit=1")] == [newest["approvalId"]]
    client.post("/api/agent/approve", json={"approvalId": oldest["approvalId"], "decision": "reject"}, headers=ALICE)
    assert [a["approvalId"] for a in inbox(client)] == [newest["approvalId"]]
    assert [(a["approvalId"], a["status"]) for a in inbox(client, "?status=decided")] == [
        (oldest["approvalId"], "rejected")]
    assert [a["approvalId"] for a in inbox(client, "?status=all")] == [newest["approvalId"], oldest["approvalId"]]


@pytest.mark.parametrize(("query", "field"), [("?status=open", "status"), ("?status=", "status"), ("?limit=0", "limit"),
                                              ("?limit=201", "limit"), ("?limit=x", "limit"),
                                              ("?status=pending&status=all", "status"), ("?since=1", "since")])
def test_bad_query_parameters_are_a_400_naming_them(make_rt: MakeRuntime, client: FlaskClient,
                                                    query: str, field: str) -> None:
    make_rt(Script())
    resp = client.get(f"/api/agent/approvals{query}", headers=ALICE)
    assert resp.status_code == 400
    assert resp.get_json()["error"]["code"] == "INVALID_QUERY" and resp.get_json()["error"]["details"]["field"] == field


def test_the_inbox_needs_credentials_and_only_get(make_rt: MakeRuntime, client: FlaskClient) -> None:
    make_rt(Script())
    assert client.get("/api/agent/approvals").status_code == 401
    resp = client.post("/api/agent/approvals", json={}, headers=ALICE)
    assert resp.status_code == 405 and resp.headers["Allow"] == "GET"
