"""POST /api/agent/approve and the resume CloudEvent function, over HTTP."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from cloudevents.conversion import to_structured
from cloudevents.http import CloudEvent
from flask.testing import FlaskClient
from functions_framework import create_app

from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from tests.e2e.conftest import ALICE, BOB, Install
from tests.messages import published_event, pubsub_event


def paused_run(rt: Runtime, client: FlaskClient) -> dict[str, Any]:
    body = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers=ALICE).get_json()
    assert body["status"] == "awaiting_confirmation"
    return body  # type: ignore[no-any-return]


@pytest.fixture
def resume_client() -> FlaskClient:
    return create_app("resume", "main.py", "cloudevent").test_client()


def test_approve_then_resume_cloudevent_completes_the_run(install: Install, client: FlaskClient,
                                                          resume_client: FlaskClient) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved.")]))
    body = paused_run(rt, client)
    resp = client.post("/api/agent/approve", json={"approvalId": body["approval"]["id"], "decision": "approve"},
                       headers=ALICE)
    assert resp.status_code == 202
    assert resp.get_json() == {"ok": True, "runId": body["runId"], "approvalId": body["approval"]["id"],
                               "decision": "approved", "status": "resume_requested"}
    headers, data = published_event(rt)
    for _ in range(3):  # duplicate deliveries
        assert resume_client.post("/", headers=headers, data=data).status_code == 200
    assert [m.text for m in rt.users.list_memories("alice")] == ["Alice likes tea"]
    run = client.get(f"/api/agent/runs/{body['runId']}", headers=ALICE).get_json()
    assert run["status"] == "completed" and run["result"]["summary"] == "Saved."
    events = [json.loads(x) for x in client.get(f"/api/agent/runs/{body['runId']}/events?after=0&follow=1",
                                                 headers=ALICE).data.decode().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "result" and events[-1]["result"]["status"] == "completed"


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"approvalId": "apr_unknown", "decision": "approve"}, 404, "APPROVAL_NOT_FOUND"),
    ({"approvalId": "../x", "decision": "approve"}, 400, "INVALID_REQUEST"),
    ({"approvalId": 7, "decision": "approve"}, 400, "INVALID_REQUEST"),
    ({"decision": "approve"}, 400, "INVALID_REQUEST"),
    ({"approvalId": "apr_x", "decision": "maybe"}, 400, "INVALID_REQUEST"),
])
def test_approve_bad_input(install: Install, client: FlaskClient, body: dict[str, Any], status: int,
                           code: str) -> None:
    install(ScriptedModel([]))
    resp = client.post("/api/agent/approve", json=body, headers=ALICE)
    assert resp.status_code == status and resp.get_json()["error"]["code"] == code


def test_approve_security_replay_and_expiry(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "x"})),
                                calls_turn(call("save_memory", {"text": "y"}))]))
    body = paused_run(rt, client)
    approval_id = body["approval"]["id"]
    other = client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": "approve"}, headers=BOB)
    assert other.status_code == 404
    assert client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": "reject",
                                                   "reason": "no"}, headers=ALICE).status_code == 202
    replay = client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": "approve"},
                         headers=ALICE)
    assert replay.status_code == 409 and replay.get_json()["error"]["code"] == "ALREADY_DECIDED"
    rt2 = install(ScriptedModel([calls_turn(call("save_memory", {"text": "y"}))]), approval_ttl_s=0.0,
                  store_override=rt.store)
    body2 = client.post("/api/agent/run", json={"prompt": "remember y"}, headers=ALICE).get_json()
    expired = client.post("/api/agent/approve", json={"approvalId": body2["approval"]["id"],
                                                      "decision": "approve"}, headers=ALICE)
    assert expired.status_code == 410 and expired.get_json()["error"]["code"] == "APPROVAL_EXPIRED"
    (action,) = rt2.runs.list_actions(body2["runId"])
    assert action.status == "rejected" and "expired" in (action.error or "")


@pytest.mark.parametrize(("payload", "logged"), [
    (b"not json", "malformed message acknowledged: Pub/Sub message data is not base64 JSON"),
    (b"{}", "message without unitId acknowledged"),
    (b'{"runId": 5}', "malformed message acknowledged: invalid message fields: unitId"),
    (b'{"kind": "explode"}', "message of an unknown kind acknowledged"),
    (b'{"kind": "continue", "schemaVersion": 2, "unitId": "run_x"}',
     "malformed message acknowledged: schemaVersion 2 is newer"),
    (b'{"runId": "run_doesnotexist"}', "resume message handled: not_found"),
    (b'{"runId": "../../x"}', "malformed message acknowledged: invalid message fields: unitId"),
])
def test_resume_acknowledges_malformed_or_unknown_messages(install: Install, resume_client: FlaskClient,
                                                           payload: bytes, logged: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    install(ScriptedModel([]))
    headers, data = pubsub_event(payload)
    with caplog.at_level(logging.INFO, logger="agent_runtime"):
        assert resume_client.post("/", headers=headers, data=data).status_code == 200
    assert any(r.getMessage().startswith(logged) for r in caplog.records), [r.getMessage() for r in caplog.records]
    if "acknowledged" in logged:  # bad deliveries are errors an operator must see, with kind and version
        [bad] = [r for r in caplog.records if r.getMessage().startswith(logged)]
        assert bad.levelno == logging.ERROR and {"kind", "schemaVersion"} <= set(getattr(bad, "fields", {}))


def test_resume_acknowledges_events_without_pubsub_data(install: Install, resume_client: FlaskClient) -> None:
    install(ScriptedModel([]))
    event = CloudEvent({"type": "t", "source": "s"}, {"unexpected": True})
    headers, body = to_structured(event)
    assert resume_client.post("/", headers=dict(headers), data=body).status_code == 200
