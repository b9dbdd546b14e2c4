"""Plan sessions on the kernel: approvals inside execution (same policy, approve route and resume),
deadlines (FR-306) checked before every act and by the sweep, crashes recovered, every act once."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.runtime import Runtime
from shared.state.host_states import PlanRunState
from shared.state.records import UserRecord
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script
from tests.plans.test_sessions_http import ALICE, create, deliver, events


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def confirm(client: FlaskClient, sid: str, version: int = 1) -> None:
    resp = client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": version}, headers=ALICE)
    assert resp.status_code == 202, resp.get_json()


def view(client: FlaskClient, sid: str) -> dict[str, Any]:
    return client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()  # type: ignore[no-any-return]


def test_an_act_with_a_side_effect_waits_for_approval_then_continues(make_rt: MakeRuntime,
                                                                    client: FlaskClient) -> None:
    script = Script(acts={"Write the summary": [("save_memory", {"text": "the summary"})]})
    rt = make_rt(script)  # alice is supervised (default): save_memory needs approval
    sid = create(client)["sessionId"]
    confirm(client, sid)
    deliver(rt)
    waiting = view(client, sid)
    assert waiting["status"] == "executing"
    [pending] = waiting["pendingApprovals"]
    assert pending["tool"] == "save_memory" and "the summary" in pending["preview"]
    assert "approval_required" in [e["type"] for e in events(client, sid)]
    assert rt.users.list_memories("alice") == []
    approved = client.post("/api/agent/approve", json={"approvalId": pending["approvalId"], "decision": "approve"},
                           headers=ALICE)
    assert approved.status_code == 202
    deliver(rt)  # the resume message, then the continue messages
    done = view(client, sid)
    assert done["status"] == "completed", done
    assert [m.text for m in rt.users.list_memories("alice")] == ["the summary"]  # exactly once
    act = done["plan"]["tasks"][1]["history"][0]
    assert act["action"]["tool"] == "save_memory" and act["observation"]["saved"] is True


def reject_the_first_act(rt: Runtime, client: FlaskClient) -> tuple[str, dict[str, Any]]:
    """Create and confirm a session, reject the approval its first act waits for, run it to its end."""
    sid = create(client)["sessionId"]
    confirm(client, sid)
    deliver(rt)
    [pending] = view(client, sid)["pendingApprovals"]
    client.post("/api/agent/approve", json={"approvalId": pending["approvalId"], "decision": "reject"}, headers=ALICE)
    deliver(rt)
    return sid, view(client, sid)


def test_a_rejected_act_is_observed_and_the_task_ends_rejected(make_rt: MakeRuntime, client: FlaskClient) -> None:
    """Issue 18: a task whose act the user rejected is not ``completed`` on the model's word; the
    plan goes on with the next tasks, and the session's status and log say ``rejected``."""
    rt = make_rt(Script(acts={"Read the notes": [("save_memory", {"text": "x"})]}))
    sid, done = reject_the_first_act(rt, client)
    assert done["status"] == "rejected", done["status"]
    first, *rest = done["plan"]["tasks"]
    assert first["status"] == "rejected" and "the user rejected" in first["summary"]
    assert first["history"][0]["observation"]["rejected"] is True
    assert {t["status"] for t in rest} == {"completed"}  # the other tasks still ran
    assert [e["outcome"] for e in done["result"]["log"] if e["tool"] == "save_memory"] == ["rejected"]
    observed = [e for e in events(client, sid) if e["type"] == "observe"]
    assert [e["outcome"] for e in observed] == ["rejected"]
    assert "rejected" in [e["status"] for e in events(client, sid) if e["type"] == "task_complete"]


def test_a_task_met_without_its_rejected_act_completes(make_rt: MakeRuntime, client: FlaskClient) -> None:
    """The reflection may say the goal was met without the rejected act: then the task completes."""
    def reflect(prompt: dict[str, Any]) -> dict[str, Any]:
        done = prompt["lastAct"]["action"]["tool"] == "task_done"
        assert not done or prompt.get("rejectedActs") or prompt["currentTask"]["id"] != "t1"
        return {"taskComplete": done, "summary": "met without saving" if done else "go on"}

    rt = make_rt(Script(acts={"Read the notes": [("save_memory", {"text": "x"})]}, reflect=reflect))
    _, done = reject_the_first_act(rt, client)
    assert done["status"] == "completed" and done["plan"]["tasks"][0]["status"] == "completed"


