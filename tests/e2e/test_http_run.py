"""POST /api/agent/run and /run/stream, GET /api/agent/runs/...: contract, errors and security."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from shared.runtime import get_runtime
from tests.e2e.conftest import ALICE, BOB, Install
from tests.messages import deliver


def ndjson(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.decode().splitlines() if line.strip()]


def test_run_returns_the_response_shape(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([text_turn("Hi Alice")]))
    resp = client.post("/api/agent/run", json={"prompt": "hello"}, headers=ALICE)
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["ok"] is True and body["status"] == "completed" and body["mode"] == "assistant_text"
    assert body["summary"] == "Hi Alice" and body["model"] == "scripted-model"
    assert body["runId"].startswith("run_") and body["threadId"].startswith("thr_")
    assert body["output"] == {"text": "Hi Alice"}


def test_stream_emits_ndjson_with_seq_equal_to_replay(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([calls_turn(call("save_memory", {"text": "likes tea"}))]))
    resp = client.post("/api/agent/run/stream", json={"prompt": "remember tea"}, headers=ALICE)
    assert resp.status_code == 200 and resp.mimetype == "application/x-ndjson"
    events = ndjson(resp.data)
    assert events[0]["type"] == "status" and events[0]["status"] == "planning" and events[0]["threadId"]
    assert any(e["type"] == "tool_call" and e["toolName"] == "save_memory" for e in events)
    last = events[-1]
    assert last["type"] == "result" and last["result"]["status"] == "awaiting_confirmation"
    assert last["result"]["approval"]["tool"] == "save_memory"
    run_id = last["result"]["runId"]
    replay = client.get(f"/api/agent/runs/{run_id}/events?after=0", headers=ALICE)
    assert replay.mimetype == "application/x-ndjson" and ndjson(replay.data) == events
    tail = client.get(f"/api/agent/runs/{run_id}/events?after=2", headers=ALICE)
    assert ndjson(tail.data) == events[2:]
    record = client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()
    assert record["status"] == "awaiting_confirmation" and record["schemaVersion"] == 1
    assert "systemInstruction" not in record


def test_stream_error_mid_run_emits_error_and_closes(install: Install, client: FlaskClient) -> None:
    from shared.errors import ModelError

    install(ScriptedModel([ModelError("upstream 500", status=500, retryable=True)]))
    resp = client.post("/api/agent/run/stream", json={"prompt": "x"}, headers=ALICE)
    assert resp.status_code == 200
    events = ndjson(resp.data)
    assert events[-1]["type"] == "error" and "upstream 500" in events[-1]["error"]


@pytest.mark.parametrize(("body", "content_type", "status", "needle"), [
    (b"{not json", "application/json", 400, "not valid JSON"),
    (b"", "application/json", 400, "empty"),
    (b"[1,2]", "application/json", 400, "JSON object"),
    (b'{"threadId": "t"}', "application/json", 400, "prompt"),
    (b'{"prompt": ""}', "application/json", 400, "prompt"),
    (b'{"prompt": "   "}', "application/json", 400, "prompt"),
    (b'{"prompt": 5}', "application/json", 400, "prompt"),
    (b'{"prompt": "x", "conversation": "nope"}', "application/json", 400, "conversation"),
    (b'{"prompt": "x", "conversation": [{"role": "system", "text": "x"}]}', "application/json", 400,
     "conversation.0.role"),
    (b'{"prompt": "x", "attachedContext": [{"type": "pdf", "id": "1"}]}', "application/json", 400,
     "attachedContext.0.type"),
    (b'{"prompt": "x", "temperature": 2}', "application/json", 400, "temperature"),
    (b'{"prompt": "x", "threadId": "../etc"}', "application/json", 400, "threadId"),
    (b'{"prompt": "x"}', "text/plain", 415, "application/json"),
])
def test_bad_input_gets_a_clear_4xx(install: Install, client: FlaskClient, body: bytes, content_type: str,
                                    status: int, needle: str) -> None:
    rt = install(ScriptedModel([]))
    for path in ("/api/agent/run", "/api/agent/run/stream"):
        resp = client.post(path, data=body, content_type=content_type, headers=ALICE)
        assert resp.status_code == status, resp.data
        err = resp.get_json()
        assert err["ok"] is False and needle in json.dumps(err)
    assert rt.store.query(__import__("shared.state.docstore", fromlist=["Query"]).Query("runs")) == []


def test_oversize_body_is_413(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([]), max_body_bytes=1000)
    resp = client.post("/api/agent/run", json={"prompt": "x" * 2000}, headers=ALICE)
    assert resp.status_code == 413 and resp.get_json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_conversation_over_40_items_is_trimmed(install: Install, client: FlaskClient) -> None:
    model = ScriptedModel([text_turn("ok")])
    install(model)
    convo = [{"role": "user" if i % 2 == 0 else "assistant", "text": f"m{i}"} for i in range(45)]
    ctx = [{"type": "email", "id": f"e{i}", "snippet": "s"} for i in range(20)]
    resp = client.post("/api/agent/run", json={"prompt": "p", "conversation": convo, "attachedContext": ctx},
                       headers=ALICE)
    assert resp.status_code == 200
    texts = [p.text for t in model.requests[0].turns for p in t.parts]
    assert texts[0] == "m15" and len(texts) == 31
    si = model.requests[0].system_instruction
    assert '"id": "e11"' in si and '"id": "e12"' not in si


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nonsense"}, {"Authorization": "Basic eA=="},
                                     {"Authorization": "Bearer dev:"}])
def test_missing_or_bad_credentials_are_401(install: Install, client: FlaskClient, headers: dict[str, str]) -> None:
    install(ScriptedModel([]))
    for method, path in (("POST", "/api/agent/run"), ("POST", "/api/agent/run/stream"),
                         ("GET", "/api/agent/runs/run_x"), ("POST", "/api/agent/approve")):
        resp = client.open(path, method=method, json={"prompt": "x"}, headers=headers)
        assert resp.status_code == 401, (path, resp.data)
        assert resp.get_json()["error"]["code"] == "UNAUTHENTICATED"


def test_other_users_run_is_404_and_their_thread_id_is_another_thread(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([text_turn("ok"), text_turn("ok too")]))
    body = client.post("/api/agent/run", json={"prompt": "x", "threadId": "shared-thread"}, headers=ALICE).get_json()
    resp = client.post("/api/agent/run", json={"prompt": "x", "threadId": "shared-thread"}, headers=BOB)
    assert resp.status_code == 200 and resp.get_json()["runId"] != body["runId"]  # bob's own thread of that id
    assert client.get(f"/api/agent/runs/{body['runId']}", headers=BOB).status_code == 404
    assert client.get(f"/api/agent/runs/{body['runId']}/events", headers=BOB).status_code == 404
    assert client.get("/api/agent/runs/run_missing", headers=ALICE).status_code == 404


def test_second_run_on_a_paused_thread_is_409(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([calls_turn(call("save_memory", {"text": "x"}))]))
    client.post("/api/agent/run", json={"prompt": "x", "threadId": "t1"}, headers=ALICE)
    resp = client.post("/api/agent/run", json={"prompt": "y", "threadId": "t1"}, headers=ALICE)
    assert resp.status_code == 409 and resp.get_json()["error"]["code"] == "APPROVAL_PENDING"


def test_second_run_while_the_first_is_in_progress_is_409_run_active(install: Install,
                                                                   client: FlaskClient) -> None:
    """The first request is held inside its model call (so its run is in progress, deterministically)
    while a second request on the same thread arrives over HTTP."""
    gate, entered = threading.Event(), threading.Event()

    def held(request: ModelRequest) -> Turn:
        entered.set()
        assert gate.wait(10), "the test never released the first run"
        return text_turn("first done")

    install(FunctionModel(held))
    first: dict[str, Any] = {}

    def first_request() -> None:
        resp = create_app().test_client().post("/api/agent/run", json={"prompt": "x", "threadId": "busy"},
                                               headers=ALICE)
        first.update(status=resp.status_code, body=resp.get_json())

    worker = threading.Thread(target=first_request, name="first-request")
    worker.start()
    try:
        assert entered.wait(10), "the first run never reached its model call"
        for path in ("/api/agent/run", "/api/agent/run/stream"):
            resp = client.post(path, json={"prompt": "y", "threadId": "busy"}, headers=ALICE)
            assert resp.status_code == 409, (path, resp.data)
            err = resp.get_json()["error"]
            assert err["code"] == "RUN_ACTIVE" and err["details"]["runId"].startswith("run_"), err
        # enqueue: 202, queued behind the working run (it starts through the dispatcher)
        resp = client.post("/api/agent/run", json={"prompt": "y", "threadId": "busy", "multitaskStrategy": "enqueue"},
                           headers=ALICE)
        assert resp.status_code == 202 and resp.get_json()["status"] == "queued", resp.data
        queued_id = resp.get_json()["runId"]
        assert client.get(f"/api/agent/runs/{queued_id}", headers=ALICE).get_json()["status"] == "queued"
    finally:
        gate.set()
        worker.join(10)
    assert not worker.is_alive()
    assert first["status"] == 200 and first["body"]["status"] == "completed"
    assert first["body"]["runId"] == err["details"]["runId"]
    # the thread is held by the queued run until it ran
    after = client.post("/api/agent/run", json={"prompt": "z", "threadId": "busy"}, headers=ALICE)
    assert after.status_code == 409 and after.get_json()["error"]["details"]["runId"] == queued_id
    rt = get_runtime()
    deliver(rt)
    assert client.get(f"/api/agent/runs/{queued_id}", headers=ALICE).get_json()["status"] == "completed"
    after = client.post("/api/agent/run", json={"prompt": "z", "threadId": "busy"}, headers=ALICE)
    assert after.status_code == 200 and after.get_json()["status"] == "completed"


def test_idempotency_key_header_returns_the_same_run(install: Install, client: FlaskClient) -> None:
    model = ScriptedModel([text_turn("once"), text_turn("a fresh key: a new run")])
    install(model)
    h = {**ALICE, "Idempotency-Key": "abc-123"}
    first = client.post("/api/agent/run", json={"prompt": "x"}, headers=h)
    second = client.post("/api/agent/run", json={"prompt": "x"}, headers=h)
    assert first.get_json() == second.get_json()
    assert second.headers.get("Idempotent-Replayed") == "true"
    replay = client.post("/api/agent/run/stream", json={"prompt": "x"}, headers=h)
    assert replay.headers.get("Idempotent-Replayed") == "true"  # the stream says so too (README)
    streamed = ndjson(replay.data)
    assert streamed[-1]["result"]["runId"] == first.get_json()["runId"]
    fresh = client.post("/api/agent/run/stream", json={"prompt": "x"}, headers={**ALICE, "Idempotency-Key": "abc-124"})
    assert "Idempotent-Replayed" not in fresh.headers
    assert ndjson(fresh.data)[-1]["result"]["runId"] != first.get_json()["runId"]  # read to its end: a new run
    bad = client.post("/api/agent/run", json={"prompt": "x"}, headers={**ALICE, "Idempotency-Key": "é" * 3})
    assert bad.status_code == 400
    model.assert_complete()


def test_events_query_validation(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([text_turn("ok")]))
    run_id = client.post("/api/agent/run", json={"prompt": "x"}, headers=ALICE).get_json()["runId"]
    assert client.get(f"/api/agent/runs/{run_id}/events?after=abc", headers=ALICE).status_code == 400
    assert client.get(f"/api/agent/runs/{run_id}/events?after=-1", headers=ALICE).status_code == 400
    assert client.post(f"/api/agent/runs/{run_id}", headers=ALICE).status_code == 405


def test_a_text_only_result_names_no_action(install: Install, client: FlaskClient) -> None:
    """A run that called no tool has no action: ``actionId`` is absent, not ``""`` (issue 35)."""
    install(ScriptedModel([text_turn("just text"), calls_turn(call("save_memory", {"text": "x"}))]))
    body = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).get_json()
    assert body["status"] == "completed" and "actionId" not in body
    paused = client.post("/api/agent/run", json={"prompt": "save"}, headers=ALICE).get_json()
    assert paused["actionId"].startswith("act_")
