"""``POST /api/agent/agui`` (issue 34): five scenarios (chat, tool, approval interrupt, resume, plan)
recorded from the dev app and checked by the official ``ag-ui-validate`` CLI (0 errors, 0
warnings); approve with edits through a resume payload; a reconnect with ``Last-Event-ID``; bad
input answered as JSON. The live endpoint is validated in ``test_agui_live.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import InlineDispatcher
from shared.models.base import Model
from shared.models.gemini import GeminiModel
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.e2e.sse_frames import parse_sse
from tests.fakes.fake_gemini import FakeGemini
from tests.integration.test_plan_live_stream import Brain

ALICE = {"Authorization": "Bearer dev:alice", "Accept": "text/event-stream"}
VALIDATE = Path(sys.executable).with_name("ag-ui-validate")


def agui_input(run_id: str, text: str | None = None, **extra: Any) -> dict[str, Any]:
    messages = [] if text is None else [{"id": f"m-{run_id}", "role": "user", "content": text}]
    return {"threadId": "thread-1", "runId": run_id, "messages": messages, "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, **extra}


def validate(path: Path) -> dict[str, Any]:
    """``ag-ui-validate <recording> --json``: its report (0 errors and 0 warnings asserted by callers)."""
    assert VALIDATE.exists(), f"{VALIDATE} is missing: requirements-dev.txt pins ag-ui-validate"
    done = subprocess.run([str(VALIDATE), str(path), "--json", "--max-warnings", "0"], capture_output=True, text=True,
                          timeout=120, check=False)
    report = json.loads(done.stdout)
    assert done.returncode == 0, json.dumps(report, indent=1)[:4000]
    return report  # type: ignore[no-any-return]


def clean(report: dict[str, Any]) -> tuple[int, int]:
    return report["summary"]["errors"], report["summary"]["warnings"]


class App:
    def __init__(self, model: Model, store: DocStore, **settings: Any) -> None:
        self.rt = Runtime(make_settings(dispatcher="inline", **settings), store=store, model=model,
                          authenticator=LocalAuthenticator())
        set_runtime(self.rt)
        self.client = create_app().test_client()

    def post(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[str, list[dict[str, Any]]]:
        resp = self.client.post("/api/agent/agui", json=body, headers={**ALICE, **(headers or {})})
        assert resp.status_code == 200 and resp.mimetype == "text/event-stream", resp.get_data(as_text=True)
        raw = resp.get_data(as_text=True)
        return raw, [f.json for f in parse_sse(raw)[0]]

    def close(self) -> None:
        set_runtime(None)
        dispatcher = self.rt.dispatcher
        assert isinstance(dispatcher, InlineDispatcher)
        dispatcher.close()


@pytest.fixture
def app(sqlite_docstore: DocStore) -> Iterator[Any]:
    made: list[App] = []

    def make(model: Model, **settings: Any) -> App:
        made.append(App(model, sqlite_docstore, **settings))
        return made[-1]

    yield make
    for a in made:
        a.close()


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_five_recorded_scenarios_validate_clean(app: Any, fake_gemini: FakeGemini, sqlite_docstore: DocStore,
                                                tmp_path: Path) -> None:
    a = app(ScriptedModel([text_turn("Hello there.", thought="A greeting."),
                           calls_turn(call("search_memory", {"query": "tea"})), text_turn("Nothing about tea."),
                           calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved.")]))
    recorded: dict[str, str] = {}
    recorded["chat"], chat = a.post(agui_input("run-chat", "hi"))
    assert types(chat) == ["RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
                           "REASONING_MESSAGE_END", "REASONING_END", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                           "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert chat[-1]["outcome"] == {"type": "success"} and chat[-1]["usage"][0]["totalTokens"] > 0
    recorded["tool"], tool = a.post(agui_input("run-tool", "what do you know about tea?"))
    assert types(tool)[1:5] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert json.loads(tool[2]["delta"]) == {"query": "tea"} and tool[4]["toolCallId"] == tool[1]["toolCallId"]
    recorded["interrupt"], interrupt = a.post(agui_input("run-approval", "remember that I like tea"))
    finished = interrupt[-1]
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt"
    [pending] = finished["outcome"]["interrupts"]
    approval = a.rt.runs.get_approval("alice", pending["id"])
    assert approval is not None and pending["toolCallId"] == approval[0].action_id
    assert pending["expiresAt"].endswith("Z") and "arguments" in pending["responseSchema"]["properties"]
    recorded["resume"], resumed = a.post(agui_input("run-resume", resume=[{"interruptId": pending["id"],
                                                                           "status": "resolved"}]))
    assert types(resumed)[0] == "RUN_STARTED" and resumed[-1]["outcome"] == {"type": "success"}
    assert "TOOL_CALL_RESULT" in types(resumed) and "TEXT_MESSAGE_CONTENT" in types(resumed)
    assert [m.text for m in a.rt.users.list_memories("alice")] == ["Alice likes tea"]
    # the plan: a chat turn whose agent_create_plan runs its plan live (the real SDK, the fake model)
    brain = Brain()
    brain.gate.set()
    fake_gemini.handler = brain
    settings = fake_gemini.settings(make_settings(dispatcher="inline"))
    p = app(GeminiModel(settings), **{k: getattr(settings, k) for k in ("gemini_api_key", "gemini_base_url",
                                                                       "gemini_model", "gemini_use_vertex")})
    recorded["plan"], plan = p.post(agui_input("run-plan", "summarise my notes, step by step"))
    assert types(plan)[-1] == "RUN_FINISHED" and plan[-1]["outcome"] == {"type": "success"}
    snapshots = [e for e in plan if e["type"] == "STATE_SNAPSHOT"]
    deltas = [e for e in plan if e["type"] == "STATE_DELTA"]
    assert len(snapshots) == 1 and {t["title"] for t in snapshots[0]["snapshot"]["plan"]["tasks"]} == {
        "Read the notes", "Keep the summary"}
    assert deltas and all(op["op"] in ("replace", "add", "remove") for d in deltas for op in d["delta"])
    for name, raw in recorded.items():
        path = tmp_path / f"{name}.sse"
        path.write_text(raw)
        assert clean(validate(path)) == (0, 0), name


def test_approve_with_edits_through_a_resume_payload(app: Any, tmp_path: Path) -> None:
    a = app(ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved.")]))
    _, first = a.post(agui_input("run-1", "remember that I like tea"))
    [pending] = first[-1]["outcome"]["interrupts"]
    edited = {"text": "Alice likes green tea"}
    raw, resumed = a.post(agui_input("run-2", resume=[{"interruptId": pending["id"], "status": "resolved",
                                                       "payload": {"arguments": edited}}]))
    assert resumed[-1]["outcome"] == {"type": "success"}
    [args] = [json.loads(e["delta"]) for e in resumed if e["type"] == "TOOL_CALL_ARGS"]
    assert args == edited  # the executed call, with the edits
    assert [m.text for m in a.rt.users.list_memories("alice")] == ["Alice likes green tea"]
    (path := tmp_path / "edited.sse").write_text(raw)
    assert clean(validate(path)) == (0, 0)
    # the same resume again (a client retry) decides nothing again and runs nothing again
    _, again = a.post(agui_input("run-2", resume=[{"interruptId": pending["id"], "status": "resolved",
                                                   "payload": {"arguments": edited}}]))
    assert again == [{**e, "timestamp": again[i]["timestamp"]} for i, e in enumerate(resumed)]
    assert [m.text for m in a.rt.users.list_memories("alice")] == ["Alice likes green tea"]


@pytest.mark.parametrize(("payload", "code", "field"), [
    ({"arguments": {"text": 5}}, "INVALID_ARGUMENTS", "arguments.text"),
    ({"approved": "yes"}, "INVALID_REQUEST", "resume.0.payload.approved"),
    ({"approved": False, "arguments": {"text": "x"}}, "INVALID_REQUEST", "resume.0.payload.arguments"),
    ({"other": 1}, "INVALID_REQUEST", "resume.0.payload.other"),
])
def test_a_bad_resume_is_refused_and_records_nothing(app: Any, payload: dict[str, Any], code: str,
                                                      field: str) -> None:
    a = app(ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved.")]))
    _, first = a.post(agui_input("run-1", "remember that I like tea"))
    [pending] = first[-1]["outcome"]["interrupts"]
    resp = a.client.post("/api/agent/agui", json=agui_input("run-2", resume=[{
        "interruptId": pending["id"], "status": "resolved", "payload": payload}]), headers=ALICE)
    assert resp.status_code == 400 and resp.mimetype == "application/json"
    error = resp.get_json()["error"]
    assert error["code"] == code and field in [e["field"] for e in error["details"]["errors"]]
    assert a.rt.runs.get_approval("alice", pending["id"])[0].status == "pending"  # type: ignore[index]


def test_a_cancelled_interrupt_rejects_the_call(app: Any) -> None:
    a = app(ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Not saved.")]))
    _, first = a.post(agui_input("run-1", "remember that I like tea"))
    [pending] = first[-1]["outcome"]["interrupts"]
    _, resumed = a.post(agui_input("run-2", resume=[{"interruptId": pending["id"], "status": "cancelled"}]))
    assert resumed[-1]["outcome"] == {"type": "success"} and a.rt.users.list_memories("alice") == []
    [result] = [e for e in resumed if e["type"] == "TOOL_CALL_RESULT"]
    assert json.loads(result["content"])["status"] == "rejected"


def test_last_event_id_reads_on_after_the_frame_seen(app: Any) -> None:
    a = app(ScriptedModel([text_turn("Hello there, this is a longer answer.", thought="Think.")]))
    raw, whole = a.post(agui_input("run-1", "hi"))
    frames = parse_sse(raw)[0]
    for cut in range(1, len(frames)):
        _, rest = a.post(agui_input("run-1", "hi"), headers={"Last-Event-ID": str(frames[cut - 1].id)})
        strip = [{k: v for k, v in e.items() if k != "timestamp"} for e in whole]
        assert strip[:cut] + [{k: v for k, v in e.items() if k != "timestamp"} for e in rest] == strip, cut
    bad = a.client.post("/api/agent/agui", json=agui_input("run-1", "hi"), headers={**ALICE, "Last-Event-ID": "x"})
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "INVALID_LAST_EVENT_ID"


@pytest.mark.parametrize(("body", "field"), [
    ({"threadId": "t", "messages": []}, "runId"),
    ({"threadId": "t/x", "runId": "r", "messages": [{"id": "1", "role": "user", "content": "hi"}]}, "threadId"),
    ({"threadId": "t", "runId": "r", "messages": []}, "messages"),
])
def test_bad_input_is_a_json_400_naming_the_field(app: Any, body: dict[str, Any], field: str) -> None:
    a = app(ScriptedModel([]))
    resp = a.client.post("/api/agent/agui", json=body, headers=ALICE)
    assert resp.status_code == 400 and resp.mimetype == "application/json"
    assert field in [e["field"] for e in resp.get_json()["error"]["details"]["errors"]]
    assert a.client.post("/api/agent/agui", json=agui_input("r", "hi")).status_code == 401


def test_frontend_tools_end_the_run_with_pending_calls_and_take_the_clients_result(app: Any, tmp_path: Path) -> None:
    model = ScriptedModel([calls_turn(call("pick_color", {"hint": "the sky"})), text_turn("You picked blue.")])
    a = app(model)
    tools = [{"name": "pick_color", "description": "Ask the user to pick a color",
              "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}}}]
    raw1, first = a.post(agui_input("run-1", "let me pick a color", tools=tools))
    assert [d.name for d in model.requests[0].tools if d.name == "pick_color"] == ["pick_color"]  # offered
    [start] = [e for e in first if e["type"] == "TOOL_CALL_START"]
    assert start["toolCallName"] == "pick_color"
    assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [start["toolCallId"]]}
    messages = [{"id": "m-run-1", "role": "user", "content": "let me pick a color"},
                {"id": "a-1", "role": "assistant", "toolCalls": [{"id": start["toolCallId"], "type": "function",
                                                                  "function": {"name": "pick_color",
                                                                               "arguments": '{"hint": "the sky"}'}}]},
                {"id": "t-1", "role": "tool", "toolCallId": start["toolCallId"], "content": '{"color": "blue"}'}]
    raw2, second = a.post({**agui_input("run-2", tools=tools), "messages": messages})
    assert second[-1]["outcome"] == {"type": "success"}
    assert "TOOL_CALL_START" not in types(second)  # the client's own call is not news to it
    assert "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT") == "You picked blue."
    answer = model.requests[-1].turns[-1].parts[0].function_response
    assert answer is not None and answer.name == "pick_color" and answer.response == {"color": "blue"}
    for name, raw in (("frontend-tool", raw1), ("frontend-result", raw2)):
        (path := tmp_path / f"{name}.sse").write_text(raw)
        assert clean(validate(path)) == (0, 0), name
    # a tool result for a call nobody waits for is a 400
    resp = a.client.post("/api/agent/agui", json={**agui_input("run-3", tools=tools), "messages": messages},
                         headers=ALICE)
    assert resp.status_code == 400 and resp.get_json()["error"]["details"]["errors"][0]["field"] == "messages"
