"""Issue 27: sessions stored by earlier versions still read (and go on) correctly, on both stores.

Before issue 27 a session had no run until it was confirmed: its tasks were documents of their own
(``sessions/{id}/tasks/{taskId}``, kept in step with the run's state once it had one), its events
before confirmation its own log (``sessions/{id}/events/{seq}``, numbered 1..``lastSeq``) and its
summary (``currentTaskId``, ``usage``, ``costUsd``) was copied onto ``sessions/{id}``. The documents
here are written as that version wrote them (raw, camelCase), never through today's code.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.durable.kinds import CONTINUE
from shared.durable.messages import WorkMessage
from shared.plans import sessions as engine
from shared.runtime import Runtime
from shared.state.docstore import Write
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script
from tests.plans.test_sessions_http import ALICE, deliver, events

PROMPT = "Summarise my notes and publish"


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def _task(n: int, title: str, status: str = "pending", order: int | None = None) -> dict[str, Any]:
    return {"id": f"t{n}", "title": title, "description": f"do: {title}", "status": status,
            "order": n - 1 if order is None else order, "acts": 0, "rejectedActs": [], "createdInVersion": 1,
            "updatedAt": time.time(), "schemaVersion": 1}


def _plan(version: int, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": version, "tasks": [{"taskId": t["id"], "title": t["title"], "description": t["description"],
                                           "status": t["status"]} for t in tasks if t["status"] != "obsolete"]}


def write_old_session(rt: Runtime, sid: str, *, status: str = "awaiting_confirmation", obsolete: bool = False,
                      deadline: float | None = None) -> list[dict[str, Any]]:
    """A session as the version before issue 27 stored it after planning (and, with ``obsolete``, a
    refinement that dropped a task): no run, its task documents, its own log 1..k. Its events."""
    titles = ["Read the notes", "Write the summary", "Publish it"]
    tasks = [_task(i, t) for i, t in enumerate(titles, start=1)]
    if obsolete:
        tasks.append(_task(4, "Print it", status="obsolete", order=1))
    if status == "cancelled":
        tasks = [{**t, "status": "cancelled"} if t["status"] == "pending" else t for t in tasks]
    at = time.time()
    own = [{"seq": 1, "type": "status", "status": "planning", "sessionId": sid},
           {"seq": 2, "type": "plan_updated", "plan": _plan(1, tasks), "changes": [], "reason": "3 steps"},
           {"seq": 3, "type": "status", "status": "awaiting_confirmation", "sessionId": sid}]
    if status == "cancelled":
        own.append({"seq": 4, "type": "status", "status": "cancelled", "sessionId": sid})
    session = {"sessionId": sid, "uid": "alice", "prompt": PROMPT, "status": status,
               "deadline": deadline or at + 3600, "keepWorkspaces": False, "planVersion": 1,
               "cancelRequested": status == "cancelled", "lastSeq": len(own),
               "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15, "requests": 1}, "costUsd": 0.0,
               "createdAt": at, "updatedAt": at, "schemaVersion": 1}
    if status == "cancelled":
        session["result"] = {"status": "cancelled", "log": []}
    writes = [Write("create", f"sessions/{sid}", session),
              Write("create", f"sessions/{sid}/plans/0001", {"version": 1, "tasks": tasks, "changes": [],
                                                             "reason": "3 steps", "at": at, "schemaVersion": 1}),
              *(Write("create", f"sessions/{sid}/tasks/{t['id']}", t) for t in tasks),
              *(Write("create", f"sessions/{sid}/events/{e['seq']:08d}", {**e, "expireAt": at + 86400})
                for e in own)]
    rt.store.commit(writes)
    return own


def _view(client: FlaskClient, sid: str) -> dict[str, Any]:
    resp = client.get(f"/api/agent/sessions/{sid}", headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()  # type: ignore[no-any-return]


def _script() -> Script:
    return Script(acts={"Read the notes": [("search_memory", {"query": "notes"})]},
                  refine=lambda p: {"tasks": [*p["currentPlan"]], "summary": "unchanged, said again"})


def test_an_old_session_awaiting_confirmation_reads_then_refines_confirms_and_ends(make_rt: MakeRuntime,
                                                                                   client: FlaskClient) -> None:
    rt = make_rt(_script())
    own = write_old_session(rt, "ses_old1", obsolete=True)
    view = _view(client, "ses_old1")
    assert view["status"] == "awaiting_confirmation" and view.get("runId") is None
    assert [(t["taskId"], t["status"]) for t in view["plan"]["tasks"]] == [
        ("t1", "pending"), ("t2", "pending"), ("t4", "obsolete"), ("t3", "pending")]
    assert view["plan"]["version"] == 1
    assert events(client, "ses_old1") == own
    # Changing it gives it its run (its unit of work); its own log stays, the run's follows it.
    refined = client.post("/api/agent/sessions/ses_old1/refine", json={"message": "again"}, headers=ALICE)
    assert refined.status_code == 200, refined.get_json()
    assert refined.get_json()["plan"]["version"] == 2
    view = _view(client, "ses_old1")
    assert view["runId"] and view["status"] == "awaiting_confirmation"
    run = rt.runs.get_run(view["runId"])
    assert run is not None and run.run.status == "awaiting_confirmation" and run.run.host == "plan"
    evs = events(client, "ses_old1")
    assert evs[:3] == own and [(e["seq"], e["type"]) for e in evs[3:]] == [(4, "plan_updated")]
    ok = client.post("/api/agent/sessions/ses_old1/confirm", json={"planVersion": 2}, headers=ALICE)
    assert ok.status_code == 202, ok.get_json()
    deliver(rt)
    view = _view(client, "ses_old1")
    assert view["status"] == "completed", view
    assert [t["status"] for t in view["plan"]["tasks"] if t["status"] != "obsolete"] == ["completed"] * 3
    assert [t["taskId"] for t in view["plan"]["tasks"] if t["status"] == "obsolete"] == ["t4"]
    assert [v["version"] for v in view["plan"]["versions"]] == [1, 2]
    assert [e["tool"] for e in view["result"]["log"] if e["tool"] != "task_done"] == ["search_memory"]
    evs = events(client, "ses_old1")
    assert evs[:3] == own and [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    assert evs[-1]["type"] == "result" and evs[-1]["result"]["status"] == "completed"
    assert events(client, "ses_old1", after=2) == evs[2:]
    listed = client.get("/api/agent/sessions", headers=ALICE).get_json()["sessions"]
    assert [(s["sessionId"], s["status"], s["planVersion"]) for s in listed] == [("ses_old1", "completed", 2)]


def test_an_old_session_confirmed_before_the_change_goes_on_to_its_end(make_rt: MakeRuntime,
                                                                      client: FlaskClient) -> None:
    """Confirmed by the earlier version: its run was created at confirmation (its log from 1,
    without the tasks refined away), its session kept ``lastSeq`` 3 and its task documents."""
    from shared.plans import planner
    from shared.state import paths

    rt = make_rt(_script())
    own = write_old_session(rt, "ses_old2", obsolete=True)
    at = time.time()
    live = [_task(1, "Read the notes", "in_progress"), _task(2, "Write the summary"), _task(3, "Publish it")]
    run_id = "run_old2"
    run = {"runId": run_id, "uid": "alice", "threadId": "", "status": "planning", "host": "plan", "lastSeq": 2,
           "model": "gemini-3-flash-preview", "maxSteps": 100, "steps": 0, "turnCount": 0,
           "systemInstruction": planner.ACT_INSTRUCTION.format(objective=PROMPT),
           "hostState": {"kind": "plan", "schemaVersion": 2, "sessionId": "ses_old2", "objective": PROMPT,
                         "deadline": at + 3600, "tasks": live, "taskId": "t1", "planVersion": 1},
           "createdAt": at, "updatedAt": at, "schemaVersion": 1}
    first = [{"seq": 1, "type": "plan_status", "planId": "ses_old2", "status": "executing"},
             {"seq": 2, "type": "step_start", "planId": "ses_old2", "stepId": "t1", "title": "Read the notes",
              "index": 1, "total": 3}]
    turn = {"role": "user", "parts": [{"text": f"Objective: {PROMPT}"}, {"text": "Task 1 of 3 (t1): Read the notes"}]}
    entry = f"{CONTINUE}-{run_id}-00000"
    rt.store.commit([
        Write("update", "sessions/ses_old2", {"status": "executing", "runId": run_id, "currentTaskId": "t1"}),
        Write("set", "sessions/ses_old2/tasks/t1", live[0]),
        Write("create", paths.run(run_id), run),
        rt.runs.turn_create_write(run_id, 0, _turn(turn)),
        *rt.runs.event_writes(run_id, first),
        rt.services.outbox.record(WorkMessage(kind=CONTINUE, unitId=run_id, uid="alice"), entry)])
    rt.services.outbox.deliver(entry)
    view = _view(client, "ses_old2")
    assert view["status"] == "executing" and view["runId"] == run_id and view["currentTaskId"] == "t1"
    assert [(t["taskId"], t["status"]) for t in view["plan"]["tasks"]] == [
        ("t1", "in_progress"), ("t2", "pending"), ("t4", "obsolete"), ("t3", "pending")]
    evs = events(client, "ses_old2")
    assert evs[:3] == own and [(e["seq"], e["type"]) for e in evs[3:]] == [(4, "status"), (5, "task_start")]
    deliver(rt)
    view = _view(client, "ses_old2")
    assert view["status"] == "completed", view
    assert [t["status"] for t in view["plan"]["tasks"]] == ["completed", "completed", "obsolete", "completed"]
    evs = events(client, "ses_old2")
    assert evs[:3] == own and [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    assert evs[-1]["type"] == "result"
    assert engine.execute_plan(rt.services, rt.sessions, "alice", "ses_old2").status == "completed"


def _turn(doc: dict[str, Any]) -> Any:
    from shared.models.base import Turn

    return Turn.model_validate(doc)


def test_an_old_session_cancelled_before_confirmation_reads_as_it_ended(make_rt: MakeRuntime,
                                                                       client: FlaskClient) -> None:
    rt = make_rt(_script())
    own = write_old_session(rt, "ses_old3", status="cancelled")
    view = _view(client, "ses_old3")
    assert view["status"] == "cancelled" and view["cancelRequested"] is True and view.get("runId") is None
    assert {t["status"] for t in view["plan"]["tasks"]} == {"cancelled"}
    assert view["result"] == {"status": "cancelled", "log": []}
    assert events(client, "ses_old3") == own
    again = client.post("/api/agent/sessions/ses_old3/cancel", headers=ALICE)
    assert again.status_code == 202 and again.get_json()["status"] == "cancelled"


def test_an_old_session_past_its_deadline_is_ended_by_the_sweep(make_rt: MakeRuntime, client: FlaskClient) -> None:
    rt = make_rt(_script())
    own = write_old_session(rt, "ses_old4", deadline=time.time() + 0.2)
    time.sleep(0.3)
    assert engine.end_past_deadline(rt.services, rt.sessions) == 1
    view = _view(client, "ses_old4")
    assert view["status"] == "deadline_exceeded" and view["error"]["code"] == "DEADLINE_EXCEEDED"
    run = rt.runs.get_run(view["runId"])
    assert run is not None and run.run.status == "deadline_exceeded"  # the run agrees with its session
    evs = events(client, "ses_old4")
    assert evs[:3] == own and [(e["seq"], e["type"], e["status"]) for e in evs[3:]] == [
        (4, "status", "deadline_exceeded")]
