"""A plan session's own model calls are budgeted like its acts (issue 30, docs/budgets.md), on both
stores: planning and refining are reserved against the user's caps before the call (reached: 429
``BUDGET_EXCEEDED``, the model not called, nothing written); each act's check reserves room for
the act and for the reflection that follows it; a run resumed after a tool approval checks the
reflection's room before the approved tool runs (no room: a budget approval first, then the tool
runs exactly once)."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from bench.plan_model import Script
from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.plans import planner
from shared.plans.reflect import LAST_ACT_CHARS
from shared.runtime import Runtime, set_runtime
from shared.state import paths
from shared.state.docstore import DocStore
from shared.usage.budget import structured_max_cost
from tests.agent.conftest import make_settings
from tests.budgets.test_budgets import ALICE, decide
from tests.observability.support import token_model
from tests.plans.test_sessions_http import deliver

ADMIN = {"Authorization": "Bearer dev-admin:ops"}


def app(docstore: DocStore, script: Script, **settings: Any) -> tuple[Runtime, FlaskClient]:
    rt = Runtime(make_settings(model_max_output_tokens=200, **settings), store=docstore, model=token_model(script),
                 authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    set_runtime(rt)
    return rt, create_app().test_client()


def test_planning_and_refining_are_reserved_against_the_users_caps(docstore: DocStore) -> None:
    script = Script(refine=lambda p: {"tasks": [{"id": t["id"], "title": t["title"]} for t in p["currentPlan"]],
                                      "summary": "kept"})
    try:
        rt, client = app(docstore, script, budget_user_daily_usd=1.0)
        created = client.post("/api/agent/sessions", json={"prompt": "Summarise my notes"}, headers=ALICE)
        assert created.status_code == 201, created.get_json()
        sid = created.get_json()["sessionId"]
        spent_day, _ = rt.services.budgets.spent("alice")
        planning = rt.usage.for_unit("alice", sid)
        assert planning and spent_day == sum(e.cost_usd for e in planning) > 0  # the planning call counts
        budget = docstore.get(paths.limit("alice", "budget"))
        assert budget is not None and budget.data["reserved"] == {}  # reserved, then released

        # The admin lowers alice's cap below what she spent: her next planning calls are refused.
        assert client.patch("/api/admin/users/alice", json={"limits": {"dailyBudgetUsd": spent_day / 2}},
                            headers=ADMIN).status_code == 200
        refused = client.post(f"/api/agent/sessions/{sid}/refine", json={"message": "add a step"}, headers=ALICE)
        assert refused.status_code == 429, refused.get_json()
        error = refused.get_json()["error"]
        assert error["code"] == "BUDGET_EXCEEDED" and error["details"]["scope"] == "user_day"
        assert "daily budget" in error["message"] and int(refused.headers["Retry-After"]) >= 1
        assert script.counts.get("refine", 0) == 0  # the model was not called
        assert client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()["plan"]["version"] == 1
        again = client.post("/api/agent/sessions", json={"prompt": "Another plan"}, headers=ALICE)
        assert again.status_code == 429 and again.get_json()["error"]["code"] == "BUDGET_EXCEEDED"
        assert script.counts["plan"] == 1
        sessions = client.get("/api/agent/sessions", headers=ALICE).get_json()["sessions"]
        assert [s["sessionId"] for s in sessions] == [sid]  # nothing of the refused session was written
        # Raised again: refining works and counts.
        assert client.patch("/api/admin/users/alice", json={"limits": {"dailyBudgetUsd": None}},
                            headers=ADMIN).status_code == 200
        refined = client.post(f"/api/agent/sessions/{sid}/refine", json={"message": "add a step"}, headers=ALICE)
        assert refined.status_code == 200, refined.get_json()
        assert rt.services.budgets.spent("alice")[0] == sum(e.cost_usd for e in rt.usage.for_unit("alice", sid))
    finally:
        set_runtime(None)


def test_an_acts_check_reserves_room_for_its_reflection(docstore: DocStore) -> None:
    script = Script(acts={"Read the notes": [("search_memory", {"query": "notes"})]})
    try:
        rt, client = app(docstore, script)
        sid = client.post("/api/agent/sessions", json={"prompt": "Summarise my notes", "budgetUsd": 0.0001},
                          headers=ALICE).get_json()["sessionId"]
        assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1},
                           headers=ALICE).status_code == 202
        deliver(rt)
        session = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
        [pending] = session["pendingApprovals"]
        assert pending["kind"] == "budget" and script.counts.get("act", 0) == 0
        run_id = pending["runId"]
        [action] = [a for a in rt.runs.list_actions(run_id) if a.tool == "budget_increase"]
        snap = rt.runs.get_run(run_id)
        assert snap is not None
        state: Any = snap.run.host_state
        biggest = {"cut": "x" * LAST_ACT_CHARS, "fullChars": 10**9}
        reflection = structured_max_cost(rt.settings, rt.services.model_factory().name,
                                         planner.reflect_request(state.objective, state.current, state.tasks, biggest))
        # The act was counted with its reflection: more than the reflection alone.
        assert reflection > 0 and action.args["callMaxUsd"] > reflection
    finally:
        set_runtime(None)


def test_a_reflection_after_a_tool_approval_waits_for_room_before_the_tool_runs(docstore: DocStore) -> None:
    script = Script(acts={"Read the notes": [("save_memory", {"text": "a note"})]})
    try:
        rt, client = app(docstore, script, budget_user_daily_usd=1.0)
        sid = client.post("/api/agent/sessions", json={"prompt": "Summarise my notes"},
                          headers=ALICE).get_json()["sessionId"]
        client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE)
        deliver(rt)
        [tool] = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()["pendingApprovals"]
        assert tool["tool"] == "save_memory" and script.counts["act"] == 1
        # Meanwhile the admin lowers alice's daily cap: no room left for the reflection on that act.
        spent_day, _ = rt.services.budgets.spent("alice")
        assert client.patch("/api/admin/users/alice", json={"limits": {"dailyBudgetUsd": spent_day + 0.0001}},
                            headers=ADMIN).status_code == 200
        decide(rt, tool["approvalId"], "approve")
        deliver(rt)
        [budget] = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()["pendingApprovals"]
        assert budget["kind"] == "budget" and budget["budgetScope"] == "user_day"
        assert client.get("/api/agent/memories", headers=ALICE).get_json().get("memories", []) == []  # not run yet
        assert script.counts.get("reflect", 0) == 0
        decide(rt, budget["approvalId"], "approve")
        deliver(rt)
        while pending := client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()["pendingApprovals"]:
            decide(rt, pending[0]["approvalId"], "approve")
            deliver(rt)
        session = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
        assert session["status"] == "completed", session
        memories = client.get("/api/agent/memories", headers=ALICE).get_json()["memories"]
        assert [m["text"] for m in memories] == ["a note"]  # the approved tool ran exactly once
        assert script.counts["reflect"] >= 1
    finally:
        set_runtime(None)


def take_the_room_left(rt: Runtime) -> None:
    """A call of alice's elsewhere reserves all the room her $1 daily cap has left (within 1e-7)."""
    budgets, low, high = rt.services.budgets, 0.0, 1.0
    for _ in range(24):
        mid = (low + high) / 2
        if budgets.reserve("alice", "bud_probe", mid, daily_usd=1.0, monthly_usd=0.0, ttl_s=600) is None:
            budgets.release("alice", "bud_probe")
            low = mid
        else:
            high = mid
    assert budgets.reserve("alice", "bud_elsewhere", low, daily_usd=1.0, monthly_usd=0.0, ttl_s=600) is None


