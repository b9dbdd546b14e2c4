"""Issue 27: every way a plan session ends, walked end to end over HTTP (docs/plan-sessions.md,
"Statuses"): the session's status and its run's agree, ``cancelRequested`` is true after any
accepted cancel, the task in progress at a cancel gets its closing event, an approval closed by a
cancel is ``cancelled``, the session names its run, and its usage is exactly its ledger entries."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.runtime import Runtime
from shared.state.host_states import PlanRunState
from shared.token_usage import Usage
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script
from tests.plans.test_sessions_http import ALICE, create, deliver, events

SIDE_EFFECT = Script(acts={"Read the notes": [("save_memory", {"text": "x"})]})
READ_ONLY = Script(acts={"Read the notes": [("search_memory", {"query": "a"})]})


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def view(client: FlaskClient, sid: str) -> dict[str, Any]:
    return client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()  # type: ignore[no-any-return]


def confirm(client: FlaskClient, sid: str) -> None:
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1},
                       headers=ALICE).status_code == 202


def cancel(client: FlaskClient, sid: str) -> None:
    resp = client.post(f"/api/agent/sessions/{sid}/cancel", json={"reason": "changed my mind"}, headers=ALICE)
    assert resp.status_code == 202, resp.get_json()
    assert resp.get_json()["cancelRequested"] is True  # whenever a cancel is accepted


def pending_approval(client: FlaskClient, sid: str) -> str:
    [pending] = view(client, sid)["pendingApprovals"]
    return str(pending["approvalId"])


def completed(rt: Runtime, client: FlaskClient) -> str:
    sid = create(client)["sessionId"]
    confirm(client, sid)
    deliver(rt)
    return sid


def failed(rt: Runtime, client: FlaskClient) -> str:
    return completed(rt, client)  # the script's reflection fails the first task


def deadline_during_execution(rt: Runtime, client: FlaskClient) -> str:
    sid = create(client)["sessionId"]
    confirm(client, sid)
    got = rt.sessions.get(sid)
    assert got is not None and got[0].run_id is not None
    snap = rt.runs.get_run(got[0].run_id)
    assert snap is not None and isinstance(snap.run.host_state, PlanRunState)
    snap.run.host_state.deadline = time.time() - 1
    rt.runs.commit(snap, snap.run)
    deliver(rt)
    return sid


def deadline_while_awaiting_approval(rt: Runtime, client: FlaskClient) -> str:
    sid = completed(rt, client)
    pending_approval(client, sid)
    rt.sessions.store.commit([rt.sessions.update_write(sid, {"deadline": time.time() - 5})])
    rt.router.sweep()
    return sid


def cancel_its_run(client: FlaskClient, sid: str) -> None:
    """The session's run cancelled through the runs route (a dashboard built on runs): the same
    cancel as the session's."""
    run_id = view(client, sid)["runId"]
    resp = client.post(f"/api/agent/runs/{run_id}/cancel", json={"reason": "changed my mind"}, headers=ALICE)
    assert resp.status_code == 202, resp.get_json()


Drive = Callable[[Runtime, FlaskClient], str]
Cancel = Callable[[FlaskClient, str], None]
"""A way to cancel a session: its own route (:func:`cancel`) or its run's (:func:`cancel_its_run`)."""


def cancelled_before_execution(stop: Cancel) -> Drive:
    def drive(rt: Runtime, client: FlaskClient) -> str:
        sid = create(client)["sessionId"]
        stop(client, sid)
        return sid

    return drive


def cancelled_during_execution(stop: Cancel) -> Drive:
    def drive(rt: Runtime, client: FlaskClient) -> str:
        sid = create(client)["sessionId"]
        confirm(client, sid)
        stop(client, sid)
        deliver(rt)  # the execution stops before its first act
        return sid

    return drive


def cancelled_while_awaiting_approval(stop: Cancel) -> Drive:
    def drive(rt: Runtime, client: FlaskClient) -> str:
        sid = completed(rt, client)
        pending_approval(client, sid)
        stop(client, sid)
        return sid

    return drive


def rejected(rt: Runtime, client: FlaskClient) -> str:
    sid = completed(rt, client)
    client.post("/api/agent/approve", json={"approvalId": pending_approval(client, sid), "decision": "reject"},
                headers=ALICE)
    deliver(rt)
    return sid


def _fail_first(prompt: dict[str, Any]) -> dict[str, Any]:
    return {"taskComplete": False, "taskFailed": True, "summary": "cannot be done"}


