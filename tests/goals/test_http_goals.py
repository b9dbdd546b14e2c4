"""End to end: the goals function over HTTP, the real google-genai SDK, the fake Gemini server."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.goals.workflow import NEW_GOAL_REPLY, NEW_PLAN_REPLY, UPDATE_FAILED_REPLY, UPDATED_REPLY
from tests.fakes.fake_gemini import Fail, FakeGemini, Reply, thought
from tests.fakes.fake_gemini import text as text_part
from tests.goals.plans import PORTFOLIO_PLAN, add, edit_answer, milestone, new_plan_answer, request
from tests.goals.schema import assert_valid_response

CONTEXT = {"existingGoals": [{"id": "g_01", "title": "Learn Kotlin"}],
           "calendarEvents": [{"title": "Work Meeting", "start": "2025-11-03T14:00:00Z",
                               "end": "2025-11-03T15:00:00Z"}]}


def answer(data: dict[str, Any]) -> Reply:
    """A Gemini JSON-mode answer, with a thought summary first as Gemini 3 sends one."""
    return Reply([thought("Planning the milestones."), text_part(json.dumps(data))])


def post(client: FlaskClient, body: Any) -> tuple[int, dict[str, Any]]:
    resp = client.post("/agent/run", json=body)
    data = resp.get_json()
    assert isinstance(data, dict), resp.data
    return resp.status_code, data


def follow(previous: dict[str, Any], message: str, plan: dict[str, Any] | None) -> dict[str, Any]:
    """The next request the backend would send after persisting ``previous``."""
    state = dict(previous["state"])
    if plan is not None:
        state["proposed_plan"] = plan
    return {"userId": "u_001", "sessionId": "sess_goal_001", "message": message, "context": CONTEXT,
            "state": state}


def test_the_four_walkthroughs(goals_client: FlaskClient, fake_gemini: FakeGemini) -> None:
    # Case 1: a new plan.
    fake_gemini.push(answer(new_plan_answer(
        "Build Portfolio Website", milestone("Design Phase", "Sketch layouts"), milestone("Build Phase", "Code it"),
        summary="Two phases to get you online.")))
    status, case1 = post(goals_client, {"userId": "u_001", "sessionId": "sess_goal_001",
                                        "message": "I want to build a portfolio website.", "context": CONTEXT})
    assert status == 200, case1
    assert_valid_response(case1)
    assert case1["reply"] == f"{NEW_PLAN_REPLY} Two phases to get you online."
    assert case1["action"]["type"] == "save_preview" and case1["action"]["payload"]["iteration"] == 1
    assert case1["state"] == {"step": "plan_generated", "iteration": 1, "sessionActive": True}
    sent = fake_gemini.requests[0]
    assert sent.stream and sent.headers["x-goog-api-key"] == fake_gemini.api_key
    config = sent.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert "milestones" in config["responseJsonSchema"]["properties"]
    assert "Gritto" in sent.body["systemInstruction"]["parts"][0]["text"]
    prompt = json.loads(sent.body["contents"][0]["parts"][0]["text"])
    assert prompt["existingGoals"] == CONTEXT["existingGoals"]
    assert prompt["calendarEvents"] == CONTEXT["calendarEvents"]

    # The backend saves the preview and gives it an id.
    preview = {**case1["action"]["payload"]["goalPreview"], "id": "gp_101"}

    # Case 2: a refinement.
    fake_gemini.push(answer(edit_answer(add(milestone("Mobile Design", "Phone layouts"), after="M1"),
                                        summary="Added mobile design.")))
    status, case2 = post(goals_client, follow(case1, "Can you add a milestone for mobile design?", preview))
    assert status == 200, case2
    assert_valid_response(case2)
    assert case2["reply"] == f"{UPDATED_REPLY} Added mobile design."
    assert case2["state"] == {"step": "plan_iteration", "iteration": 2, "sessionActive": True}
    refined = case2["action"]["payload"]["goalPreview"]
    assert case2["action"]["payload"]["iteration"] == 2
    assert [m["title"] for m in refined["milestones"]] == ["Design Phase", "Mobile Design", "Build Phase"]
    assert refined["milestones"][0] == preview["milestones"][0]
    assert refined["milestones"][2] == preview["milestones"][1]
    edit_prompt = json.loads(fake_gemini.requests[1].body["contents"][0]["parts"][0]["text"])
    assert edit_prompt["currentPlan"]["milestones"][0]["ref"] == "M1"
    assert "milestoneChanges" in fake_gemini.requests[1].body["generationConfig"]["responseJsonSchema"]["properties"]

    # Case 3: approval; the model is not called.
    status, case3 = post(goals_client, follow(case2, "Looks good!", refined))
    assert status == 200, case3
    assert_valid_response(case3)
    assert case3["reply"] == "I've created a goal for you: Build Portfolio Website \U0001f3af"
    assert case3["action"]["type"] == "finalize_goal"
    assert case3["action"]["payload"] == {"goalPreviewId": "gp_101", "goal": refined["goal"],
                                          "milestones": refined["milestones"]}
    assert case3["state"] == {"step": "finalized", "iteration": 2, "sessionActive": False}
    assert len(fake_gemini.requests) == 2

    # Case 4: a new goal after finalisation starts at iteration 1 again.
    fake_gemini.push(answer(new_plan_answer("Learn Flutter", summary="")))
    status, case4 = post(goals_client, follow(case3, "Now I want to start learning Flutter.", refined))
    assert status == 200, case4
    assert_valid_response(case4)
    assert case4["reply"] == NEW_GOAL_REPLY
    assert case4["action"]["payload"]["iteration"] == 1
    assert case4["action"]["payload"]["goalPreview"]["goal"]["title"] == "Learn Flutter"
    assert case4["state"] == {"step": "plan_generated", "iteration": 1, "sessionActive": True}
    fake_gemini.assert_complete()


def test_the_spec_input_example_is_accepted(goals_client: FlaskClient, fake_gemini: FakeGemini) -> None:
    body = {
        "userId": "u_001", "sessionId": "sess_goal_001", "message": "Can you move the design phase to next week?",
        "context": CONTEXT,
        "state": {"step": "plan_generated", "iteration": 1, "sessionActive": True,
                  "proposed_plan": {"goal": {"title": "Build Portfolio Website"},
                                    "milestones": [{"title": "Design Phase", "tasks": []}]}},
    }
    fake_gemini.push(answer(edit_answer({"action": "replace", "ref": "M1", "milestone": milestone(
        "Design Phase", {"title": "Sketch", "start": "2025-11-10T09:00:00Z", "end": "2025-11-10T10:00:00Z"})})))
    status, out = post(goals_client, body)
    assert status == 200, out
    assert_valid_response(out)
    assert out["action"]["payload"]["goalPreview"]["milestones"][0]["tasks"][0]["start"] == "2025-11-10T09:00:00Z"


def test_an_answer_that_stays_invalid_leaves_everything_as_it_was(
        goals_client: FlaskClient, fake_gemini: FakeGemini) -> None:
    fake_gemini.push(Reply.text("I moved it!"), answer({"summary": "x", "milestoneChanges": "all of them"}))
    body = request("Move the design phase", plan=PORTFOLIO_PLAN, step="plan_iteration", iteration=3)
    status, out = post(goals_client, body)
    assert status == 200, out
    assert_valid_response(out)
    assert out == {"reply": UPDATE_FAILED_REPLY, "action": {"type": "none", "payload": {}},
                   "state": {"step": "plan_iteration", "iteration": 3, "sessionActive": True}}
    repair = fake_gemini.requests[1].body["contents"]
    assert [c["role"] for c in repair] == ["user", "model", "user"]
    fake_gemini.assert_complete()


@pytest.mark.parametrize(("fail", "status", "code"), [(Fail(503), 503, "MODEL_UNAVAILABLE"),
                                                       (Fail(400, "bad key"), 502, "MODEL_ERROR")])
def test_gemini_failures_are_explicit_errors(goals_client: FlaskClient, fake_gemini: FakeGemini,
                                             fail: Fail, status: int, code: str) -> None:
    fake_gemini.push(fail)
    got, out = post(goals_client, request("I want to learn Kotlin", step=None))
    assert got == status and out["error"]["code"] == code, out


BAD = [
    ({"userId": "u_001"}, "message"),
    ({"message": 42}, "message"),
    ({"message": "   "}, "message"),
    ({"message": "hi", "state": {"iteration": "1"}}, "state.iteration"),
    ({"message": "hi", "state": {"iteration": -1}}, "state.iteration"),
    ({"message": "hi", "state": {"sessionActive": "yes"}}, "state.sessionActive"),
    ({"message": "hi", "state": {"step": "draft"}}, "state.step"),
    ({"message": "hi", "state": "plan_generated"}, "state"),
    ({"message": "hi", "state": {"proposed_plan": {"milestones": []}}}, "state.proposed_plan.goal"),
    ({"message": "hi", "state": {"proposed_plan": {"goal": {"title": ""}}}}, "state.proposed_plan.goal.title"),
    ({"message": "hi", "state": {"proposed_plan": {"goal": {"title": "G"}, "milestones": {"title": "M"}}}},
     "state.proposed_plan.milestones"),
    ({"message": "hi", "state": {"proposed_plan": {"goal": {"title": "G"}, "milestones": [{"tasks": []}]}}},
     "state.proposed_plan.milestones.0.title"),
    ({"message": "hi", "state": {"proposed_plan": {"goal": {"title": "G"}, "milestones": [
        {"title": "M", "tasks": [{"title": "T", "dueDate": "next week"}]}]}}},
     "state.proposed_plan.milestones.0.tasks.0.dueDate"),
    ({"message": "hi", "context": {"calendarEvents": [{"title": "x", "start": "soon"}]}},
     "context.calendarEvents.0.start"),
    ({"message": "hi", "context": {"existingGoals": "Learn Kotlin"}}, "context.existingGoals"),
]


@pytest.mark.parametrize(("body", "field"), BAD)
def test_bad_input_is_a_400_naming_the_field(goals_client: FlaskClient, fake_gemini: FakeGemini,
                                             body: dict[str, Any], field: str) -> None:
    status, out = post(goals_client, body)
    assert status == 400, out
    assert out["error"]["code"] == "INVALID_REQUEST"
    assert field in [e["field"] for e in out["error"]["details"]["errors"]], out
    assert fake_gemini.requests == []


def test_not_json_and_wrong_method(goals_client: FlaskClient) -> None:
    resp = goals_client.post("/agent/run", data=b"not json", content_type="application/json")
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "INVALID_JSON"
    resp = goals_client.get("/agent/run")
    assert resp.status_code == 405


def test_offline_planner_without_a_key(goals_client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GEMINI_API_KEY", "GEMINI_USE_VERTEX"):
        monkeypatch.delenv(key, raising=False)
    status, first = post(goals_client, request("I want to learn Kotlin", step=None))
    assert status == 200 and "[offline planner" in first["reply"]
    assert_valid_response(first)
    plan = first["action"]["payload"]["goalPreview"]
    status, second = post(goals_client, follow(first, "Add a milestone for a mobile app", plan))
    assert_valid_response(second)
    assert [m["title"] for m in second["action"]["payload"]["goalPreview"]["milestones"]][-1] == "A mobile app"
    status, third = post(goals_client, follow(second, "looks good \U0001f44d",
                                              second["action"]["payload"]["goalPreview"]))
    assert_valid_response(third)
    assert third["action"]["type"] == "finalize_goal"


def test_importing_the_entry_point_loads_neither_the_sdk_nor_the_state_store() -> None:
    code = ("import sys, functions.goals\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('google.genai', 'shared.state',"
            " 'google.cloud.', 'google.auth')))\n"
            "assert not bad, bad\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("nulls", [
    {"state": None},
    {"context": None},
    {"state": None, "context": None},
    {"context": {"existingGoals": None, "calendarEvents": None}, "state": {"proposed_plan": None, "step": None}},
])
def test_null_state_and_context_are_a_new_session(goals_client: FlaskClient, fake_gemini: FakeGemini,
                                                  nulls: dict[str, Any]) -> None:
    fake_gemini.push(answer(new_plan_answer("Learn Kotlin", summary="")))
    status, out = post(goals_client, {"userId": "u_001", "sessionId": None, "message": "I want to learn Kotlin.",
                                      **nulls})
    assert status == 200, out
    assert_valid_response(out)
    assert out["reply"] == NEW_PLAN_REPLY
    assert out["state"] == {"step": "plan_generated", "iteration": 1, "sessionActive": True}
    prompt = json.loads(fake_gemini.requests[0].body["contents"][0]["parts"][0]["text"])
    assert prompt["existingGoals"] == [] and prompt["calendarEvents"] == []
    fake_gemini.assert_complete()


@pytest.mark.parametrize("state", [None, {}, {"step": "plan_generated", "iteration": 1, "proposed_plan": None},
                                   {"step": "plan_iteration", "iteration": 2, "proposed_plan": {}}])
def test_approval_with_no_plan_is_a_new_plan_request(goals_client: FlaskClient, fake_gemini: FakeGemini,
                                                     state: dict[str, Any] | None) -> None:
    fake_gemini.push(answer(new_plan_answer("Get fit", milestone("Start", "Walk 20 minutes"),
                                            summary="A gentle start.")))
    body: dict[str, Any] = {"userId": "u_001", "sessionId": "sess_goal_001", "message": "Looks good!",
                            "context": CONTEXT}
    if state is not None:
        body["state"] = state
    status, out = post(goals_client, body)
    assert status == 200, out
    assert_valid_response(out)
    assert out["reply"] == "Here\u2019s a plan based on your message! A gentle start."
    assert out["action"]["type"] == "save_preview" and out["action"]["payload"]["iteration"] == 1
    assert out["action"]["payload"]["goalPreview"]["goal"]["title"] == "Get fit"
    assert out["state"] == {"step": "plan_generated", "iteration": 1, "sessionActive": True}
    # Exactly one model call, for a new plan (not an edit of a plan that does not exist).
    [sent] = fake_gemini.requests
    assert "milestoneChanges" not in sent.body["generationConfig"]["responseJsonSchema"]["properties"]
    prompt = json.loads(sent.body["contents"][0]["parts"][0]["text"])
    assert prompt["request"] == "Looks good!" and "currentPlan" not in prompt
    fake_gemini.assert_complete()


def test_a_task_scheduled_today_is_repaired_over_http(goals_client: FlaskClient, fake_gemini: FakeGemini) -> None:
    def scheduled(start: str, end: str) -> dict[str, Any]:
        return new_plan_answer("Learn Kotlin", milestone("Basics", {"title": "Koans", "start": start, "end": end}))

    fake_gemini.push(answer(scheduled("2025-11-01T18:00:00Z", "2025-11-01T19:00:00Z")),
                     answer(scheduled("2025-11-04T18:00:00Z", "2025-11-04T19:00:00Z")))
    status, out = post(goals_client, request("I want to learn Kotlin.", step=None))
    assert status == 200, out
    assert fake_gemini.requests[0].body["contents"][0]["parts"][0]["text"].count('"today": "2025-11-01"') == 1
    repair = fake_gemini.requests[1].body["contents"][-1]["parts"][0]["text"]
    assert "not after today (2025-11-01)" in repair
    assert out["action"]["payload"]["goalPreview"]["milestones"][0]["tasks"][0]["start"] == "2025-11-04T18:00:00Z"
    fake_gemini.assert_complete()


def test_the_users_message_is_not_logged_at_info(goals_client: FlaskClient, fake_gemini: FakeGemini,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    mark = "msgsecreta41d"  # one word: the consent clauses keep it as written
    caplog.set_level(logging.DEBUG)
    fake_gemini.push(answer(edit_answer(add(milestone("Testing", "Check links")), summary="Added testing.")),
                     answer(new_plan_answer("Learn Kotlin")))
    for body in (request(f"Looks good but add {mark} testing", plan=PORTFOLIO_PLAN),
                 request(f"Looks good! {mark}", step=None),
                 request("Looks good!", plan=PORTFOLIO_PLAN)):
        status, out = post(goals_client, body)
        assert status == 200, out
    fake_gemini.assert_complete()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert sum("goals: routing" in line for line in loud) == 3, loud
    for text in (mark, "looks good"):
        assert not [line for line in loud if text.casefold() in line.casefold()], loud
    assert mark.casefold() in " ".join(r.getMessage() for r in caplog.records).casefold()  # at DEBUG
