"""Issue 18: a plan started by ``agent_create_plan`` (auto_execute) streams live inside the chat turn
that started it (seed 003 §4.3), through ``make dev``'s app: the real google-genai SDK against the
fake Gemini server, the plan executed in the background by the inline dispatcher (as ``make dev``
does), the NDJSON and the SSE form of ``POST /api/agent/run/stream``.

Liveness is shown without timing: the plan's last task cannot start before the test has read the
first task's ``step_complete`` from the open stream (the fake model holds that task's executor call
on a gate the test opens), so the run cannot have ended when that event reached the client.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import InlineDispatcher
from shared.models.gemini import GeminiModel
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.fakes.fake_gemini import FakeGemini, Received, Reply, call, text, thought

ALICE = {"Authorization": "Bearer dev:alice"}
GATE_TIMEOUT_S = 30.0


def _task_texts(r: Received) -> list[str]:
    return [str(part.get("text", "")) for content in r.body.get("contents", []) if content.get("role") == "user"
            for part in content.get("parts", []) if str(part.get("text", "")).startswith("Task ")]


class Brain:
    """The fake model's answers: the chat turn plans (auto_execute), two tasks; task 1 reads memory;
    task 2 waits for ``gate`` and then saves a memory when ``second_act`` says so (a side effect
    that needs approval) or just ends."""

    def __init__(self, second_act: str | None = None) -> None:
        self.gate = threading.Event()
        self.second_act = second_act

    def __call__(self, r: Received) -> Reply:
        si = r.system_instruction
        if "[CONTEXT:" in si:
            if r.function_response("agent_create_plan") is None:
                return Reply([thought("Two steps: plan it."),
                              call("agent_create_plan", {"objective": "Summarise my notes and keep the summary",
                                                         "execution_mode": "auto_execute"})])
            return Reply([text("The plan ran: "), text("summary saved.")])
        if "planning module" in si:
            return Reply([text(json.dumps({"tasks": [{"title": "Read the notes", "description": "all of them"},
                                                     {"title": "Keep the summary", "description": "save it"}],
                                           "summary": "two steps"}))])
        if "reflection module" in si:
            act = json.loads(r.body["contents"][0]["parts"][0]["text"])["lastAct"]
            return Reply([text(json.dumps({"taskComplete": act["action"]["tool"] in ("task_done", "save_memory"),
                                           "taskFailed": False, "summary": "ok"}))])
        task = _task_texts(r)[-1]
        if task.startswith("Task 1 "):
            if r.function_response("search_memory") is None:
                return Reply([call("search_memory", {"query": "notes"})])
            return Reply.text("Read them.")
        assert self.gate.wait(GATE_TIMEOUT_S), "the test never opened the gate"
        if self.second_act and r.function_response(self.second_act) is None:
            return Reply([call(self.second_act, {"text": "summary of the notes"})])
        return Reply.text("Kept it.")


@pytest.fixture
def app_runtime(fake_gemini: FakeGemini, sqlite_docstore: DocStore) -> Iterator[Runtime]:
    settings = fake_gemini.settings(make_settings(dispatcher="inline"))
    rt = Runtime(settings, store=sqlite_docstore, model=GeminiModel(settings), authenticator=LocalAuthenticator())
    set_runtime(rt)
    yield rt
    set_runtime(None)
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, InlineDispatcher)
    dispatcher.close()  # the plan's last deliveries finish before the store closes


def _frames(resp: Any, end: bytes) -> Iterator[bytes]:
    """The streamed body cut at each ``end``, as the chunks arrive (empty frames left out)."""
    buf = b""
    for chunk in resp.response:
        buf += chunk
        while end in buf:
            frame, buf = buf.split(end, 1)
            if frame.strip():
                yield frame


def _ndjson(resp: Any) -> Iterator[dict[str, Any]]:
    return (json.loads(line) for line in _frames(resp, b"\n"))


def _sse(resp: Any) -> Iterator[dict[str, Any]]:
    for frame in _frames(resp, b"\n\n"):
        if frame.startswith(b":"):  # a heartbeat (a comment line) while the stream is quiet
            continue
        fields = dict(line.split(": ", 1) for line in frame.decode().splitlines())
        ev = json.loads(fields["data"])
        assert fields["event"] == ev["type"] and fields["id"] == str(ev["seq"])
        yield ev


def _stream(client: FlaskClient, rt: Runtime, brain: Brain, *, sse: bool) -> list[dict[str, Any]]:
    """Read the chat turn's stream; open the gate once the first task's end is read from it,
    noting what the run was doing at that moment."""
    headers = {**ALICE, "Accept": "text/event-stream" if sse else "application/x-ndjson"}
    resp = client.post("/api/agent/run/stream", json={"prompt": "summarise my notes, step by step"},
                       headers=headers, buffered=False)
    assert resp.status_code == 200
    got: list[dict[str, Any]] = []
    for ev in (_sse if sse else _ndjson)(resp):
        got.append(ev)
        if ev["type"] == "step_complete" and not brain.gate.is_set():
            snap = rt.runs.get_run(got[0]["runId"])
            assert snap is not None and snap.run.status not in ("completed", "failed")  # live, not replayed
            brain.gate.set()
    return got


def _validator(client: FlaskClient) -> jsonschema.Draft202012Validator:
    doc = client.get("/openapi.json").get_json()
    return jsonschema.Draft202012Validator({"$ref": "#/components/schemas/RunEvent", "components": doc["components"]})


def _replay(client: FlaskClient, run_id: str, query: str = "after=0") -> list[dict[str, Any]]:
    resp = client.get(f"/api/agent/runs/{run_id}/events?{query}", headers=ALICE)
    assert resp.status_code == 200
    return [json.loads(line) for line in resp.data.decode().splitlines() if line]


@pytest.mark.parametrize("sse", [False, True], ids=["ndjson", "sse"])
def test_one_stream_from_prompt_to_answer(fake_gemini: FakeGemini, app_runtime: Runtime, sse: bool) -> None:
    brain = Brain()
    fake_gemini.handler = brain
    client = create_app().test_client()
    got = _stream(client, app_runtime, brain, sse=sse)
    types = [e["type"] for e in got]
    assert types[0] == "status" and types[-1] == "result" and got[-1]["result"]["status"] == "completed"
    assert got[-1]["result"]["summary"] == "The plan ran: summary saved."
    # Live order, all on the first stream: the plan, its steps and acts, then the answer.
    starts = [i for i, t in enumerate(types) if t == "step_start"]
    ends = [i for i, t in enumerate(types) if t == "step_complete"]
    deltas = [i for i, t in enumerate(types) if t == "delta"]
    assert len(starts) == len(ends) == 2 and deltas
    assert types.index("plan_created") < starts[0] < types.index("executor_act") < ends[0] < starts[1] < ends[1]
    assert ends[1] < deltas[0] and deltas[-1] < types.index("result")
    assert "stream_end" not in types and types.count("result") == 1
    assert {e["stepId"] for e in got if e["type"] == "step_complete"} == {e["stepId"] for e in got
                                                                         if e["type"] == "step_start"}
    assert [e["status"] for e in got if e["type"] == "step_complete"] == ["completed", "completed"]
    assert [e["seq"] for e in got] == list(range(1, len(got) + 1))
    validator = _validator(client)
    for ev in got:
        validator.validate(ev)
    # A reconnecting client reads exactly what the live one saw, same seqs.
    assert _replay(client, got[0]["runId"]) == got
    assert _replay(client, got[0]["runId"], f"after={ends[0] + 1}") == got[ends[0] + 1:]


def test_a_plan_act_needing_approval_ends_the_stream_and_the_client_follows(
        fake_gemini: FakeGemini, app_runtime: Runtime) -> None:
    brain = Brain(second_act="save_memory")
    fake_gemini.handler = brain
    client = create_app().test_client()
    first = _stream(client, app_runtime, brain, sse=False)
    run_id = first[0]["runId"]
    types = [e["type"] for e in first]
    # The stream relays the plan's pause, then says how to follow: no false result.
    assert types[-2:] == ["approval_required", "stream_end"] and "result" not in types
    wait, end = first[-2], first[-1]
    assert end["reason"] == "plan_awaiting_approval" and end["status"] == "executing" and end["seq"] == wait["seq"]
    assert end["follow"] == f"/api/agent/runs/{run_id}/events?after={wait['seq']}&follow=1&until=end"
    assert wait["toolName"] == "save_memory" and wait["planId"].startswith("ses_")
    # The approvals inbox shows it, linked to the plan session and its task.
    inbox = client.get("/api/agent/approvals?status=pending", headers=ALICE).get_json()
    [item] = inbox["approvals"]
    assert (item["approvalId"], item["sessionId"], item["taskId"]) == (wait["approvalId"], wait["planId"],
                                                                       wait["stepId"])
    one = client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()
    assert one["status"] == "executing"
    # follow=1 alone stops at the plan's pause, like at a run's own (documented), and says so.
    [closing] = _replay(client, run_id, f"after={wait['seq']}&follow=1")
    assert (closing["type"], closing["reason"], closing["seq"]) == ("stream_end", "plan_awaiting_approval", wait["seq"])
    assert client.post("/api/agent/approve", json={"approvalId": wait["approvalId"], "decision": "approve"},
                       headers=ALICE).status_code == 202
    rest = _replay(client, run_id, end["follow"].split("?", 1)[1])
    assert rest[-1]["type"] == "result" and rest[-1]["result"]["status"] == "completed"
    rest_types = [e["type"] for e in rest]
    assert rest_types.index("executor_observe") < rest_types.index("step_complete") < rest_types.index("delta")
    live = first[:-1] + rest
    assert [e["seq"] for e in live] == list(range(1, len(live) + 1))
    assert _replay(client, run_id) == live
    assert [m.text for m in app_runtime.users.list_memories("alice")] == ["summary of the notes"]
    decided = client.get("/api/agent/approvals?status=decided", headers=ALICE).get_json()["approvals"]
    assert [(a["approvalId"], a["status"]) for a in decided] == [(wait["approvalId"], "approved")]


def test_a_plan_that_outlives_the_stream_ends_it_with_the_route_to_follow(fake_gemini: FakeGemini,
                                                                          sqlite_docstore: DocStore) -> None:
    # The stream's time is the run's invocation budget (AGENT_RUN_DEADLINE_S): a plan still running
    # when it is spent leaves the stream with stream_end; the client follows the route it names.
    brain = Brain()
    fake_gemini.handler = brain
    settings = fake_gemini.settings(make_settings(dispatcher="inline", run_deadline_s=4.0, plan_yield_margin_s=0.5))
    rt = Runtime(settings, store=sqlite_docstore, model=GeminiModel(settings), authenticator=LocalAuthenticator())
    set_runtime(rt)
    try:
        client = create_app().test_client()
        resp = client.post("/api/agent/run/stream", json={"prompt": "summarise my notes"}, headers=ALICE,
                           buffered=False)
        first = list(_ndjson(resp))  # the gate stays shut: task 2 cannot end before the stream's time
        end = first[-1]
        assert end["type"] == "stream_end" and end["reason"] == "stream_time_spent" and end["seq"] == first[-2]["seq"]
        # Task 2 cannot end before the gate opens (task 1 may or may not have ended by then on a slow machine).
        assert [e["type"] for e in first].count("step_complete") <= 1 and "result" not in [e["type"] for e in first]
        brain.gate.set()
        rest = _replay(client, end["runId"], end["follow"].split("?", 1)[1])
        assert rest[-1]["type"] == "result" and rest[-1]["result"]["status"] == "completed"
        assert _replay(client, end["runId"]) == first[:-1] + rest
    finally:
        brain.gate.set()
        set_runtime(None)
        dispatcher = rt.dispatcher
        assert isinstance(dispatcher, InlineDispatcher)
        dispatcher.close()
