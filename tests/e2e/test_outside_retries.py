"""A client that retries a decision after losing the answer (session 2026-11-26d outside trial,
docs/session-notes/2026-11-26d/issue-33p.md).

``POST /api/agent/approve`` takes no ``Idempotency-Key``: a retry of a decision that was recorded
answers 409 ``ALREADY_DECIDED``, the same refusal a conflicting decision gets. It said only
``runId``, so a client whose approve timed out could not tell whether its approve or someone
else's reject held. It now also names the decision that holds and when it was made.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from tests.e2e.conftest import ALICE, BOB, Install


@pytest.fixture
def runtime(install: Install) -> Iterator[None]:
    install(ScriptedModel([calls_turn(call("save_memory", {"text": "likes jazz"})), text_turn("saved"),
                           calls_turn(call("save_memory", {"text": "likes blues"})), text_turn("not saved")]))
    yield


def _paused(client: FlaskClient) -> str:
    body = client.post("/api/agent/run", headers=ALICE, json={"prompt": "remember it"}).get_json()
    assert body["status"] == "awaiting_confirmation", body
    approval_id: str = body["approval"]["approvalId"]
    return approval_id


@pytest.mark.parametrize(("first", "retry", "held"), [("approve", "approve", "approved"),
                                                      ("reject", "approve", "rejected"),
                                                      ("approve", "reject", "approved")])
def test_a_retried_decision_is_told_which_decision_holds(runtime: None, client: FlaskClient, first: str,
                                                         retry: str, held: str) -> None:
    approval_id = _paused(client)
    done = client.post("/api/agent/approve", headers=ALICE, json={"approvalId": approval_id, "decision": first})
    assert done.status_code == 202, done.get_json()
    again = client.post("/api/agent/approve", headers=ALICE, json={"approvalId": approval_id, "decision": retry})
    assert again.status_code == 409, again.get_json()
    error = again.get_json()["error"]
    assert error["code"] == "ALREADY_DECIDED" and error["details"]["decision"] == held, error
    assert error["details"]["runId"] == done.get_json()["runId"]
    assert error["details"]["decidedAt"].endswith("Z")
    assert f"({held})" in error["message"]
    shown = client.get(f"/api/agent/approvals/{approval_id}", headers=ALICE).get_json()["approval"]
    assert shown["status"] == held  # the retry changed nothing
    other = client.post("/api/agent/approve", headers=BOB, json={"approvalId": approval_id, "decision": retry})
    assert other.status_code == 404 and "decision" not in other.get_json()["error"].get("details", {})


def _agui(run_id: str, text: str) -> dict[str, object]:
    return {"threadId": "th-1", "runId": run_id, "messages": [{"id": "m1", "role": "user", "content": text}],
            "state": {}, "tools": [], "context": [], "forwardedProps": {}}


def test_an_agui_run_id_reused_with_another_input_is_told_as_the_run_id_not_a_header_never_sent(
        install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([text_turn("hello")] * 3))
    first = client.post("/api/agent/agui", headers=ALICE, json=_agui("r1", "hi"))
    assert first.status_code == 200 and "RUN_FINISHED" in first.get_data(as_text=True)
    again = client.post("/api/agent/agui", headers=ALICE, json=_agui("r1", "hi"))
    assert again.status_code == 200 and "RUN_FINISHED" in again.get_data(as_text=True)  # the same run, read again
    other = client.post("/api/agent/agui", headers=ALICE, json=_agui("r1", "something else"))
    assert other.status_code == 422, other.get_data(as_text=True)[:300]
    error = other.get_json()["error"]
    assert error["code"] == "IDEMPOTENCY_KEY_REUSED" and error["details"]["field"] == "runId", error
    assert "runId r1" in error["message"] and "Idempotency-Key" not in error["message"]
    keyed = client.post("/api/agent/agui", headers={**ALICE, "Idempotency-Key": "k-1"}, json=_agui("r2", "hi"))
    assert keyed.status_code == 200 and "RUN_FINISHED" in keyed.get_data(as_text=True)
    reused = client.post("/api/agent/agui", headers={**ALICE, "Idempotency-Key": "k-1"}, json=_agui("r3", "other"))
    assert reused.status_code == 422 and "Idempotency-Key" in reused.get_json()["error"]["message"]  # a header sent