def test_autonomous_users_act_without_approval(make_rt: MakeRuntime, client: FlaskClient) -> None:
    rt = make_rt(Script(acts={"Read the notes": [("save_memory", {"text": "auto"})]}))
    rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
    sid = create(client)["sessionId"]
    confirm(client, sid)
    deliver(rt)
    assert view(client, sid)["status"] == "completed"
    assert [m.text for m in rt.users.list_memories("alice")] == ["auto"]


def test_a_session_spans_many_invocations_through_its_step_budget(make_rt: MakeRuntime,
                                                                  client: FlaskClient) -> None:
    acts = {t: [("search_memory", {"query": f"{t}{i}"}) for i in range(3)]
            for t in ("Read the notes", "Write the summary", "Publish it")}
    rt = make_rt(Script(acts=acts), plan_steps_per_invocation=2)
    sid = create(client)["sessionId"]
    confirm(client, sid)
    assert deliver(rt) >= 6  # 12 model calls at 2 per invocation, and a slice per task
    done = view(client, sid)
    assert done["status"] == "completed"
    assert [len(t["history"]) for t in done["plan"]["tasks"]] == [4, 4, 4]  # 3 acts + task_done each, no duplicate
    assert [h["n"] for t in done["plan"]["tasks"] for h in t["history"]] == [1, 2, 3, 4] * 3


def test_no_act_starts_after_the_deadline(make_rt: MakeRuntime, client: FlaskClient) -> None:
    rt = make_rt(Script(acts={"Read the notes": [("search_memory", {"query": "a"})]}))
    sid = create(client)["sessionId"]
    confirm(client, sid)
    session, _ = rt.sessions.get(sid)  # type: ignore[misc]
    run = rt.runs.get_run(session.run_id or "")
    assert run is not None
    # The deadline passes before the first invocation runs (the execution carries it in its state).
    assert isinstance(run.run.host_state, PlanRunState)
    run.run.host_state.deadline = time.time() - 1
    rt.runs.commit(run, run.run)
    deliver(rt)
    done = view(client, sid)
    assert done["status"] == "deadline_exceeded" and done["error"]["code"] == "DEADLINE_EXCEEDED"
    assert all(not t["history"] for t in done["plan"]["tasks"])


def test_the_sweep_ends_sessions_waiting_past_their_deadline(make_rt: MakeRuntime, client: FlaskClient) -> None:
    rt = make_rt(Script(acts={"Read the notes": [("save_memory", {"text": "x"})]}))
    unconfirmed = create(client)["sessionId"]
    paused = create(client)["sessionId"]
    confirm(client, paused)
    deliver(rt)
    [pending] = view(client, paused)["pendingApprovals"]
    for sid in (unconfirmed, paused):
        rt.sessions.store.commit([rt.sessions.update_write(sid, {"deadline": time.time() - 5})])
    assert rt.router.sweep()["recovered"] >= 2
    for sid in (unconfirmed, paused):
        ended = view(client, sid)
        assert ended["status"] == "deadline_exceeded", ended
        assert [e["status"] for e in events(client, sid) if e["type"] == "status"][-1] == "deadline_exceeded"
    late = client.post("/api/agent/approve", json={"approvalId": pending["approvalId"], "decision": "approve"},
                       headers=ALICE)
    assert late.status_code == 409
    assert rt.users.list_memories("alice") == []


