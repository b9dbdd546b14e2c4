"""Issue 11: ``agent_create_plan`` in the chat loop, each execution mode, on the kernel."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from bench.plan_model import Script
from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.plans.test_sessions_http import ALICE, deliver

Chat = list[Turn | Callable[[ModelRequest], Turn]]


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def runtime(store: DocStore, chat: Chat, script: Script | None = None, reviews: list[Any] | None = None,
            **overrides: Any) -> Runtime:
    script = script or Script()
    reviews = reviews if reviews is not None else []

    def answer(request: ModelRequest) -> Turn:
        if "You review an execution plan" in request.system_instruction:
            item = reviews.pop(0)
            return text_turn(item if isinstance(item, str) else json.dumps(item))
        if "[CONTEXT:" in request.system_instruction:
            item = chat.pop(0)
            return item(request) if callable(item) else item
        return script.answer(request)

    rt = Runtime(make_settings(**overrides), store=store, model=FunctionModel(answer, name="gemini-3-flash-preview"),
                 authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    set_runtime(rt)
    return rt


@pytest.fixture(autouse=True)
def _forget_runtime() -> Any:
    yield
    set_runtime(None)


def tool_answer(request: ModelRequest, name: str) -> dict[str, Any]:
    for turn in reversed(request.turns):
        for p in turn.parts:
            if p.function_response is not None and p.function_response.name == name:
                return p.function_response.response
    raise AssertionError(f"no answer of {name}")


def run(client: FlaskClient, prompt: str, **body: Any) -> dict[str, Any]:
    resp = client.post("/api/agent/run", json={"prompt": prompt, **body}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()  # type: ignore[no-any-return]


def finished(rt: Runtime, run_id: str) -> dict[str, Any]:
    deliver(rt)
    snap = rt.runs.get_run(run_id)
    assert snap is not None and snap.run.result is not None
    return snap.run.result.to_doc()


def test_auto_execute_runs_the_plan_and_the_model_continues(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    seen: dict[str, Any] = {}

    def after(request: ModelRequest) -> Turn:
        seen.update(tool_answer(request, "agent_create_plan"))
        return text_turn("The plan is done.")

    rt = runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"objective": "Summarise my notes"})), after],
                 Script(acts={"Read the notes": [("search_memory", {"query": "notes"})]}))
    body = run(client, "summarise my notes, step by step")
    # Issue 18: nobody is asked anything: the run is executing its plan, not awaiting a confirmation.
    assert body["status"] == "executing" and body["mode"] == "executing_plan" and "Executing a plan" in body["summary"]
    assert body["follow"] == f"/api/agent/runs/{body['runId']}/events?follow=1&until=end" and "approval" not in body
    [listed] = client.get("/api/agent/runs", headers=ALICE).get_json()["runs"][-1:]
    assert (listed["runId"], listed["status"], listed["mode"]) == (body["runId"], "executing", "executing_plan")
    one = client.get(f"/api/agent/runs/{body['runId']}", headers=ALICE).get_json()
    assert one["status"] == "executing"
    done = finished(rt, body["runId"])
    assert done["status"] == "completed" and done["summary"] == "The plan is done."
    assert seen["status"] == "completed" and seen["planId"].startswith("ses_act_") and len(seen["insights"]) == 3
    types = [e["type"] for e in rt.runs.list_events(body["runId"])]
    assert "plan_created" in types and types.count("step_start") == 3 and types.count("step_complete") == 3
    states = [e["state"] for e in rt.runs.list_events(body["runId"]) if e["type"] == "agent_state"]
    assert "executing_plan" in states
    ops = {e.operation_type for e in rt.usage.between("alice", 0, 1e12)}
    assert {"planner_stream", "plan_generation", "executor"} <= ops
    view = client.get(f"/api/agent/sessions/{seen['planId']}", headers=ALICE).get_json()
    assert view["status"] == "completed"


def test_draft_then_run_it_on_the_next_turn_and_never_twice(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    plan: dict[str, Any] = {}

    def explain(request: ModelRequest) -> Turn:
        plan.update(tool_answer(request, "agent_create_plan"))
        return text_turn("Here is the plan; shall I run it?")

    rt = runtime(sqlite_docstore, [
        calls_turn(call("agent_create_plan", {"objective": "Tidy the notes", "execution_mode": "draft_only"})),
        explain,
        lambda r: calls_turn(call("agent_execute_plan", {"planId": plan["planId"]})),
        text_turn("Ran it."),
        lambda r: calls_turn(call("agent_execute_plan", {"planId": plan["planId"]})),
        lambda r: text_turn("Cannot: " + tool_answer(r, "agent_execute_plan")["error"]),
    ])
    first = run(client, "tidy my notes", threadId="t1")
    assert first["status"] == "completed" and plan["status"] == "pending_review" and len(plan["tasks"]) == 3
    events = [e["type"] for e in rt.runs.list_events(first["runId"])]
    assert "plan_ready_for_review" in events
    session = client.get(f"/api/agent/sessions/{plan['planId']}", headers=ALICE).get_json()
    assert session["status"] == "awaiting_confirmation"
    second = run(client, "looks good, run it", threadId="t1")
    assert finished(rt, second["runId"])["summary"] == "Ran it."
    assert client.get(f"/api/agent/sessions/{plan['planId']}", headers=ALICE).get_json()["status"] == "completed"
    third = run(client, "run it again", threadId="t1")
    assert third["status"] == "completed" and "already executed" in third["summary"]


def test_legacy_auto_execute_false_is_a_draft(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    got: dict[str, Any] = {}

    def explain(request: ModelRequest) -> Turn:
        got.update(tool_answer(request, "agent_create_plan"))
        return text_turn("drafted")

    runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"objective": "x", "auto_execute": False})),
                              explain])
    run(client, "plan it")
    assert got["status"] == "pending_review"


def test_review_rejected_then_revised_plan_approved_and_executed(sqlite_docstore: DocStore,
                                                                client: FlaskClient) -> None:
    answers: list[dict[str, Any]] = []

    def revise(request: ModelRequest) -> Turn:
        answers.append(tool_answer(request, "agent_create_plan"))
        return calls_turn(call("agent_create_plan", {"objective": "Summarise notes, carefully",
                                                     "execution_mode": "agent_review"}))

    def end(request: ModelRequest) -> Turn:
        answers.append(tool_answer(request, "agent_create_plan"))
        return text_turn("done after review")

    rt = runtime(sqlite_docstore, [
        calls_turn(call("agent_create_plan", {"objective": "Summarise notes", "execution_mode": "agent_review"})),
        revise, end], reviews=[{"verdict": "rejected", "notes": "too vague"}, {"verdict": "approved", "notes": "ok"}])
    body = run(client, "summarise, but have it reviewed")
    done = finished(rt, body["runId"])
    assert done["summary"] == "done after review"
    assert answers[0]["status"] == "rejected" and answers[0]["notes"] == "too vague"
    assert answers[1]["status"] == "completed"
    reviews = [e for e in rt.runs.list_events(body["runId"]) if e["type"] == "plan_review"]
    assert [r["verdict"] for r in reviews] == ["rejected", "approved"]
    assert sum(1 for e in rt.usage.between("alice", 0, 1e12) if e.operation_type == "plan_review") == 2
    assert all(e.profile == "quality" for e in rt.usage.between("alice", 0, 1e12) if e.operation_type == "plan_review")


def test_a_review_that_does_not_validate_is_needs_changes(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    got: dict[str, Any] = {}

    def end(request: ModelRequest) -> Turn:
        got.update(tool_answer(request, "agent_create_plan"))
        return text_turn("ok")

    first = calls_turn(call("agent_create_plan", {"objective": "x", "execution_mode": "agent_review"}))
    runtime(sqlite_docstore, [first, end], reviews=["nonsense", '{"verdict": "maybe"}'])
    run(client, "plan and review")
    assert got["status"] == "needs_changes" and "did not validate" in got["notes"]


def test_a_plan_step_that_needs_approval_pauses_and_resumes(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    rt = runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"objective": "Save the summary"})),
                                   text_turn("Saved it.")],
                 Script(acts={"Write the summary": [("save_memory", {"text": "summary"})]}))
    body = run(client, "save a summary")
    deliver(rt)
    plan_id = f"ses_{rt.runs.list_actions(body['runId'])[0].action_id}"
    [pending] = client.get(f"/api/agent/sessions/{plan_id}", headers=ALICE).get_json()["pendingApprovals"]
    assert client.post("/api/agent/approve", json={"approvalId": pending["approvalId"], "decision": "approve"},
                       headers=ALICE).status_code == 202
    assert finished(rt, body["runId"])["summary"] == "Saved it."
    assert [m.text for m in rt.users.list_memories("alice")] == ["summary"]


def test_a_plan_spanning_many_invocations(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    acts = {t: [("search_memory", {"query": t})] for t in ("Read the notes", "Write the summary", "Publish it")}
    rt = runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"objective": "go"})), text_turn("done")],
                 Script(acts=acts), plan_steps_per_invocation=1)
    body = run(client, "go")
    assert deliver(rt) >= 3  # invocations
    snap = rt.runs.get_run(body["runId"])
    assert snap is not None and snap.run.status == "completed"


def test_project_create_plans_follow_the_ordering_rule(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    ordered = [{"id": None, "title": "Search templates"}, {"id": None, "title": "Create the project from the template"},
               {"id": None, "title": "Publish the context document"}]
    script = Script(tasks=["Create the project", "Think"], refine=lambda p: {"tasks": ordered, "summary": "ordered"})
    got: dict[str, Any] = {}

    def end(request: ModelRequest) -> Turn:
        got.update(tool_answer(request, "agent_create_plan"))
        return text_turn("ok")

    runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"objective": "new project",
                                                                    "execution_mode": "draft_only"})), end], script)
    run(client, "create a project", contextType="project_create")
    assert [t["title"] for t in got["tasks"]] == [t["title"] for t in ordered]  # repaired once


def test_project_create_plans_that_stay_unordered_are_refused(sqlite_docstore: DocStore,
                                                             client: FlaskClient) -> None:
    script = Script(tasks=["Create the project"], refine=lambda p: {"tasks": p["currentPlan"], "summary": "same"})
    got: dict[str, Any] = {}

    def end(request: ModelRequest) -> Turn:
        got.update(tool_answer(request, "agent_create_plan"))
        return text_turn("sorry")

    runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"objective": "new project"})), end], script)
    run(client, "create a project", contextType="project_create")
    assert "in that order" in got["error"]


def test_malformed_plan_arguments_are_told_once_then_fail(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    told: dict[str, Any] = {}

    def again(request: ModelRequest) -> Turn:
        told.update(tool_answer(request, "agent_create_plan"))
        return calls_turn(call("agent_create_plan", {"objective": ""}))

    runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"goal": "x"})), again])
    body = run(client, "plan")
    assert "objective" in told["error"]
    assert body["status"] == "failed" and body["error"]["code"] == "INVALID_TOOL_ARGS"


def test_the_thread_records_its_mode_and_execution_modes(sqlite_docstore: DocStore, client: FlaskClient) -> None:
    rt = runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"objective": "x",
                                                                         "execution_mode": "draft_only"})),
                                   text_turn("drafted")])
    run(client, "plan it", threadId="t9", contextType="project")
    thread = rt.runs.get_thread("alice", "t9")
    assert thread is not None and thread.mode == "project" and thread.last_execution_modes == ["draft_only"]


def test_the_meta_tools_are_declared_by_their_arguments_models() -> None:
    """Seed 003 §4.3's parameters, derived from the model that also validates the call."""
    from shared.agent.plan_tool import PlanTools
    from shared.tools.registry import ToolArgsError

    tools = PlanTools(sessions=None)  # type: ignore[arg-type]  # declaring needs no store
    create = tools.create.declaration()
    assert create.name == "agent_create_plan" and create.description.startswith("Generate an execution plan")
    props = create.parameters["properties"]
    assert list(props) == ["objective", "execution_mode", "auto_execute", "requested_outputs", "priority_entities"]
    assert create.parameters["required"] == ["objective"]
    assert props["execution_mode"]["anyOf"][0]["enum"] == ["auto_execute", "draft_only", "agent_review"]
    assert props["objective"]["description"] == "What you want to accomplish end-to-end."
    assert "description" not in create.parameters  # the docstring is the tool's description, said once
    assert tools.create.host and tools.execute.host and not tools.create.side_effect
    with pytest.raises(ToolArgsError) as bad:
        tools.create.validate({"objective": "x", "execution_mode": "sometimes"})
    assert "execution_mode" in str(bad.value)
    assert tools.execute.declaration().parameters["required"] == ["planId"]
    assert tools.create.declaration() is create  # built once: hosts offer it at every step


