"""``agent_create_plan`` through the real google-genai SDK against the fake Gemini server (issue 11
acceptance): the chat turn's function call (with its thought signature), the plan's structured
outputs, the executor and the reflections all go over HTTP; each mode's events are validated
against the OpenAPI document."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.gemini import GeminiModel
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.fakes.fake_gemini import FakeGemini, Received, Reply, call, text, thought
from tests.messages import deliver

ALICE = {"Authorization": "Bearer dev:alice"}


def brain(mode: str, chat_answers: list[dict[str, Any]]) -> Any:
    def handle(r: Received) -> Reply:
        si = r.system_instruction
        prompt = r.body["contents"][0]["parts"][0].get("text", "")
        if "[CONTEXT:" in si:
            done = r.function_response("agent_create_plan")
            if done is None:
                return Reply([thought("A multi-step request: plan it."),
                              call("agent_create_plan", {"objective": "Summarise my notes",
                                                         "execution_mode": mode})])
            chat_answers.append(done)
            return Reply.text(f"Plan status: {done['status']}.")
        if "You review an execution plan" in si:
            return Reply([text(json.dumps({"verdict": "approved", "notes": "clear and safe"}))])
        if "planning module" in si:
            return Reply([text(json.dumps({"tasks": [{"title": "Read the notes", "description": "all"},
                                                     {"title": "Write the summary", "description": "short"}],
                                           "summary": "two steps"}))])
        if "reflection module" in si:
            act = json.loads(prompt)["lastAct"]
            return Reply([text(json.dumps({"taskComplete": act["action"]["tool"] == "task_done",
                                           "taskFailed": False, "summary": "ok"}))])
        return Reply.text("Finished the task.")  # the executor: nothing to call, the task is done

    return handle


@pytest.mark.parametrize("mode", ["auto_execute", "draft_only", "agent_review"])
def test_plan_modes_through_the_real_sdk(fake_gemini: FakeGemini, sqlite_docstore: DocStore, mode: str) -> None:
    answers: list[dict[str, Any]] = []
    fake_gemini.handler = brain(mode, answers)
    settings = fake_gemini.settings(make_settings())
    rt = Runtime(settings, store=sqlite_docstore, model=GeminiModel(settings), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    set_runtime(rt)
    try:
        client = create_app().test_client()
        doc = client.get("/openapi.json").get_json()
        body = client.post("/api/agent/run", json={"prompt": "summarise my notes step by step"},
                           headers=ALICE).get_json()
        deliver(rt)
        snap = rt.runs.get_run(body["runId"])
        assert snap is not None and snap.run.status == "completed"
        events = rt.runs.list_events(body["runId"])
    finally:
        set_runtime(None)
    validator = jsonschema.Draft202012Validator({"$ref": "#/components/schemas/RunEvent",
                                                 "components": doc["components"]})
    for ev in events:
        validator.validate(ev)
    types = [e["type"] for e in events]
    assert "plan_created" in types
    [answer] = answers
    if mode in ("auto_execute", "agent_review"):
        assert answer["status"] == "completed" and types.count("step_complete") == 2
        if mode == "agent_review":
            [review] = [e for e in events if e["type"] == "plan_review"]
            assert review["verdict"] == "approved" and review["notes"] == "clear and safe"
        assert "executing_plan" in [e["state"] for e in events if e["type"] == "agent_state"]
    else:
        assert answer["status"] == "pending_review" and "plan_ready_for_review" in types
    # The chat turn's signed function call went back verbatim (the fake checks signatures).
    assert all(r.rejected is None for r in fake_gemini.requests)
