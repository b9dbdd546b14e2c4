"""Money budgets that pause instead of kill (issue 30, docs/budgets.md), on both stores: a run's
``budgetUsd`` and the user's daily cap are checked before each model call at the call's maximum
cost; an overrun pauses the run with a budget approval in the inbox (spend so far, proposed
limit); approving raises the limit and the run goes on exactly where it stopped (no model call or
tool call repeated or lost); rejecting ends it ``BUDGET_EXCEEDED`` with its work kept; concurrent
runs of one user overshoot the daily cap by at most one call each."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from flask.testing import FlaskClient

from bench.budget_reliability import STEPS, World
from devserver import create_app
from shared.api import ApproveRequest, RunRequest
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.runtime import Runtime, set_runtime
from shared.state import paths
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.plans.test_sessions_http import deliver

ALICE = {"Authorization": "Bearer dev:alice"}


def runtime(store: DocStore, **settings: Any) -> tuple[Runtime, World]:
    """Runs that call ``count_step`` STEPS - 1 times, then answer; each model call reports 400 input
    and 60 output tokens (0.00038 USD) and never crashes (bench/budget_reliability.py's world)."""
    world = World(crash_share=0.0, seed=0)
    config = make_settings(model_max_output_tokens=200, **settings)
    rt = Runtime(config, store=store, model=world.model(config), registry=world.registry(),
                 authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    return rt, world


def once_each(world: World, label: str, steps: int) -> bool:
    """Every model call and tool call of ``label`` made exactly once, none beyond ``steps``."""
    return (world.model_calls == Counter({f"{label}:{i}": 1 for i in range(steps)})
            and world.executions == Counter({f"{label}:{i}": 1 for i in range(1, steps)}))


def decide(rt: Runtime, approval_id: str, decision: str) -> None:
    from shared.agent.approvals import decide as decide_approval

    decide_approval(rt.services, rt.dispatcher, "alice", ApproveRequest(approvalId=approval_id, decision=decision))


def inbox(client: FlaskClient) -> list[dict[str, Any]]:
    body = client.get("/api/agent/approvals", headers=ALICE).get_json()
    assert body["ok"] is True, body
    return body["approvals"]  # type: ignore[no-any-return]


def test_a_run_budget_pauses_and_approving_goes_on_exactly_where_it_stopped(docstore: DocStore) -> None:
    rt, world = runtime(docstore)
    set_runtime(rt)
    try:
        client = create_app().test_client()
        body = client.post("/api/agent/run", json={"prompt": "count r1", "budgetUsd": 0.002}, headers=ALICE).get_json()
        run_id = body["runId"]
        assert body["status"] == "awaiting_confirmation", body
        pauses = 0
        while True:
            [pending] = [a for a in inbox(client) if a["status"] == "pending"]
            assert pending["kind"] == "budget" and pending["tool"] == "budget_increase"
            assert pending["budgetScope"] == "run" and pending["limitUsd"] >= 0.002
            assert pending["spentUsd"] <= pending["limitUsd"] < pending["proposedLimitUsd"]
            assert "spent" in pending["preview"] and pending["runId"] == run_id
            run = client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()
            assert run["costUsd"] == pytest.approx(pending["spentUsd"]) and run["budgetUsd"] == pending["limitUsd"]
            pauses += 1
            decide(rt, pending["approvalId"], "approve")
            deliver(rt)
            run = client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()
            if run["status"] != "awaiting_confirmation":
                break
            assert pauses < 10
        usage = client.get("/api/agent/usage", headers=ALICE).get_json()
        assert usage["budget"].get("dailyCapUsd") is None  # no cap configured
        assert usage["budget"]["spentTodayUsd"] == pytest.approx(run["costUsd"]) == pytest.approx(usage["costUsd"])
    finally:
        set_runtime(None)
    assert run["status"] == "completed", run
    assert pauses >= 1 and run["budgetUsd"] > 0.002
    assert once_each(world, "r1", STEPS)  # exactly where it stopped: every model call and tool call once
    entries = rt.usage.for_unit("alice", run_id)
    assert len(entries) == STEPS and run["costUsd"] == pytest.approx(sum(e.cost_usd for e in entries))


def test_rejecting_a_budget_approval_ends_the_run_with_its_work_kept(docstore: DocStore) -> None:
    rt, world = runtime(docstore)
    started = rt.agent.start("alice", RunRequest(prompt="count r2", budgetUsd=0.008))
    result = rt.agent.run(rt.agent.context(started))
    assert result.status == "awaiting_confirmation" and result.approval is not None
    assert "spent" in result.approval.preview
    done_before = Counter(world.executions)
    decide(rt, result.approval.id, "reject")
    deliver(rt)
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "failed" and snap.run.error is not None
    assert snap.run.error.code == "BUDGET_EXCEEDED" and "work done so far is kept" in snap.run.error.message
    assert world.executions == done_before and done_before  # nothing more ran, nothing was undone
    assert sum(world.model_calls.values()) == len(done_before)  # the call the budget stopped was never made


def test_concurrent_runs_of_a_user_overshoot_the_daily_cap_by_at_most_one_call_each(docstore: DocStore) -> None:
    cap = 0.015  # each call is reserved at ~0.0073 (the prompt estimate and 200 output tokens) and costs 0.00038
    rt, _ = runtime(docstore, budget_user_daily_usd=cap)
    results: list[Any] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        try:
            started = rt.agent.start("alice", RunRequest(prompt=f"count c{i}"))
            result = rt.agent.run(rt.agent.context(started))
            with lock:
                results.append(result)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    spent_day, _ = rt.services.budgets.spent("alice")
    entries = [e for r in results for e in rt.usage.for_unit("alice", r.run_id)]
    assert spent_day == pytest.approx(sum(e.cost_usd for e in entries), abs=1e-6)  # the counter is the ledger
    paused = [r for r in results if r.status == "awaiting_confirmation"]
    assert paused, [r.status for r in results]  # the cap was reached
    assert 0 < spent_day <= cap  # each call was reserved at its maximum: the cap holds
    assert rt.services.budgets.spent("alice")[1] == pytest.approx(spent_day)  # the month's counter too
    budget = rt.store.get(paths.limit("alice", "budget"))
    assert budget is not None and budget.data["reserved"] == {}  # every reservation was released
    for r in paused:
        assert r.approval is not None and "daily budget" in r.approval.preview
    assert all(r.status in ("completed", "awaiting_confirmation") for r in results)


def test_a_plan_sessions_budget_pauses_its_execution_and_approving_finishes_it(docstore: DocStore) -> None:
    from tests.observability.support import token_model
    from tests.plans.support import Script

    script = Script(acts={"Read the notes": [("search_memory", {"query": "notes"})]})
    rt = Runtime(make_settings(model_max_output_tokens=200), store=docstore, model=token_model(script),
                 authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    set_runtime(rt)
    try:
        client = create_app().test_client()
        created = client.post("/api/agent/sessions", json={"prompt": "Summarise my notes", "budgetUsd": 0.001},
                              headers=ALICE).get_json()
        sid = created["sessionId"]
        assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1},
                           headers=ALICE).status_code == 202
        deliver(rt)
        approved = 0
        while (session := client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json())["pendingApprovals"]:
            [pending] = session["pendingApprovals"]
            assert pending["kind"] == "budget" and pending["sessionId"] == sid and pending["budgetScope"] == "run"
            assert session["budgetUsd"] == pending["limitUsd"] and session["costUsd"] >= 0
            decide(rt, pending["approvalId"], "approve")
            deliver(rt)
            approved += 1
            assert approved < 10
    finally:
        set_runtime(None)
    assert approved >= 1 and session["status"] == "completed", session
    assert session["budgetUsd"] > 0.001


def test_a_turn_let_through_by_a_budget_approval_can_wait_for_its_own_tool_approval(docstore: DocStore) -> None:
    """The budget's action shares the turn index of the model turn it let through; resuming that
    turn's tool approval answers its calls only (found by the console's browser test)."""
    from shared.models.base import ModelRequest, ModelResponse, Part, Turn
    from shared.models.scripted import FunctionModel, call
    from shared.token_usage import Usage

    def answer(request: ModelRequest) -> ModelResponse:
        done = any(p.function_response is not None for p in request.turns[-1].parts)
        turn = Turn(role="model", parts=[Part(text="Saved.")] if done else [call("save_memory", {"text": "tea"})])
        return ModelResponse(turn=turn, finish_reason="STOP", usage=Usage(requests=1, input_tokens=100,
                                                                          output_tokens=20, total_tokens=120))

    rt = Runtime(make_settings(model_max_output_tokens=200), store=docstore,
                 model=FunctionModel(answer, name="gemini-3-flash-preview"),
                 authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    started = rt.agent.start("alice", RunRequest(prompt="remember tea", budgetUsd=1e-7))
    result = rt.agent.run(rt.agent.context(started))
    assert result.status == "awaiting_confirmation" and result.approval is not None
    decide(rt, result.approval.id, "approve")  # the budget: raised, the call is made; it asks for save_memory
    deliver(rt)
    [tool] = rt.runs.list_approvals_for("alice", "pending", 10)
    assert tool.tool == "save_memory"
    decide(rt, tool.approval_id, "approve")
    deliver(rt)
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.error is None, snap.run.error
    assert [m.text for m in rt.users.list_memories("alice")] == ["tea"]
    assert snap.run.status == "awaiting_confirmation"  # the answer's call: stopped by the budget again