def _follow_in_thread(url: str) -> tuple[threading.Thread, list[dict[str, Any]]]:
    got: list[dict[str, Any]] = []

    def read() -> None:
        resp = create_app().test_client().get(url, headers=ALICE)
        assert resp.status_code == 200
        got.extend(json.loads(line) for line in resp.data.decode().splitlines() if line)

    reader = threading.Thread(target=read)
    reader.start()
    return reader, got


def test_a_follower_reads_through_the_plan_to_the_answer(sqlite_docstore: DocStore) -> None:
    """The run's ``follow`` route is followed while the plan runs elsewhere (here: the messages
    delivered after the follower started): it ends with the model's answer, not at the wait."""
    rt = runtime(sqlite_docstore, [calls_turn(call("agent_create_plan", {"objective": "Summarise my notes"})),
                                   text_turn("The plan is done.")],
                 Script(acts={"Read the notes": [("search_memory", {"query": "notes"})]}))
    body = run(create_app().test_client(), "summarise my notes")
    reader, got = _follow_in_thread(body["follow"] + "&after=0")
    time.sleep(0.5)  # the follower has read the log up to the wait and polls
    deliver(rt)
    reader.join(timeout=30)
    assert not reader.is_alive()
    types = [e["type"] for e in got]
    assert types.index("plan_created") < types.index("step_start") < types.index("step_complete")
    assert got[-1]["type"] == "result" and got[-1]["result"]["status"] == "completed"
    assert [e["seq"] for e in got] == list(range(1, len(got) + 1))