def test_a_chat_plans_review_is_reserved_against_the_users_caps(docstore: DocStore) -> None:
    """``agent_create_plan`` in ``agent_review`` mode: the review call is reserved like planning;
    when another call of the user holds the room meanwhile, the review is not made and the plan
    waits as ``needs_changes`` saying why (the chat run goes on)."""
    from shared.models.base import ModelRequest, Turn
    from shared.models.scripted import FunctionModel, call, calls_turn, text_turn

    script = Script()
    answers: list[dict[str, Any]] = []
    reviews: list[str] = []

    def answer(request: ModelRequest) -> Turn:
        if "You review an execution plan" in request.system_instruction:
            reviews.append("asked")
            return text_turn('{"verdict": "approved"}')
        if "[CONTEXT:" in request.system_instruction:
            results = [p.function_response for p in request.turns[-1].parts if p.function_response is not None]
            if results:
                answers.append(dict(results[0].response))
                return text_turn("I will explain the plan.")
            return calls_turn(call("agent_create_plan", {"objective": "Summarise notes",
                                                         "execution_mode": "agent_review"}))
        turn = script.answer(request)
        if "planning module" in request.system_instruction:  # planned: another call of alice's takes the room
            take_the_room_left(rt)
        return turn

    rt = Runtime(make_settings(model_max_output_tokens=200, budget_user_daily_usd=1.0), store=docstore,
                 model=FunctionModel(answer, name="gemini-3-flash-preview"), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    set_runtime(rt)
    try:
        client = create_app().test_client()
        body = client.post("/api/agent/run", json={"prompt": "plan and review"}, headers=ALICE).get_json()
        deliver(rt)
    finally:
        set_runtime(None)
    assert reviews == [] and script.counts["plan"] == 1  # planned, never reviewed
    [got] = answers
    assert got["status"] == "needs_changes" and "BUDGET_EXCEEDED" in got["notes"], got
    snap = rt.runs.get_run(body["runId"])
    assert snap is not None and snap.run.status == "completed"
