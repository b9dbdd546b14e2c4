"""Issue 11 (seed 003) in the chat loop: context types, agent_state events, the per-turn tool-call
guardrail, the watchdog in the usage ledger, and the stream as Server-Sent Events."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import sseclient
from flask.testing import FlaskClient

from devserver import create_app
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from tests import serving
from tests.e2e.conftest import ALICE, Install


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def test_an_unknown_context_type_is_400_naming_it(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([]))
    resp = client.post("/api/agent/run", json={"prompt": "hi", "contextType": "weather"}, headers=ALICE)
    assert resp.status_code == 400
    assert "contextType" in str(resp.get_json()["error"])


def test_context_guidance_profile_and_ledger_labels(install: Install, client: FlaskClient) -> None:
    model = ScriptedModel([text_turn("All good.")])
    rt = install(model)
    body = client.post("/api/agent/run", json={"prompt": "how healthy is it?", "contextType": "project_audit",
                                               "entityId": "proj_1"}, headers=ALICE).get_json()
    assert body["status"] == "completed"
    instruction = model.requests[0].system_instruction
    assert "[CONTEXT: project_audit]" in instruction and "proj_1" in instruction
    [entry] = rt.usage.for_unit("alice", body["runId"])
    assert (entry.context_type, entry.profile, entry.operation_type) == ("project_audit", "quality", "planner_stream")
    run = client.get(f"/api/agent/runs/{body['runId']}", headers=ALICE).get_json()
    assert run["contextType"] == "project_audit" and run["entityId"] == "proj_1"


def test_agent_state_follows_the_loop(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([calls_turn(call("search_memory", {"query": "x"})),
                           calls_turn(call("save_memory", {"text": "y"}))]))
    resp = client.post("/api/agent/run/stream", json={"prompt": "go", "contextType": "task"}, headers=ALICE)
    events = [json.loads(line) for line in resp.data.decode().splitlines() if line]
    states = [(e["state"], e.get("details")) for e in events if e["type"] == "agent_state"]
    assert states == [("thinking", None), ("executing_tool", "search_memory"), ("thinking", None),
                      ("waiting_on_user", "approval")]
    assert all(e["contextType"] == "task" for e in events if e["type"] == "agent_state")


def test_more_tool_calls_than_the_turn_allows_end_the_run_gracefully(install: Install, client: FlaskClient) -> None:
    def answer(request: ModelRequest) -> Turn:
        n = sum(len(t.function_calls) for t in request.turns)
        return calls_turn(call("search_memory", {"query": f"q{n}"}), call("search_memory", {"query": f"r{n}"}))

    rt = install(FunctionModel(answer), max_tool_calls_per_turn=5, max_loop_steps=10)
    body = client.post("/api/agent/run", json={"prompt": "dig"}, headers=ALICE).get_json()
    assert body["status"] == "failed" and body["error"]["code"] == "TOOL_CALL_LIMIT"
    assert "rephrase" in body["error"]["message"]
    actions = rt.runs.list_actions(body["runId"])
    assert len(actions) == 6 and all(a.status == "completed" for a in actions)  # 3 turns of 2: the 6th reached it
    events = rt.runs.list_events(body["runId"])
    assert events[-1]["type"] == "error" and events[-1]["code"] == "TOOL_CALL_LIMIT"


def test_the_watchdog_timeout_is_recorded_in_the_usage_ledger(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([calls_turn(call("search_memory", {"query": "x"}))]), run_deadline_s=0.0)
    body = client.post("/api/agent/run", json={"prompt": "go"}, headers=ALICE).get_json()
    assert body["error"]["code"] == "DEADLINE_EXCEEDED"
    [entry] = rt.usage.for_unit("alice", body["runId"])
    assert (entry.component, entry.outcome, entry.error_code) == ("watchdog", "error", "DEADLINE_EXCEEDED")


@pytest.fixture
def served(install: Install) -> Iterator[str]:
    install(ScriptedModel([calls_turn(call("search_memory", {"query": "tea"})), text_turn("You like tea.")]))
    with serving.served() as url:
        yield url


def test_the_stream_speaks_server_sent_events_to_a_real_client(served: str) -> None:
    got: list[Any] = []
    req = urllib.request.Request(f"{served}/api/agent/run/stream", method="POST",
                                 data=json.dumps({"prompt": "what do I drink?"}).encode(),
                                 headers={**ALICE, "Accept": "text/event-stream", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        for sse in sseclient.SSEClient(resp).events():  # a real SSE parser (sseclient-py)
            got.append((sse.event, sse.id, json.loads(sse.data)))
    assert got[0][0] == "status" and got[-1][0] == "result"
    assert all(event == data["type"] and ident == str(data["seq"]) for event, ident, data in got)
    assert [int(i) for _, i, _ in got] == list(range(1, len(got) + 1))
    assert got[-1][2]["result"]["summary"] == "You like tea."
    plain = urllib.request.Request(f"{served}/api/agent/run/stream", method="POST",
                                   data=json.dumps({"prompt": "again"}).encode(),
                                   headers={**ALICE, "Content-Type": "application/json"})
    with urllib.request.urlopen(plain, timeout=30) as resp:  # NDJSON stays the default
        assert resp.headers["Content-Type"].startswith("application/x-ndjson")


def _project(rt: Any, uid: str, key: str) -> str:
    from shared.projects.service import ProjectsService
    from shared.state.project_records import TemplateTask
    from shared.state.projects_repo import ProjectsRepo

    service = ProjectsService(ProjectsRepo(rt.store))
    template = service.create_template(uid, key=f"t-{key}", name="Basic", description="",
                                       tasks=[TemplateTask(title="Kick-off")])
    project, _, _ = service.create_project_from_template(uid, key=key, template_id=template.template_id,
                                                         name=f"Project {key}", description=None)
    return project.project_id


def test_an_entity_of_another_user_is_404(install: Install, client: FlaskClient) -> None:
    rt = install(ScriptedModel([]))
    bobs = _project(rt, "bob", "b1")
    resp = client.post("/api/agent/run", json={"prompt": "status?", "contextType": "project", "entityId": bobs},
                       headers=ALICE)
    assert resp.status_code == 404 and resp.get_json()["error"]["code"] == "ENTITY_NOT_FOUND"


def test_a_call_outside_the_entity_in_scope_needs_confirmation(install: Install, client: FlaskClient) -> None:
    from shared.state.records import UserRecord

    model = ScriptedModel([])
    rt = install(model)
    rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))  # would act without approval
    mine, other = _project(rt, "alice", "a1"), _project(rt, "alice", "a2")
    model._script.extend([calls_turn(call("project_task_create", {"projectId": mine, "title": "Inside"})),
                          calls_turn(call("project_task_create", {"projectId": other, "title": "Outside"}))])
    body = client.post("/api/agent/run", json={"prompt": "add tasks", "contextType": "project", "entityId": mine},
                       headers=ALICE).get_json()
    assert body["status"] == "awaiting_confirmation"
    assert body["tool"] == "project_task_create" and body["toolArgs"]["projectId"] == other
    assert "outside the entity in scope" in body["approval"]["reason"]
    actions = rt.runs.list_actions(body["runId"])
    assert [(a.args["projectId"], a.status) for a in actions] == [(mine, "completed"), (other, "awaiting_confirmation")]