def test_until_end_follows_a_chat_run_through_a_decision_made_elsewhere(sqlite_docstore: DocStore) -> None:
    """``follow=1`` alone ends at a pause for a decision (documented); ``until=end`` reads on after
    the decision is made by another client, to the run's end."""
    rt = runtime(sqlite_docstore, [calls_turn(call("save_memory", {"text": "tea"})), text_turn("Saved.")])
    client = create_app().test_client()
    body = run(client, "remember tea")
    assert body["status"] == "awaiting_confirmation" and body["mode"] == "requires_approval"
    url = f"/api/agent/runs/{body['runId']}/events?after=0&follow=1"
    stopped = [json.loads(line) for line in client.get(url, headers=ALICE).data.decode().splitlines() if line]
    assert stopped[-1]["type"] == "result" and stopped[-1]["result"]["status"] == "awaiting_confirmation"
    reader, got = _follow_in_thread(url + "&until=end")
    time.sleep(0.5)
    approval = body["approval"]["approvalId"]
    assert client.post("/api/agent/approve", json={"approvalId": approval, "decision": "approve"},
                       headers=ALICE).status_code == 202
    deliver(rt)
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert got[-1]["type"] == "result" and got[-1]["result"]["status"] == "completed"
    assert client.get(url + "&until=later", headers=ALICE).status_code == 400
