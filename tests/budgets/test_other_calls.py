"""The model calls made outside a unit's loop are reserved against the user's money caps too
(docs/budgets.md, "Other model calls"), on both stores: the goals planner (``POST /agent/run``),
the ``google_web_search`` tool in a run, the host agent's LLM planner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from functions_framework import create_app

from shared.config import Settings
from shared.models.factory import clear_model_cache
from shared.openapi import build_openapi
from shared.runtime import Runtime, set_runtime
from shared.state import paths
from shared.state.docstore import DocStore
from tests.e2e.test_openapi import check
from tests.fakes.fake_gemini import FakeGemini, Reply
from tests.fakes.fake_gemini import text as text_part
from tests.goals.plans import milestone, new_plan_answer


def env_runtime(docstore: DocStore, gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, daily_usd: float) -> Runtime:
    """A runtime on ``docstore``, the environment pointing at ``gemini`` with a daily cap (the goals function
    and the host agent read their settings from the environment)."""
    for key, value in {**gemini.env(), "MODEL_MAX_RETRIES": "0", "BUDGET_USER_DAILY_USD": str(daily_usd)}.items():
        monkeypatch.setenv(key, value)
    clear_model_cache()
    rt = Runtime(Settings.from_env(), store=docstore)
    set_runtime(rt)
    return rt


def plan_reply() -> Reply:
    return Reply([text_part(json.dumps(new_plan_answer("Run a marathon", milestone("Train", "Run 5 km"))))],
                 model_version="gemini-3-flash-preview")  # priced: the ledger costs it


def test_the_goals_planner_is_reserved_against_the_users_caps(
        docstore: DocStore, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    gemini = fake_gemini
    body = {"userId": "alice", "sessionId": "sess_1", "message": "I want to run a marathon."}
    try:
        # $0.01 a day: less than one call's maximum (8192 output tokens at $3 per million).
        rt = env_runtime(docstore, gemini, monkeypatch, 0.01)
        client = create_app("goals", "main.py", "http").test_client()
        gemini.push(plan_reply())
        refused = client.post("/agent/run", json=body)
        assert refused.status_code == 429, refused.get_json()
        error = refused.get_json()["error"]
        assert error["code"] == "BUDGET_EXCEEDED" and error["details"]["scope"] == "user_day"
        assert int(refused.headers["Retry-After"]) == error["details"]["retryAfterS"] >= 1
        check(build_openapi(), "/agent/run", "post", refused)  # the 429 is documented
        assert gemini.requests == []  # refused before the model was called
        assert rt.usage.for_unit("alice", "sess_1") == []

        # The backend's own requests (no userId) are not a user's: not capped.
        anonymous = client.post("/agent/run", json={k: v for k, v in body.items() if k != "userId"})
        assert anonymous.status_code == 200, anonymous.get_json()
        assert len(gemini.requests) == 1

        # With room, the call is made, counted, and its reservation released.
        rt = env_runtime(docstore, gemini, monkeypatch, 1.0)
        gemini.push(plan_reply())
        made = client.post("/agent/run", json=body)
        assert made.status_code == 200, made.get_json()
        assert len(gemini.requests) == 2
        spent_day, _ = rt.services.budgets.spent("alice")
        entries = rt.usage.for_unit("alice", "sess_1")
        assert entries and spent_day == sum(e.cost_usd for e in entries) > 0
        budget = docstore.get(paths.limit("alice", "budget"))
        assert budget is not None and budget.data["reserved"] == {}
    finally:
        set_runtime(None)
        clear_model_cache()


def test_a_runs_web_search_is_reserved_against_the_users_caps(docstore: DocStore, fake_gemini: FakeGemini) -> None:
    """``google_web_search`` inside a run: with no room left under alice's daily cap (another call of
    hers holds it), the search is not made and the model is told why; the run's next model call
    meets the same cap and pauses for a budget approval. With room, it is made and released."""
    from shared.durable.dispatcher import RecordingDispatcher
    from shared.models.gemini import GeminiModel
    from shared.state.records import UserRecord
    from tests.budgets.test_plan_budgets import take_the_room_left
    from tests.connectors.loop_support import start
    from tests.fakes.fake_gemini import Received, call

    searches: list[str] = []

    def answer(received: Received) -> Reply:
        if received.google_search:
            searches.append("made")
            # bounded like the loop's calls, so its reserved maximum holds
            assert received.body["generationConfig"]["maxOutputTokens"] == settings.model_max_output_tokens
            return Reply.text("Python 3.14 came out in October 2025.")
        told = [p["functionResponse"]["response"] for p in received.body["contents"][-1]["parts"]
                if "functionResponse" in p]
        if told:
            return Reply.text(f"told: {json.dumps(told[0])}")
        if crowded:
            take_the_room_left(rt)  # meanwhile, another call of alice's holds all the room left
        return Reply([call("google_web_search", {"query": "python 3.14 release date"})])

    fake_gemini.handler = answer
    settings = fake_gemini.settings(Settings(state_backend="sqlite", auth_mode="local", dispatcher="none",
                                             run_deadline_s=30.0, budget_user_daily_usd=1.0))
    with GeminiModel(settings) as model:
        rt = Runtime(settings, store=docstore, model=model, dispatcher=RecordingDispatcher())
        rt.users.put_user(UserRecord(uid="alice", trust_level="supervised"))
        crowded = False
        made = start(rt, "When was Python 3.14 released?")
        assert made.status == "completed", made
        assert searches == ["made"]
        budget = docstore.get(paths.limit("alice", "budget"))
        assert budget is not None and budget.data["reserved"] == {}  # reserved, then released

        crowded = True
        result = start(rt, "When was Python 3.14 released?")
    assert searches == ["made"]  # the second search was not made
    search, pause = rt.runs.list_actions(result.run_id)
    assert (search.tool, search.outcome) == ("google_web_search", "error")
    assert "google_web_search: BUDGET_EXCEEDED: your daily budget" in str(search.error), search.error
    assert result.status == "awaiting_confirmation"
    assert pause.tool == "budget_increase" and pause.args["scope"] == "user_day"


def test_the_host_agents_planner_is_reserved_against_the_users_caps(
        docstore: DocStore, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The host agent's LLM planner (``--planner llm --uid alice``): no room under alice's cap, the
    session stops ``blocked`` with ``BUDGET_EXCEEDED`` before any model call, telling the user why;
    with room, every call is made, counted and released. The backend's own uid is not capped."""
    from hostagent.cli import build_planner
    from tests.hostagent.support import GOAL, run
    from tests.hostagent.test_llm_planner import _context_of, _first_user_texts, booking_brain

    fake_gemini.handler = lambda r: Reply([text_part(json.dumps(booking_brain(_context_of(_first_user_texts(r)))))],
                                          model_version="gemini-3-flash-preview")
    try:
        env_runtime(docstore, fake_gemini, monkeypatch, 0.01)  # less than one call's maximum
        refused = run(tmp_path / "refused", goal=GOAL, planner=build_planner("llm", uid="alice", store=docstore))
        assert refused.result.outcome == "blocked" and "BUDGET_EXCEEDED" in refused.result.reason
        assert fake_gemini.requests == []  # stopped before the model was called
        [said] = [r for r in refused.logged("recovery") if r.get("code") == "BLOCKED"]
        assert "daily budget" in said["reason"]

        made = run(tmp_path / "backend", goal=GOAL, planner=build_planner("llm", uid="backend:host-agent",
                                                                          unit_id="s0", store=docstore))
        assert made.result.outcome == "completed" and len(fake_gemini.requests) == 7

        rt = env_runtime(docstore, fake_gemini, monkeypatch, 1.0)
        made = run(tmp_path / "made", goal=GOAL, planner=build_planner("llm", uid="alice", unit_id="s1",
                                                                       store=docstore))
        assert made.result.outcome == "completed" and len(fake_gemini.requests) == 14
        entries = rt.usage.for_unit("alice", "s1")
        assert len(entries) == 7 and rt.services.budgets.spent("alice")[0] == sum(e.cost_usd for e in entries) > 0
        budget = docstore.get(paths.limit("alice", "budget"))
        assert budget is not None and budget.data["reserved"] == {}
    finally:
        set_runtime(None)
        clear_model_cache()


