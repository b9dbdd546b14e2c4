"""Issue 21: a user's own MCP servers (``/api/integrations/mcp/{name}``), over HTTP, against a real
SDK server over Streamable HTTP that requires its bearer token: stored encrypted, never echoed or
logged, its tools in that user's runs only, bad input refused with clear 400s."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore, Query
from shared.state.records import UserRecord
from tests.agent.conftest import make_settings
from tests.agent.mcp_servers import serving
from tests.agent.test_loop import start_and_drive
from tests.agent.test_mcp_tools import HTTP_SERVER
from tests.e2e.test_openapi import KEY

ALICE = {"Authorization": "Bearer dev:alice"}
BOB = {"Authorization": "Bearer dev:bob"}
TOKEN = "s3cret-user-token"


@pytest.fixture(scope="module")
def notes_url() -> Iterator[str]:
    with serving([sys.executable, str(HTTP_SERVER), "{port}", TOKEN]) as url:
        yield url


class Chat:
    """The model: answers each request with the next scripted turn, keeping what it was asked."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> Turn:
        self.requests.append(request)
        return self.turns.pop(0) if self.turns else text_turn("done")


@pytest.fixture
def chat() -> Chat:
    return Chat()


@pytest.fixture
def rt(sqlite_docstore: DocStore, chat: Chat) -> Iterator[Runtime]:
    settings = make_settings(credentials_encryption_key=KEY, mcp_timeout_s=20.0, mcp_allow_private_urls=True)
    runtime = Runtime(settings, store=sqlite_docstore,
                      model=FunctionModel(chat, name="gemini-3-flash-preview"), authenticator=LocalAuthenticator(),
                      dispatcher=RecordingDispatcher())
    set_runtime(runtime)
    yield runtime
    set_runtime(None)


@pytest.fixture
def client(rt: Runtime) -> FlaskClient:
    return create_app().test_client()