def test_unconfirmed_plans_never_crowd_an_expired_pause_out_of_the_sweep(make_rt: MakeRuntime,
                                                                          client: FlaskClient) -> None:
    """A plan session's run awaits its confirmation from creation; more of them than the sweep takes
    at once (50), all older than a chat run's expired pause, still let one sweep close that pause
    (its query is by ``pauseExpiresAt``, which only a pause asking someone has)."""
    rt = make_rt(Script(acts={"": [("save_memory", {"text": "x"})]}), approval_ttl_s=2.0, limit_active_sessions=0,
                 limit_requests_per_minute=0)
    sessions = [create(client)["sessionId"] for _ in range(60)]
    resp = client.post("/api/agent/run", json={"prompt": "remember x", "threadId": "t-sweep"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    chat = resp.get_json()
    assert chat["status"] == "awaiting_confirmation"
    [approval] = chat["approvals"]
    got = rt.runs.get_approval("alice", approval["approvalId"])
    assert got is not None
    time.sleep(max(0.0, got[0].expires_at - time.time()) + 0.05)
    assert rt.router.sweep()["recovered"] == 1
    closed = rt.runs.get_run(chat["runId"])
    assert closed is not None and closed.run.error is not None and closed.run.error.code == "APPROVAL_EXPIRED"
    assert {view(client, sid)["status"] for sid in sessions} == {"awaiting_confirmation"}  # untouched
    assert rt.users.list_memories("alice") == []


class Crash(BaseException):
    """A process dying mid-invocation (not an ``Exception``: nothing in the runtime catches it)."""


def crashing_note(sent: list[str]) -> ToolRegistry:
    """The default tools and ``send_note``, a side-effect tool that notes its recipient in ``sent``,
    then dies: after the side effect, the runtime never learns how it went."""
    registry = default_registry()

    @registry.tool(side_effect=True)
    def send_note(ctx: ToolContext, to: str) -> dict[str, Any]:
        """Send a note.

        Args:
            to: Recipient.
        """
        sent.append(to)
        raise Crash()

    return registry


def crashed_then_recovered(rt: Runtime, client: FlaskClient) -> str:
    """A new session, confirmed; the delivery that executes it crashes; once its lease (0.2 s) lapsed
    the sweep recovers it and the rest is delivered. The session's id."""
    sid = create(client)["sessionId"]
    confirm(client, sid)
    with pytest.raises(Crash):
        deliver(rt)
    time.sleep(0.3)
    assert rt.router.sweep()["recovered"] == 1
    deliver(rt)
    return sid


def test_cancel_while_waiting_for_an_approval_closes_it(make_rt: MakeRuntime, client: FlaskClient) -> None:
    rt = make_rt(Script(acts={"Read the notes": [("save_memory", {"text": "x"})]}))
    sid = create(client)["sessionId"]
    confirm(client, sid)
    deliver(rt)
    [pending] = view(client, sid)["pendingApprovals"]
    resp = client.post(f"/api/agent/sessions/{sid}/cancel", headers=ALICE)
    assert resp.status_code == 202 and resp.get_json()["status"] == "cancelled"
    ended = view(client, sid)
    assert ended["pendingApprovals"] == []
    assert {t["status"] for t in ended["plan"]["tasks"]} == {"cancelled"}  # the waiting task too (issue 18)
    assert client.post("/api/agent/approve", json={"approvalId": pending["approvalId"], "decision": "approve"},
                       headers=ALICE).status_code == 409
    assert rt.users.list_memories("alice") == []


def test_a_crash_inside_an_invocation_is_recovered_and_no_act_runs_twice(make_rt: MakeRuntime,
                                                                         client: FlaskClient) -> None:
    acts = {"Read the notes": [("search_memory", {"query": "a"}), ("search_memory", {"query": "b"})]}
    script = Script(acts=acts)
    original = script.answer
    state = {"calls": 0}

    def crashing(request: Any) -> Any:
        state["calls"] += 1
        if state["calls"] == 4:  # the second act's reflection: after the act ran, before its commit
            raise Crash()
        return original(request)

    script.answer = crashing  # type: ignore[method-assign]
    rt = make_rt(script, lease_ttl_s=0.2)
    sid = crashed_then_recovered(rt, client)
    done = view(client, sid)
    assert done["status"] == "completed"
    ns = [h["n"] for h in done["plan"]["tasks"][0]["history"]]
    assert ns == sorted(set(ns)) == list(range(1, len(ns) + 1))  # no gap, no duplicate


def test_a_crash_inside_a_side_effect_act_is_reported_unknown_to_the_reflection(make_rt: MakeRuntime,
                                                                               client: FlaskClient) -> None:
    """The act was claimed, then the process died inside the (non-idempotent) tool: recovery never
    runs it again, its outcome is ``unknown``, and the reflection is told so."""

    seen: list[dict[str, Any]] = []
    sent: list[str] = []

    def reflect(prompt: dict[str, Any]) -> dict[str, Any]:
        seen.append(prompt["lastAct"])
        return {"taskComplete": prompt["lastAct"]["action"]["tool"] == "task_done", "taskFailed": False,
                "summary": "noted"}

    registry = crashing_note(sent)
    rt = make_rt(Script(acts={"Read the notes": [("send_note", {"to": "bob"})]}, reflect=reflect), lease_ttl_s=0.2)
    rt.registry = registry
    rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
    sid = crashed_then_recovered(rt, client)
    assert sent == ["bob"]  # never run again
    observed = next(a for a in seen if a["action"]["tool"] == "send_note")
    assert observed["observation"]["outcome"] == "unknown" and observed["outcome"] == "unknown"
    assert view(client, sid)["plan"]["tasks"][0]["history"][0]["observation"]["outcome"] == "unknown"
    # Issue 27: ``unknown`` stays ``unknown`` (typed end to end): the observe event and the final log.
    assert [e["outcome"] for e in events(client, sid) if e["type"] == "observe"] == ["unknown"]
    [logged] = [e for e in view(client, sid)["result"]["log"] if e["tool"] == "send_note"]
    assert logged["outcome"] == "unknown"


def test_a_cancel_that_read_the_session_before_the_execution_paused_still_ends_it(make_rt: MakeRuntime,
                                                                                  client: FlaskClient) -> None:
    """Found by the OpenAPI fuzz test (a 500): ``cancel`` read the session, the execution appended
    events and paused, then the cancel's status event took a ``seq`` from its stale read and collided
    with one of them. The status event takes the next ``seq`` as of its own transaction (now: the
    next of the run's log, where the session's events live)."""
    from shared.plans.sessions import end_paused

    rt = make_rt(Script(acts={"Read the notes": [("save_memory", {"text": "x"})]}))
    sid = create(client)["sessionId"]
    confirm(client, sid)
    stale, _ = rt.sessions.get_for("alice", sid)  # what cancel read, before the execution went on
    deliver(rt)
    assert view(client, sid)["pendingApprovals"]
    assert stale.run_id is not None
    assert end_paused(rt.services, rt.sessions, stale, stale.run_id, "cancelled")
    seqs = [e["seq"] for e in events(client, sid)]
    assert seqs == list(range(1, len(seqs) + 1)) and seqs[-1] > stale.last_seq + 1
    assert [e["status"] for e in events(client, sid) if e["type"] == "status"][-1] == "cancelled"
    assert events(client, sid)[-1]["result"]["status"] == view(client, sid)["status"] == "cancelled"


def test_a_run_stored_with_the_untyped_host_state_of_version_1_executes_to_its_end(make_rt: MakeRuntime,
                                                                                  client: FlaskClient) -> None:
    from shared.state import paths
    from shared.state.docstore import Write

    rt = make_rt(Script(acts={"Read the notes": [("search_memory", {"query": "a"})]}))
    sid = create(client)["sessionId"]
    confirm(client, sid)
    session, _ = rt.sessions.get(sid)  # type: ignore[misc]
    path = paths.run(session.run_id or "")
    doc = rt.store.get(path)
    assert doc is not None and doc.data["hostState"]["kind"] == "plan"
    typed = doc.data["hostState"]
    legacy = {k: v for k, v in typed.items() if k not in ("kind", "schemaVersion", "planVersion")}
    legacy.update(version=typed["planVersion"], virtualArgErrors=0)  # as the previous runtime wrote it
    rt.store.commit([Write("set", path, {**doc.data, "hostState": legacy})])
    deliver(rt)
    assert view(client, sid)["status"] == "completed"
    stored = rt.store.get(path)
    assert stored is not None
    assert stored.data["hostState"]["kind"] == "plan" and stored.data["hostState"]["schemaVersion"] == 2
    assert "virtualArgErrors" not in stored.data["hostState"] and "version" not in stored.data["hostState"]


def test_the_run_behind_a_plan_says_what_it_is(make_rt: MakeRuntime, client: FlaskClient) -> None:
    """Issue 18 finding 4: the run that executes a plan is listed linked to its session, with a
    summary, no empty thread, the mode of what it did (not the pause it was once in) and no
    "of 720" step bound of a chat run."""
    rt = make_rt(Script(acts={"Read the notes": [("save_memory", {"text": "x"})]}))
    sid = create(client)["sessionId"]
    confirm(client, sid)
    deliver(rt)
    [pending] = view(client, sid)["pendingApprovals"]
    client.post("/api/agent/approve", json={"approvalId": pending["approvalId"], "decision": "approve"},
                headers=ALICE)
    deliver(rt)
    assert view(client, sid)["status"] == "completed"
    [listed] = [r for r in client.get("/api/agent/runs", headers=ALICE).get_json()["runs"] if r["host"] == "plan"]
    assert listed["sessionId"] == sid and listed["status"] == "completed"
    assert listed["mode"] == "tool_executed" and "threadId" not in listed
    assert listed["summary"] == f"plan session {sid}: 3 tasks (3 completed)"
    one = client.get(f"/api/agent/runs/{listed['runId']}", headers=ALICE).get_json()
    assert one["ok"] is True and one["sessionId"] == sid and one["mode"] == "tool_executed"
    assert "threadId" not in one and "hostState" not in one
