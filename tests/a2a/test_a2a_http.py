"""The A2A server through the dev app (every route on one Flask app, as ``make dev``), both
transports: a message starts a run (the task), approvals are answered by follow-up messages, reads
and cancels are the caller's own, and everything is authenticated like every other route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore, Query
from tests.agent.conftest import make_settings

V = {"A2A-Version": "1.0"}
ALICE = {"Authorization": "Bearer dev:alice", **V}
BOB = {"Authorization": "Bearer dev:bob", **V}


def _model(request: ModelRequest) -> Turn:
    """Asks to save a memory; once the call was answered, says what became of it."""
    last = request.turns[-1]
    answered = [p.function_response for p in last.parts if p.function_response]
    if answered:
        return text_turn("result: " + json.dumps(answered[0].response))
    if "plain" in last.text:
        return text_turn("just an answer")
    return calls_turn(call("save_memory", {"text": last.text}))


@pytest.fixture
def client(sqlite_docstore: DocStore) -> Iterator[FlaskClient]:
    rt = Runtime(make_settings(dispatcher="inline"), store=sqlite_docstore, model=FunctionModel(_model))
    set_runtime(rt)
    yield create_app().test_client()
    set_runtime(None)


def message(text: str, *, task_id: str | None = None, message_id: str = "m-1",
            context_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": text}]}
    if task_id:
        msg["taskId"] = task_id
    if context_id:
        msg["contextId"] = context_id
    return msg


def rest_send(client: FlaskClient, msg: dict[str, Any], headers: dict[str, str] = ALICE) -> Any:
    resp = client.post("/a2a/message:send", json={"message": msg}, headers=headers)
    return resp


def rpc(client: FlaskClient, method: str, params: dict[str, Any], headers: dict[str, str] = ALICE) -> Any:
    resp = client.post("/a2a", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, headers=headers)
    assert resp.status_code == 200, resp.get_data()[:300]
    return resp.get_json()


def test_the_card_is_public_and_names_both_transports_and_the_bearer_scheme(client: FlaskClient) -> None:
    card = client.get("/.well-known/agent-card.json").get_json()
    assert {i["protocolBinding"] for i in card["supportedInterfaces"]} == {"JSONRPC", "HTTP+JSON"}
    assert all(i["url"] == "http://localhost/a2a" for i in card["supportedInterfaces"])
    assert card["capabilities"]["streaming"] is True
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["bearerFormat"] == "dev:<uid>"
    assert "tool:save_memory" in {s["id"] for s in card["skills"]}
    # What the model reads as bytes is declared; other types are taken when they are text (docs/a2a.md).
    assert {"text/plain", "application/json", "image/png", "application/pdf"} <= set(card["defaultInputModes"])


def test_without_credentials_every_a2a_call_is_401(client: FlaskClient) -> None:
    for resp in (client.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
                             headers=V),
                 client.post("/a2a/message:send", json={"message": message("hi")}, headers=V),
                 client.get("/a2a/tasks", headers=V), client.get("/a2a/tasks/run_x", headers=V)):
        assert resp.status_code == 401, resp.get_data()[:200]


def test_a_message_pauses_on_approval_and_a_follow_up_approves_it_once(client: FlaskClient) -> None:
    task = rest_send(client, message("remember tea")).get_json()["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    text = task["status"]["message"]["parts"][0]["text"]
    assert "save_memory" in text and "remember tea" in text
    data = task["status"]["message"]["parts"][1]["data"]["approvals"][0]
    assert data["tool"] == "save_memory"
    # Bob cannot see, answer or cancel it (TaskNotFound, on both transports).
    assert rest_send(client, message("approve", task_id=task["id"]), BOB).status_code == 404
    assert client.get(f"/a2a/tasks/{task['id']}", headers=BOB).status_code == 404
    assert client.post(f"/a2a/tasks/{task['id']}:cancel", headers=BOB).status_code == 404
    assert rpc(client, "GetTask", {"id": task["id"]}, BOB)["error"]["code"] == -32001
    assert rpc(client, "ListTasks", {}, BOB)["result"]["tasks"] == []
    done = rest_send(client, message("approve", task_id=task["id"], message_id="m-2")).get_json()["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"][0]["text"].startswith("result: ")
    assert [m["messageId"] for m in done["history"] if m["role"] == "ROLE_USER"] == ["m-1", "m-2"]
    rt = _runtime()
    assert [m.text for m in rt.users.list_memories("alice")] == ["remember tea"]
    # A terminal task takes no more messages; its history can be cut.
    again = rest_send(client, message("approve", task_id=task["id"], message_id="m-3"))
    assert again.status_code == 400 and "takes no more messages" in again.get_data(as_text=True)
    got = rpc(client, "GetTask", {"id": task["id"], "historyLength": 1})["result"]
    assert len(got["history"]) == 1 and got["status"]["state"] == "TASK_STATE_COMPLETED"


def test_any_other_reply_rejects_and_the_agent_hears_it(client: FlaskClient) -> None:
    task = rpc(client, "SendMessage", {"message": message("remember coffee")})["result"]["task"]
    reply = rpc(client, "SendMessage", {"message": message("no, tea please", task_id=task["id"], message_id="m-2")})
    done = reply["result"]["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    answer = done["artifacts"][0]["parts"][0]["text"]
    assert "rejected" in answer and "no, tea please" in answer and "A2A message m-2" in answer
    assert _runtime().users.list_memories("alice") == []


def test_cancel_a_task_waiting_for_input_and_not_a_finished_one(client: FlaskClient) -> None:
    task = rest_send(client, message("remember cake")).get_json()["task"]
    canceled = client.post(f"/a2a/tasks/{task['id']}:cancel", headers=ALICE).get_json()
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    again = rpc(client, "CancelTask", {"id": task["id"]})
    assert again["error"]["code"] == -32002  # TaskNotCancelableError
    assert client.post(f"/a2a/tasks/{task['id']}:cancel", headers=ALICE).status_code == 409  # spec 5.4
    # The context's thread is free again: a new message in it starts a new task.
    again = rest_send(client, message("remember pie", context_id=task["contextId"], message_id="m-8")).get_json()
    assert again["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert again["task"]["contextId"] == task["contextId"] and again["task"]["id"] != task["id"]
    listed = client.get(f"/a2a/tasks?contextId={task['contextId']}", headers=ALICE).get_json()["tasks"]
    assert [t["id"] for t in listed] == [again["task"]["id"], task["id"]]


def test_a_direct_answer_to_a_waiting_caller_is_a_message_not_a_task(client: FlaskClient) -> None:
    """The agent answers without any tool and the caller waits (message/send): the reply is a
    message in the caller's context; no task is listed or found for it. The same answer to a
    caller that streams, asks to return immediately or sets a push config is a task."""
    for send in (lambda m: rest_send(client, m).get_json(),
                 lambda m: rpc(client, "SendMessage", {"message": m})["result"]):
        first = send(message("plain question", context_id="ctx-direct"))
        assert list(first) == ["message"], first
        reply = first["message"]
        assert reply["role"] == "ROLE_AGENT" and reply["contextId"] == "ctx-direct" and "taskId" not in reply
        assert reply["parts"] == [{"text": "just an answer"}]
        hidden = reply["messageId"].removesuffix("-reply")
        assert rpc(client, "GetTask", {"id": hidden})["error"]["code"] == -32001
        assert client.get(f"/a2a/tasks/{hidden}", headers=ALICE).status_code == 404
    assert client.get("/a2a/tasks?contextId=ctx-direct", headers=ALICE).get_json().get("tasks", []) == []
    later = client.post("/a2a/message:send", headers=ALICE, json={
        "message": message("plain question", message_id="m-2"), "configuration": {"returnImmediately": True}})
    assert list(later.get_json()) == ["task"]
    # A question that needs a tool is a task (it waits for approval here).
    assert rest_send(client, message("remember tea", context_id="ctx-direct")).get_json()["task"]["status"][
        "state"] == "TASK_STATE_INPUT_REQUIRED"


def test_a_stream_starts_with_the_task_and_ends_at_its_stop(client: FlaskClient) -> None:
    resp = client.post("/a2a/message:stream", json={"message": message("plain stream")}, headers=ALICE)
    assert resp.status_code == 200 and resp.mimetype == "text/event-stream"
    events = [json.loads(line[len("data: "):]) for line in resp.get_data(as_text=True).splitlines()
              if line.startswith("data: ")]
    assert list(events[0]) == ["task"] and events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    states = [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]
    assert states[0] == "TASK_STATE_WORKING" and states[-1] == "TASK_STATE_COMPLETED"
    assert [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in events if "artifactUpdate" in e] == [
        "just an answer"]


def test_json_rpc_takes_json_only(client: FlaskClient) -> None:
    resp = client.post("/a2a", data="{'jsonrpc': '2.0'}", headers={**ALICE, "Content-Type": "text/plain"})
    assert resp.get_json()["error"]["code"] == -32005


def _runtime() -> Runtime:
    from shared.runtime import get_runtime

    return get_runtime()


def test_a_users_own_remote_agent_is_ssrf_guarded_sealed_and_joins_only_their_runs(sqlite_docstore: DocStore) -> None:
    from tests.e2e.test_openapi import KEY

    body = {"url": "http://127.0.0.1:9/agent?key=s3cret", "accessToken": "tok-s3cret"}
    for allow_private in (False, True):
        rt = Runtime(make_settings(credentials_encryption_key=KEY, mcp_allow_private_urls=allow_private),
                     store=sqlite_docstore, model=FunctionModel(_model))
        set_runtime(rt)
        client = create_app().test_client()
        resp = client.post("/api/integrations/a2a/helper", headers=ALICE, json=body)
        assert "s3cret" not in resp.get_data(as_text=True)
        if not allow_private:  # the SSRF guard: a loopback address is refused, nothing stored
            assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "MCP_URL_NOT_ALLOWED"
            assert client.get("/api/integrations/a2a", headers=ALICE).get_json()["servers"] == []
    try:
        assert resp.status_code == 200 and resp.get_json()["url"] == "http://127.0.0.1:9/agent", resp.get_json()
        listed = client.get("/api/integrations/a2a", headers=ALICE).get_json()["servers"]
        assert [s["name"] for s in listed] == ["helper"] and listed[0]["hasToken"] is True
        assert client.get("/api/integrations/a2a", headers=BOB).get_json()["servers"] == []
        assert {"helper_send_message", "helper_get_task"} <= {t.name for t in rt.registry_for(rt.registry, "alice")}
        assert "helper_send_message" not in {t.name for t in rt.registry_for(rt.registry, "bob")}
        assert client.delete("/api/integrations/a2a/helper", headers=ALICE).get_json()["removed"] is True
    finally:
        set_runtime(None)


def test_push_notifications_are_stored_per_task_and_delivered_at_each_stop(sqlite_docstore: DocStore) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    received: list[tuple[dict[str, str], dict[str, Any]]] = []

    class Receiver(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append((dict(self.headers.items()), json.loads(body)))
            self.send_response(200)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    from tests.e2e.test_openapi import KEY

    config = {"id": "cfg-1", "url": url, "token": "tok-1",
              "authentication": {"scheme": "Bearer", "credentials": "cred-1"}}
    # Without a credentials key a token is never stored (in clear or otherwise): refused.
    set_runtime(Runtime(make_settings(dispatcher="inline", mcp_allow_private_urls=True), store=sqlite_docstore,
                        model=FunctionModel(_model)))
    keyless = create_app().test_client()
    first = rest_send(keyless, message("remember tea")).get_json()["task"]
    refused = keyless.post(f"/a2a/tasks/{first['id']}/pushNotificationConfigs", json=config, headers=ALICE)
    assert refused.status_code == 400 and "cannot be stored" in refused.get_data(as_text=True)
    rt = Runtime(make_settings(dispatcher="inline", mcp_allow_private_urls=True, credentials_encryption_key=KEY),
                 store=sqlite_docstore, model=FunctionModel(_model))
    set_runtime(rt)
    try:
        client = create_app().test_client()
        task = rest_send(client, message("remember tea", context_id="ctx-push")).get_json()["task"]
        created = client.post(f"/a2a/tasks/{task['id']}/pushNotificationConfigs", json=config, headers=ALICE)
        assert created.status_code == 200 and created.get_json()["id"] == "cfg-1", created.get_json()
        assert client.get(f"/a2a/tasks/{task['id']}/pushNotificationConfigs/cfg-1", headers=BOB).status_code == 404
        listed = client.get(f"/a2a/tasks/{task['id']}/pushNotificationConfigs", headers=ALICE).get_json()
        assert [c["id"] for c in listed["configs"]] == ["cfg-1"]
        assert listed["configs"][0]["token"] == "tok-1"  # the caller's own, opened for it
        assert listed["configs"][0]["authentication"] == {"scheme": "Bearer", "credentials": "cred-1"}
        stored = [d.data for d in sqlite_docstore.query(Query(f"users/alice/a2aTasks/{task['id']}/pushConfigs"))]
        assert len(stored) == 1 and "sealed" in stored[0]  # sealed at rest, nothing in clear
        assert "tok-1" not in json.dumps(stored) and "cred-1" not in json.dumps(stored)
        done = rest_send(client, message("approve", task_id=task["id"], message_id="m-2")).get_json()["task"]
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        for _ in range(100):
            if received:
                break
            import time

            time.sleep(0.05)
        ((headers, body),) = received
        assert headers["X-A2A-Notification-Token"] == "tok-1" and headers["Authorization"] == "Bearer cred-1"
        deliveries = [d.data for d in sqlite_docstore.query(Query("deliveries"))]
        assert deliveries and "tok-1" not in json.dumps(deliveries) and "cred-1" not in json.dumps(deliveries)
        assert body["task"]["id"] == task["id"] and body["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert client.delete(f"/a2a/tasks/{task['id']}/pushNotificationConfigs/cfg-1", headers=ALICE).status_code == 200
        assert client.get(f"/a2a/tasks/{task['id']}/pushNotificationConfigs", headers=ALICE).get_json() == {}
    finally:
        set_runtime(None)
        server.shutdown()
        server.server_close()


def test_cancel_a_working_task_stops_its_run_at_the_next_step(sqlite_docstore: DocStore) -> None:
    import threading

    release = threading.Event()

    def slow(request: ModelRequest) -> Turn:
        release.wait(20)
        return calls_turn(call("save_memory", {"text": "too late"}))

    rt = Runtime(make_settings(dispatcher="inline"), store=sqlite_docstore, model=FunctionModel(slow))
    set_runtime(rt)
    try:
        client = create_app().test_client()
        resp = client.post("/a2a/message:send", headers=ALICE, json={
            "message": message("think slowly"), "configuration": {"returnImmediately": True}})
        task = resp.get_json()["task"]
        assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"), task
        threading.Timer(0.5, release.set).start()
        canceled = client.post(f"/a2a/tasks/{task['id']}:cancel", headers=ALICE).get_json()
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED", canceled
        assert rt.users.list_memories("alice") == []  # the step after the cancel never ran its tool
    finally:
        release.set()
        set_runtime(None)


def auth_required(client: FlaskClient, prompt: str, tool: str) -> dict[str, Any]:
    """``prompt`` sent as a new task, checked ``auth-required`` with a status message saying to connect
    GitHub for a call of ``tool``; the task."""
    task: dict[str, Any] = rest_send(client, message(prompt)).get_json()["task"]
    assert task["status"]["state"] == "TASK_STATE_AUTH_REQUIRED", task["status"]
    said = task["status"]["message"]["parts"][0]["text"]
    assert "connect github" in said and tool in said, said
    return task


def test_a_call_through_an_integration_the_user_has_not_connected_is_auth_required(
        sqlite_docstore: DocStore) -> None:
    """The run waits for approval of a call to a GitHub tool while alice has no GitHub connection:
    the task is auth-required (its status message says what to connect); once she connects it, the
    same task is input-required; a reply decides it as ever."""
    from shared.connectors.credentials import IntegrationTokens
    from tests.e2e.test_openapi import KEY

    def model(request: ModelRequest) -> Turn:
        if any(p.function_response for p in request.turns[-1].parts):
            return text_turn("not filed")
        return calls_turn(call("github_issue_create", {"repo": "octo/demo", "title": "Crash on start"}))

    rt = Runtime(make_settings(dispatcher="inline", credentials_encryption_key=KEY), store=sqlite_docstore,
                 model=FunctionModel(model))
    set_runtime(rt)
    try:
        client = create_app().test_client()
        task = auth_required(client, "file the crash as an issue", "github_issue_create")
        assert rpc(client, "GetTask", {"id": task["id"]})["result"]["status"]["state"] == "TASK_STATE_AUTH_REQUIRED"
        resp = client.post("/a2a/message:stream", json={"message": message("file it again", message_id="m-s",
                                                                            context_id="ctx-s")}, headers=ALICE)
        events = [json.loads(line[len("data: "):]) for line in resp.get_data(as_text=True).splitlines()
                  if line.startswith("data: ")]
        assert [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e][-1] == \
            "TASK_STATE_AUTH_REQUIRED"
        rt.connectors().vault.put("alice", "github", IntegrationTokens(access_token="ghp_test"))
        assert client.get(f"/a2a/tasks/{task['id']}", headers=ALICE).get_json()["status"]["state"] == \
            "TASK_STATE_INPUT_REQUIRED"
        done = rest_send(client, message("reject", task_id=task["id"], message_id="m-2")).get_json()["task"]
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        set_runtime(None)


def test_a_read_only_call_through_an_integration_the_user_has_not_connected_is_auth_required(
        sqlite_docstore: DocStore) -> None:
    """A read-only GitHub call (no approval needed when connected) in an A2A task while alice has no
    GitHub connection: instead of running and failing "not connected", the call waits and the task
    is auth-required (spec 1.0 §7.6: its status message says what to connect). Once she connects it
    the task is input-required; approved, the call runs once and the task completes. A run that is
    not an A2A task's makes the same call at once, as before (it fails into the agent's next step)."""
    from devfakes.github import FakeGitHub
    from shared.connectors.credentials import IntegrationTokens
    from tests.e2e.test_openapi import KEY

    told: list[dict[str, Any]] = []

    def model(request: ModelRequest) -> Turn:
        answers = [p.function_response for p in request.turns[-1].parts if p.function_response]
        if answers:
            told.append(dict(answers[0].response))
            return text_turn("looked")
        return calls_turn(call("github_repo_get", {"repo": "octo/demo"}))

    with FakeGitHub() as github:
        github.add_repo("octo/demo", description="The demo")
        rt = Runtime(make_settings(dispatcher="inline", credentials_encryption_key=KEY,
                                   github_api_base_url=github.base_url), store=sqlite_docstore,
                     model=FunctionModel(model))
        set_runtime(rt)
        try:
            client = create_app().test_client()
            task = auth_required(client, "describe octo/demo", "github_repo_get")
            assert github.requests == [] and told == []  # the call waits: nothing was asked of GitHub

            rt.connectors().vault.put("alice", "github", IntegrationTokens(access_token=github.token))
            assert client.get(f"/a2a/tasks/{task['id']}", headers=ALICE).get_json()["status"]["state"] == \
                "TASK_STATE_INPUT_REQUIRED"
            done = rest_send(client, message("approve", task_id=task["id"], message_id="m-2")).get_json()["task"]
            assert done["status"]["state"] == "TASK_STATE_COMPLETED", done["status"]
            assert [r.path for r in github.requests] == ["/repos/octo/demo"]
            assert told[-1]["description"] == "The demo"

            # Not an A2A task: the same call by bob, who has no connection, runs at once and fails.
            plain = client.post("/api/agent/run", json={"prompt": "describe octo/demo"},
                                headers={"Authorization": "Bearer dev:bob"}).get_json()
            assert plain["status"] == "completed", plain
            assert "not connected" in json.dumps(told[-1]), told[-1]
        finally:
            set_runtime(None)


def test_a_list_query_the_sdk_would_drop_is_invalid_params(client: FlaskClient) -> None:
    """``GET /a2a/tasks``: a ``status`` that is no task state, or an ``includeArtifacts`` that is
    neither true nor false, is refused (400 InvalidParamsError naming it) instead of being dropped by
    the SDK's query parser, which answered every task as if no filter had been asked."""
    for query, named in (("status=NOPE", "status"), ("includeArtifacts=maybe", "includeArtifacts")):
        resp = client.get(f"/a2a/tasks?{query}", headers=ALICE)
        assert resp.status_code == 400, (query, resp.get_data()[:300])
        assert named in resp.get_data(as_text=True)
    for query in ("status=TASK_STATE_COMPLETED", "includeArtifacts=true", "includeArtifacts=False", "pageSize=5"):
        assert client.get(f"/a2a/tasks?{query}", headers=ALICE).status_code == 200, query