def test_a_users_server_is_stored_sealed_and_its_tools_join_only_that_users_runs(
        rt: Runtime, client: FlaskClient, chat: Chat, notes_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = notes_url + "?team=a#frag"
    stored = client.post("/api/integrations/mcp/notes", json={"url": url, "accessToken": TOKEN}, headers=ALICE)
    assert stored.status_code == 200, stored.get_json()
    body = stored.get_json()
    assert (body["name"], body["connected"], body["url"], body["hasToken"]) == ("notes", True, notes_url, True)
    assert TOKEN not in stored.get_data(as_text=True)
    [doc] = rt.store.query(Query("users/alice/mcpServers"))
    assert TOKEN not in json.dumps(doc.data) and "team=a" not in json.dumps(doc.data)

    assert client.get("/api/integrations/mcp", headers=ALICE).get_json()["servers"][0]["name"] == "notes"
    assert client.get("/api/integrations/mcp", headers=BOB).get_json() == {"ok": True, "servers": [], "deployment": [],
                                                                                 "nextCursor": None}
    assert client.get("/api/integrations/mcp/notes", headers=BOB).get_json() == {
        "ok": True, "name": "notes", "connected": False}
    tools = client.get("/api/integrations/mcp/notes/tools", headers=ALICE).get_json()
    assert tools["available"] is True
    assert [(t["name"], t["tool"], t["sideEffect"], t["idempotent"]) for t in tools["tools"]] == [
        ("notes_add_note", "add_note", True, True), ("notes_list_notes", "list_notes", False, False)]
    assert client.get("/api/integrations/mcp/notes/tools", headers=BOB).get_json() == {
        "ok": True, "name": "notes", "connected": False, "available": False, "tools": []}

    # Alice's run has the tool and calls it (autonomous: the idempotent side effect runs at once).
    rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
    chat.turns = [calls_turn(call("notes_add_note", {"text": "tea"})), text_turn("Noted.")]
    done, _ = start_and_drive(rt, "note tea", uid="alice")
    assert done.status == "completed"
    assert "notes_add_note" in {d.name for d in chat.requests[0].tools}
    told = [p.function_response.response for t in chat.requests[-1].turns for p in t.parts
            if p.function_response is not None]
    assert told[0]["structured"]["notes"] == ["tea"]
    # Bob's run is never offered it, and calling it anyway is an unknown tool.
    chat.requests.clear()
    chat.turns = [calls_turn(call("notes_add_note", {"text": "coffee"})), text_turn("ok")]
    bobs, _ = start_and_drive(rt, "note coffee", uid="bob")
    assert "notes_add_note" not in {d.name for d in chat.requests[0].tools}
    assert not [a for a in rt.runs.list_actions(bobs.run_id) if a.tool == "notes_add_note" and a.status == "completed"]
    assert TOKEN not in caplog.text

    removed = client.delete("/api/integrations/mcp/notes", headers=ALICE).get_json()
    assert removed == {"ok": True, "name": "notes", "connected": False, "removed": True}
    assert client.delete("/api/integrations/mcp/notes", headers=ALICE).get_json()["removed"] is False
    chat.requests.clear()
    start_and_drive(rt, "hi", uid="alice")
    assert "notes_add_note" not in {d.name for d in chat.requests[0].tools}


@pytest.mark.parametrize(("path", "body", "code"), [
    ("/api/integrations/mcp/bad.name", {"url": "http://127.0.0.1:9/mcp"}, "INVALID_MCP_SERVER_NAME"),
    ("/api/integrations/mcp/" + "x" * 41, {"url": "http://127.0.0.1:9/mcp"}, "INVALID_MCP_SERVER_NAME"),
    ("/api/integrations/mcp/ok", {"url": "ftp://127.0.0.1/mcp"}, "INVALID_REQUEST"),
    ("/api/integrations/mcp/ok", {"url": "http://user:pw@127.0.0.1/mcp"}, "INVALID_REQUEST"),
    ("/api/integrations/mcp/ok", {"url": "http://127.0.0.1/a b"}, "INVALID_REQUEST"),
    ("/api/integrations/mcp/ok", {"url": "http://"}, "INVALID_REQUEST"),
    ("/api/integrations/mcp/ok", {"url": "http://h", "accessToken": "two words"}, "INVALID_REQUEST"),
    ("/api/integrations/mcp/ok", {"url": "http://h", "command": ["sh"]}, "INVALID_REQUEST"),
    ("/api/integrations/mcp/ok", {}, "INVALID_REQUEST"),
])
def test_bad_input_is_a_clear_400(client: FlaskClient, path: str, body: dict[str, Any], code: str) -> None:
    resp = client.post(path, json=body, headers=ALICE)
    assert resp.status_code == 400, resp.get_json()
    assert resp.get_json()["error"]["code"] == code
    assert client.get("/api/integrations/mcp", headers=ALICE).get_json()["servers"] == []


def test_the_collection_answers_get_only_and_bad_names_are_400(client: FlaskClient) -> None:
    resp = client.post("/api/integrations/mcp", json={"accessToken": "x"}, headers=ALICE)
    assert resp.status_code == 405 and resp.headers["Allow"] == "GET"
    assert client.get("/api/integrations/mcp/a%20b", headers=ALICE).status_code == 400
    assert client.delete("/api/integrations/mcp/a.b", headers=ALICE).status_code == 400
    assert client.get("/api/integrations/mcp/a.b/tools", headers=ALICE).status_code == 400


def test_without_an_encryption_key_nothing_is_stored(sqlite_docstore: DocStore) -> None:
    runtime = Runtime(make_settings(mcp_allow_private_urls=True), store=sqlite_docstore,
                      authenticator=LocalAuthenticator(),
                      dispatcher=RecordingDispatcher())
    set_runtime(runtime)
    try:
        resp = create_app().test_client().post("/api/integrations/mcp/notes", json={"url": "http://127.0.0.1:9/mcp"},
                                               headers=ALICE)
    finally:
        set_runtime(None)
    assert resp.status_code == 503 and resp.get_json()["error"]["code"] == "INTEGRATIONS_NOT_CONFIGURED"


def test_a_server_that_is_down_is_reported_not_failed(client: FlaskClient, rt: Runtime, chat: Chat) -> None:
    assert client.post("/api/integrations/mcp/gone", json={"url": "http://127.0.0.1:9/mcp"},
                       headers=ALICE).status_code == 200
    tools = client.get("/api/integrations/mcp/gone/tools", headers=ALICE).get_json()
    assert tools["available"] is False and tools["tools"] == [] and "gone" in tools["error"]
    done, _ = start_and_drive(rt, "hi", uid="alice")
    assert done.status == "completed"
    instruction = chat.requests[0].system_instruction
    assert "[UNAVAILABLE TOOLS]" in instruction and "gone" in instruction


COLD = """
import sys, json
from shared.runtime import Runtime
from shared.models.scripted import ScriptedModel, text_turn
from shared.state.sqlite_docstore import SqliteDocStore
from shared.durable.dispatcher import RecordingDispatcher
from shared.connectors.user_mcp import McpServerRequest, UserMcpServers
from shared.connectors import create_connectors
from tests.agent.conftest import make_settings
from tests.agent.test_loop import start_and_drive
settings = make_settings(credentials_encryption_key=sys.argv[2], mcp_timeout_s=2.0, mcp_allow_private_urls=True)
store = SqliteDocStore(sys.argv[1])
UserMcpServers(store, create_connectors(settings, store).vault, allow_private=True).put(
    "alice", "gone", McpServerRequest(url="http://127.0.0.1:9/mcp"))
rt = Runtime(settings, store=store, model=ScriptedModel([text_turn("a"), text_turn("b")]),
             dispatcher=RecordingDispatcher())
start_and_drive(rt, "hi", uid="bob")
seen = ["mcp" in sys.modules]
start_and_drive(rt, "hi", uid="alice")
seen.append("mcp" in sys.modules)
print(json.dumps(seen))
"""


def test_only_the_runs_of_a_user_with_a_server_import_the_mcp_sdk(tmp_path: Any) -> None:
    """Cold start: Bob's run (no server of his own, none for the deployment) never loads the SDK,
    although Alice has one; Alice's run does."""
    out = subprocess.run([sys.executable, "-c", COLD, str(tmp_path / "db.sqlite"), KEY], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, True]
