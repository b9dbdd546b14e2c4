"""Issue 21 through the real google-genai SDK against the fake Gemini server and ``make dev``'s app:
an MCP server's tools are declared to Gemini (names ``{server}_{tool}``, schemas cleaned for it),
a read-only call is answered inside a chat run, and a side-effecting call pauses for approval and
runs exactly once after it (counted by the MCP server itself)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.config import McpServer
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.gemini import GeminiModel
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.fakes.fake_gemini import FakeGemini, Received, Reply, call, text

ALICE = {"Authorization": "Bearer dev:alice"}
SERVERS = Path(__file__).resolve().parents[1] / "agent" / "mcp_servers"
TIME = McpServer(name="time", command=(sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"))


def _declared(r: Received) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for tool in r.body.get("tools", []) for d in tool.get("functionDeclarations", [])}


def _runtime(fake: FakeGemini, store: DocStore, *servers: McpServer) -> Runtime:
    settings = fake.settings(make_settings(mcp_servers=servers, mcp_timeout_s=20.0))
    rt = Runtime(settings, store=store, model=GeminiModel(settings), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    set_runtime(rt)
    return rt


def test_a_read_only_mcp_call_answered_in_a_chat_run_through_the_sdk(fake_gemini: FakeGemini,
                                                                      sqlite_docstore: DocStore) -> None:
    seen: list[Received] = []

    def brain(r: Received) -> Reply:
        seen.append(r)
        done = r.function_response("time_get_current_time")
        if done is None:
            return Reply([call("time_get_current_time", {"timezone": "UTC"})])
        return Reply([text(f"It is {json.dumps(done)[:60]}")])

    fake_gemini.handler = brain
    _runtime(fake_gemini, sqlite_docstore, TIME)
    try:
        body = create_app().test_client().post("/api/agent/run", json={"prompt": "what time is it in UTC?"},
                                               headers=ALICE).get_json()
    finally:
        set_runtime(None)
    assert body["status"] == "completed" and body["mode"] == "tool_executed", body
    assert body["tool"] == "time_get_current_time" and "UTC" in body["summary"]
    decl = _declared(seen[0])["time_get_current_time"]
    assert decl["description"].startswith("[MCP server time]")
    schema = json.dumps(decl.get("parameters") or decl.get("parametersJsonSchema"))
    assert "timezone" in schema and "$schema" not in schema and "additionalProperties" not in schema
    assert all(r.rejected is None for r in fake_gemini.requests)  # the SDK's requests were well-formed


def test_a_side_effecting_mcp_call_waits_for_approval_and_runs_once(fake_gemini: FakeGemini,
                                                                    sqlite_docstore: DocStore,
                                                                    tmp_path: Path) -> None:
    ledger_file = tmp_path / "ledger.jsonl"
    ledger = McpServer(name="ledger", command=(sys.executable, str(SERVERS / "ledger_server.py"), str(ledger_file)))

    def brain(r: Received) -> Reply:
        if r.function_response("ledger_append_note") is None:
            return Reply([call("ledger_append_note", {"to": "bob", "body": "lunch at noon"})])
        return Reply([text("Noted for Bob.")])

    fake_gemini.handler = brain
    rt = _runtime(fake_gemini, sqlite_docstore, ledger)
    try:
        client = create_app().test_client()
        body = client.post("/api/agent/run", json={"prompt": "note lunch for bob"}, headers=ALICE).get_json()
        assert body["status"] == "awaiting_confirmation" and body["approval"]["tool"] == "ledger_append_note"
        assert "ledger" in body["approval"]["preview"] and "lunch at noon" in body["approval"]["preview"]
        assert not ledger_file.exists()  # nothing ran before the decision
        assert client.post("/api/agent/approve", json={"approvalId": body["approval"]["approvalId"],
                                                       "decision": "approve"}, headers=ALICE).status_code == 202
        dispatcher = rt.dispatcher
        assert isinstance(dispatcher, RecordingDispatcher)
        messages = dispatcher.take()
        for m in [*messages, *messages]:  # the resume, delivered twice (Pub/Sub may redeliver)
            rt.router.handle(m)
        done = client.get(f"/api/agent/runs/{body['runId']}", headers=ALICE).get_json()
    finally:
        set_runtime(None)
    assert done["status"] == "completed" and done["result"]["summary"] == "Noted for Bob."
    calls = [json.loads(line) for line in ledger_file.read_text().splitlines() if line]
    assert calls == [{"tool": "append_note", "args": {"to": "bob", "body": "lunch at noon"}, "effect": True}]
