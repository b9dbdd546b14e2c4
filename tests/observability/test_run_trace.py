"""A run's trace as the console's waterfall reads it (``GET /api/agent/runs/{runId}/trace``,
issue 30), on both stores: a run paused three times at its money budget and approved each time
shows one ``invoke_agent`` span per stretch of work and one wait per pause between them, every
model call as ``chat {model}`` inside the invocation it started in (tokens and cost: the
ledger's), every tool call as ``execute_tool {tool}``; another user's run answers 404."""

from __future__ import annotations

from typing import Any

import pytest

from bench.budget_reliability import STEPS
from devserver import create_app
from shared.runtime import set_runtime
from shared.state.docstore import DocStore
from tests.budgets.test_budgets import ALICE, decide, inbox, runtime
from tests.plans.test_sessions_http import deliver

BOB = {"Authorization": "Bearer dev:bob"}


def test_a_runs_trace_shows_its_invocations_across_the_pauses(docstore: DocStore) -> None:
    rt, _ = runtime(docstore)
    set_runtime(rt)
    try:
        client = create_app().test_client()
        run_id = client.post("/api/agent/run", json={"prompt": "count t1", "budgetUsd": 0.002},
                             headers=ALICE).get_json()["runId"]
        pauses = 0
        while client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()["status"] == "awaiting_confirmation":
            open_trace = client.get(f"/api/agent/runs/{run_id}/trace", headers=ALICE).get_json()
            assert open_trace["spans"][-1]["kind"] == "wait" and open_trace["spans"][-1]["open"] is True
            [pending] = [a for a in inbox(client) if a["status"] == "pending"]
            decide(rt, pending["approvalId"], "approve")
            deliver(rt)
            pauses += 1
            assert pauses < 10
        run = client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()
        answer = client.get(f"/api/agent/runs/{run_id}/trace", headers=ALICE)
        assert client.get(f"/api/agent/runs/{run_id}/trace", headers=BOB).status_code == 404
    finally:
        set_runtime(None)
    assert answer.status_code == 200 and run["status"] == "completed" and pauses >= 2
    trace = answer.get_json()
    spans: list[dict[str, Any]] = trace["spans"]
    kinds = {k: [s for s in spans if s["kind"] == k] for k in ("invocation", "model", "tool", "wait")}
    assert trace["invocations"] == len(kinds["invocation"]) == pauses + 1
    assert {s["name"] for s in kinds["invocation"]} == {"invoke_agent chat"}
    assert len(kinds["wait"]) == pauses and all(w["name"] == "awaiting budget approval" and not w["open"]
                                                and w["approvalKind"] == "budget" for w in kinds["wait"])
    # Each wait sits between two stretches of work.
    for before, wait, after in zip(kinds["invocation"], kinds["wait"], kinds["invocation"][1:], strict=False):
        assert before["offsetMs"] + before["durationMs"] <= wait["offsetMs"] + 0.01
        assert wait["offsetMs"] + wait["durationMs"] <= after["offsetMs"] + 0.01
    # Model calls: the ledger's, each in the invocation it started in.
    entries = rt.usage.for_unit("alice", run_id)
    assert len(kinds["model"]) == len(entries) == STEPS
    assert sum(s["inputTokens"] for s in kinds["model"]) == sum(e.usage.input_tokens for e in entries)
    assert sum(s["costUsd"] for s in kinds["model"]) == pytest.approx(run["costUsd"]) == pytest.approx(trace["costUsd"])
    assert {s["name"] for s in kinds["model"]} == {f"chat {entries[0].model}"}
    by_id = {s["spanId"]: s for s in kinds["invocation"]}
    for span in kinds["model"] + kinds["tool"]:
        parent = by_id[span["parentId"]]
        assert parent["offsetMs"] <= span["offsetMs"] <= parent["offsetMs"] + parent["durationMs"] + 1
    # Every invocation after a pause made the call the budget had stopped (the first may have made none).
    assert {s["spanId"] for s in kinds["invocation"][1:]} <= {s["parentId"] for s in kinds["model"]}
    assert [s["name"] for s in kinds["tool"]] == ["execute_tool count_step"] * (STEPS - 1)
    assert all(s["outcome"] == "success" for s in kinds["tool"])
    assert [s["offsetMs"] for s in spans] == sorted(s["offsetMs"] for s in spans)
