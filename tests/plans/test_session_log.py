"""Issues 22 and 27: one event log and one sequence counter per unit. A plan session is one unit of
work from its creation: its planning and its execution write their events into the log of its run
(with the run's other events, numbered by the run); the session's view (``GET .../sessions/{id}/events``)
reads the run's log in the session's words, and a chat run's relay shows the same events of that
log from the execution on. Sessions stored by earlier versions (an own log before confirmation)
read as before (tests/plans/test_old_layout.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.agent.plan_relay import RELAYED
from shared.events.session import as_session_event
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script
from tests.plans.test_sessions_http import ALICE, create, deliver, events


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def _confirmed_and_run(rt: Runtime, client: FlaskClient) -> tuple[str, str]:
    body = create(client)
    sid = body["sessionId"]
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": body["plan"]["version"]},
                       headers=ALICE).status_code == 202
    deliver(rt)
    session, _ = rt.sessions.get_for("alice", sid)
    assert session.status == "completed" and session.run_id is not None
    return sid, session.run_id


def _without_seq(ev: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ev.items() if k != "seq"}


def test_a_sessions_execution_events_are_its_runs_and_the_view_reads_them_there(make_rt: MakeRuntime,
                                                                               client: FlaskClient) -> None:
    rt = make_rt(Script(acts={"Read the notes": [("search_memory", {"query": "notes"})]}))
    sid, run_id = _confirmed_and_run(rt, client)
    assert rt.sessions.legacy_events(sid) == []  # no second log
    session, _ = rt.sessions.get_for("alice", sid)
    assert session.last_seq == 0  # no second counter
    run_log = rt.runs.list_events(run_id)
    snap = rt.runs.get_run(run_id)
    assert snap is not None and [e["seq"] for e in run_log] == list(range(1, snap.run.last_seq + 1))
    kinds = [e["type"] for e in run_log]
    # Planning is the unit's first step: the plan, waiting for confirmation, then the execution.
    assert [(e["type"], e.get("status")) for e in run_log[:5]] == [
        ("plan_status", "planning"), ("plan_updated", None), ("plan_status", "awaiting_confirmation"),
        ("plan_status", "executing"), ("step_start", None)]
    assert kinds[-2:] == ["plan_status", "plan_result"]
    assert {"executor_reason", "executor_act", "executor_observe", "executor_reflect", "step_complete",
            "tool_call", "tool_result", "status", "usage"} <= set(kinds)
    # The view: the run's events in the session's words, numbered 1, 2, ...
    view = events(client, sid)
    assert [e["seq"] for e in view] == list(range(1, len(view) + 1))
    mapped = [m for m in (as_session_event(e) for e in run_log) if m is not None]
    assert [_without_seq(e) for e in view] == [_without_seq(m) for m in mapped]
    assert [(e["type"], e.get("status")) for e in view[:5]] == [
        ("status", "planning"), ("plan_updated", None), ("status", "awaiting_confirmation"), ("status", "executing"),
        ("task_start", None)]
    assert view[-1]["type"] == "result"
    assert not {"tool_call", "tool_result", "executor_act", "step_start", "plan_status"} & {e["type"] for e in view}
    # Reading on from any point gives the rest, same numbers.
    assert events(client, sid, after=4) == view[4:]


def test_a_chat_runs_relay_shows_the_plan_runs_own_events(store: DocStore, client: FlaskClient) -> None:
    from shared.models.scripted import call, calls_turn, text_turn
    from tests.plans.test_plan_tool import runtime

    rt = runtime(store, [calls_turn(call("agent_create_plan", {"objective": "Summarise my notes"})),
                         text_turn("Done.")],
                 Script(acts={"Read the notes": [("search_memory", {"query": "notes"})]}))
    try:
        body = client.post("/api/agent/run", json={"prompt": "summarise my notes"}, headers=ALICE).get_json()
        deliver(rt)
    finally:
        set_runtime(None)
    chat_log = rt.runs.list_events(body["runId"])
    [created] = [e for e in chat_log if e["type"] == "plan_created"]
    session, _ = rt.sessions.get_for("alice", created["planId"])
    assert session.run_id is not None
    plan_log = rt.runs.list_events(session.run_id)
    start = next(i for i, e in enumerate(plan_log) if e["type"] == "plan_status" and e["status"] == "executing")
    assert [e["type"] for e in plan_log[:start]] == ["plan_status", "plan_updated", "plan_status"]  # its planning
    relayed = [_without_seq(e) for e in chat_log if e["type"] in RELAYED]
    assert relayed == [_without_seq(e) for e in plan_log[start:] if e["type"] in RELAYED]  # from its execution on
    assert [e["type"] for e in relayed].count("step_complete") == 3
    assert [e["seq"] for e in chat_log] == list(range(1, len(chat_log) + 1))


def test_a_followers_relay_reads_only_the_plans_new_events(store: DocStore) -> None:
    """A follower of a chat run waiting on its plan polls: each poll reads the plan run's log only
    after what it already read (the cost of a poll does not grow with the plan's progress)."""
    from shared.agent.plan_relay import RelayCursor
    from shared.models.scripted import call, calls_turn, text_turn
    from shared.state.runs_repo import RunsRepo
    from tests.plans.test_plan_tool import runtime

    class Reads(RunsRepo):
        def __init__(self, inner: RunsRepo) -> None:
            super().__init__(inner.store)
            self.afters: list[int] = []

        def list_events(self, run_id: str, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
            self.afters.append(after)
            return super().list_events(run_id, after, limit)

    rt = runtime(store, [calls_turn(call("agent_create_plan", {"objective": "Save the summary"})),
                         text_turn("Saved it.")],
                 Script(acts={"Write the summary": [("save_memory", {"text": "summary"})]}))
    try:
        client = create_app().test_client()
        body = client.post("/api/agent/run", json={"prompt": "save a summary"}, headers=ALICE).get_json()
        deliver(rt)  # the plan runs until its act waits for approval
        snap = rt.runs.get_run(body["runId"])
        assert snap is not None and snap.run.status == "awaiting_confirmation"
        reads = Reads(rt.runs)
        cursor = RelayCursor(rt.sessions, reads)
        first = cursor.pending(snap.run)
        assert first[-1]["type"] == "approval_required"
        assert [e["seq"] for e in first] == list(range(snap.run.last_seq + 1, snap.run.last_seq + 1 + len(first)))
        assert cursor.pending(snap.run) == first
        assert reads.afters[0] == 0 and reads.afters[1] > 0  # the second poll read after the first's end
        shown = [json.loads(line) for line in client.get(
            f"/api/agent/runs/{body['runId']}/events?after={snap.run.last_seq}", headers=ALICE
        ).data.decode().splitlines() if line]
        assert shown == first  # what the route shows is the cursor's view
    finally:
        set_runtime(None)


def test_one_mapping_gives_the_session_words_both_ways() -> None:
    """Issue 27: the session's wire words come from one mapping (``shared/events/session.py``): each
    session event type comes from exactly one run event (the mapping is one-to-one, so a session
    event names the run event it is), every mapped event validates against the wire models derived
    by the same mapping (the OpenAPI document's ``SessionEvent``), and a plan run event outside the
    rename table is a session event under its own name (adding one touches no session module)."""
    from typing import get_args

    from pydantic import TypeAdapter

    from shared.events.plan import ExecutorObserveEvent, PlanApprovalRequiredEvent, PlanStatusEvent
    from shared.events.run import RunEvent
    from shared.events.session import SESSION_TYPES, SESSION_WORDS, SessionEvent

    words = {SESSION_WORDS.get(t, t) for t in SESSION_TYPES}
    assert len(words) == len(SESSION_TYPES)  # one-to-one
    wire = {c.model_fields["type"].default for c in get_args(get_args(SessionEvent)[0])}
    assert wire == words | {"stream_end"}
    run_types = {c.model_fields["type"].default for c in get_args(get_args(RunEvent)[0])}
    assert run_types >= SESSION_TYPES and not {"status", "tool_call", "tool_result", "agent_state"} & SESSION_TYPES
    adapter: TypeAdapter[Any] = TypeAdapter(SessionEvent)
    observed = ExecutorObserveEvent(seq=7, planId="ses_1", stepId="t1", toolName="send", outcome="unknown",
                                    observation={"error": "cut off"}).model_dump(mode="json")
    assert as_session_event(observed) == {"seq": 7, "type": "observe", "taskId": "t1", "tool": "send",
                                          "outcome": "unknown", "observation": {"error": "cut off"}}
    status = as_session_event(PlanStatusEvent(seq=8, planId="ses_1", status="cancelled").model_dump(mode="json"))
    assert status == {"seq": 8, "type": "status", "status": "cancelled", "sessionId": "ses_1"}
    waiting = PlanApprovalRequiredEvent(seq=9, planId="ses_1", stepId="t1", approvalId="apr_1", toolName="send",
                                        preview="send it").model_dump(mode="json", exclude_none=True)
    assert "approval_required" not in SESSION_WORDS and as_session_event(waiting) == {
        "seq": 9, "type": "approval_required", "taskId": "t1", "approvalId": "apr_1", "tool": "send",
        "preview": "send it", "reason": ""}
    for mapped in (as_session_event(observed), status, as_session_event(waiting)):
        assert adapter.validate_python(mapped).model_dump(mode="json", exclude_none=True) == mapped
    with pytest.raises(ValueError):
        adapter.validate_python({**observed, "type": "observe", "outcome": "sniffed"})
    assert as_session_event({"seq": 1, "type": "tool_call", "toolName": "x"}) is None