PRICED = "gemini-3-flash-preview"


def test_a_runs_web_search_is_in_its_cost_and_its_budget(docstore: DocStore, fake_gemini: FakeGemini) -> None:
    """The search's cost is the run's too: in its ``costUsd`` and ``usage`` (the sum of its ledger
    entries, the search's included), so its ``budgetUsd`` counts it. A search the run's budget has
    no room for is not made; the model is told, and the next model call pauses for the budget."""
    from shared.api import RunRequest
    from shared.durable.dispatcher import RecordingDispatcher
    from shared.models.gemini import GeminiModel
    from shared.state.records import UserRecord
    from tests.fakes.fake_gemini import Received, call, usage

    searches: list[str] = []

    def answer(received: Received) -> Reply:
        if received.google_search:
            searches.append("made")
            return Reply.text("Python 3.14 came out in October 2025.", usage=usage(prompt=300, output=2_000),
                              model_version=PRICED)
        if any("functionResponse" in p for p in received.body["contents"][-1]["parts"]):
            return Reply.text("It came out in October 2025.", usage=usage(prompt=900, output=20), model_version=PRICED)
        # a long first answer: what the run spent leaves a search's maximum no room under $0.04
        return Reply([call("google_web_search", {"query": "python 3.14 release date"})],
                     usage=usage(prompt=800, output=8_000), model_version=PRICED)

    fake_gemini.handler = answer
    settings = fake_gemini.settings(Settings(state_backend="sqlite", auth_mode="local", dispatcher="none",
                                             run_deadline_s=30.0))
    with GeminiModel(settings) as model:
        rt = Runtime(settings, store=docstore, model=model, dispatcher=RecordingDispatcher())
        rt.users.put_user(UserRecord(uid="alice", trust_level="supervised"))

        def run(budget_usd: float) -> str:
            started = rt.agent.start("alice", RunRequest(prompt="When was Python 3.14 released?", budgetUsd=budget_usd))
            result = rt.agent.run(rt.agent.context(started))
            return result.run_id

        roomy = run(1.0)
        assert searches == ["made"]
        record = rt.runs.get_run_for("alice", roomy).run
        assert record.status == "completed"
        ledger = rt.usage.for_unit("alice", roomy)
        [search] = [e for e in ledger if e.component == "web_search"]
        assert search.cost_usd > 0
        assert record.cost_usd == pytest.approx(sum(e.cost_usd for e in ledger), abs=1e-8)
        assert record.usage.requests == sum(e.usage.requests for e in ledger) == 3
        assert record.usage.output_tokens == 8_000 + 2_000 + 20

        tight = run(0.04)
    assert searches == ["made"]  # the second search was not made
    found, pause = rt.runs.list_actions(tight)
    assert (found.tool, found.outcome) == ("google_web_search", "error")
    assert "google_web_search: BUDGET_EXCEEDED: this run's budget" in str(found.error), found.error
    assert pause.tool == "budget_increase" and pause.args["scope"] == "run"
    assert rt.runs.get_run_for("alice", tight).run.status == "awaiting_confirmation"