@dataclass(frozen=True)
class Path:
    drive: Callable[[Runtime, FlaskClient], str]
    script: Script
    status: str
    executed: bool = True
    cancelled_task: bool = False
    """The path cancels while a task is in progress: it gets its ``task_complete``."""
    closed_approval: str | None = None
    """The status the approval the session waited for ends with."""


CANCELS: dict[str, Cancel] = {"": cancel, "run_": cancel_its_run}
PATHS = {
    "completed": Path(completed, READ_ONLY, "completed"),
    "failed": Path(failed, Script(acts=READ_ONLY.acts, reflect=_fail_first), "failed"),
    "deadline_exceeded_during_execution": Path(deadline_during_execution, READ_ONLY, "deadline_exceeded"),
    "deadline_exceeded_while_awaiting_approval": Path(deadline_while_awaiting_approval, SIDE_EFFECT,
                                                      "deadline_exceeded", closed_approval="rejected"),
    **{f"{prefix}cancelled_before_execution": Path(cancelled_before_execution(stop), READ_ONLY, "cancelled",
                                                    executed=False) for prefix, stop in CANCELS.items()},
    **{f"{prefix}cancelled_during_execution": Path(cancelled_during_execution(stop), READ_ONLY, "cancelled",
                                                    cancelled_task=True) for prefix, stop in CANCELS.items()},
    **{f"{prefix}cancelled_while_awaiting_approval": Path(cancelled_while_awaiting_approval(stop), SIDE_EFFECT,
                                                          "cancelled", cancelled_task=True, closed_approval="cancelled")
       for prefix, stop in CANCELS.items()},
    "rejected": Path(rejected, SIDE_EFFECT, "rejected", closed_approval="rejected"),
}


def ledger_usage(rt: Runtime, *units: str) -> tuple[Usage, float]:
    entries = {e.entry_id: e for u in units for e in rt.services.usage.for_unit("alice", u)}
    usage, cost = Usage(), 0.0
    for e in entries.values():
        usage, cost = usage + e.usage, cost + e.cost_usd
    return usage, round(cost, 8)


@pytest.mark.parametrize("name", list(PATHS))
def test_every_terminal_path_tells_one_truth(make_rt: MakeRuntime, client: FlaskClient, name: str) -> None:
    path = PATHS[name]
    rt = make_rt(path.script)
    approvals_before = {a["approvalId"] for a in client.get("/api/agent/approvals?status=all",
                                                              headers=ALICE).get_json()["approvals"]}
    sid = path.drive(rt, client)
    session = view(client, sid)
    assert session["status"] == path.status, session
    assert session["cancelRequested"] is (path.status == "cancelled")
    assert not [t for t in session["plan"]["tasks"] if t["status"] in ("pending", "in_progress")] or (
        path.status in ("deadline_exceeded", "failed"))
    evs = events(client, sid)
    assert [e["status"] for e in evs if e["type"] == "status"][-1] == path.status
    # The session's whole usage: planning, acts and reflections, exactly the ledger's entries.
    units = [sid] + ([session["runId"]] if session.get("runId") else [])
    usage, cost = ledger_usage(rt, *units)
    assert Usage.model_validate(session["usage"]) == usage and session["costUsd"] == cost
    assert usage.requests >= 1  # the planning call at least
    run_id = session["runId"]  # its unit of work, from its creation (planning is its first step)
    [listed] = [r for r in client.get("/api/agent/runs", headers=ALICE).get_json()["runs"] if r["runId"] == run_id]
    one = client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()
    assert listed["status"] == one["status"] == path.status  # the run agrees with its session
    assert listed["sessionId"] == sid and listed["mode"] != "requires_approval"
    if not path.executed:
        assert [e["type"] for e in evs] == ["status", "plan_updated", "status", "status"]
        return
    assert [e["result"]["status"] for e in evs if e["type"] == "result"] == [path.status]
    closing = [e for e in evs if e["type"] == "task_complete" and e["status"] == "cancelled"]
    if path.cancelled_task:
        assert len(closing) == 1, evs
        assert {t["status"] for t in session["plan"]["tasks"]} == {"cancelled"}
    else:
        assert closing == []
    if path.closed_approval is not None:
        mine = [a for a in client.get("/api/agent/approvals?status=all", headers=ALICE).get_json()["approvals"]
                if a["approvalId"] not in approvals_before]
        assert [a["status"] for a in mine] == [path.closed_approval]
        assert mine[0]["sessionId"] == sid and mine[0]["runId"] == run_id
