"""The three stages with an in-process scripted model: routing, state rules, refinement, repair."""

from __future__ import annotations

import copy
import json
import logging
from datetime import date
from typing import Any

import pytest

from shared.config import Settings
from shared.errors import DomainError, ModelError
from shared.goals.contracts import GoalsRequest
from shared.goals.service import run_goals
from shared.goals.workflow import (
    CREATE_FAILED_REPLY,
    NEW_GOAL_REPLY,
    NEW_PLAN_REPLY,
    UPDATE_FAILED_REPLY,
    UPDATED_REPLY,
    GoalPlanningWorkflow,
)
from shared.models.base import ModelRequest
from shared.models.scripted import ScriptedModel
from shared.web import http_status
from tests.goals.plans import (
    PORTFOLIO_PLAN,
    add,
    edit_answer,
    json_turn,
    milestone,
    new_plan_answer,
    remove,
    replace,
    request,
)
from tests.goals.schema import assert_valid_response

TODAY = date(2025, 11, 1)
MEETING = {"title": "Work Meeting", "start": "2025-11-03T14:00:00Z", "end": "2025-11-03T15:00:00Z"}


def run(body: dict[str, Any], *answers: Any) -> tuple[dict[str, Any], ScriptedModel]:
    model = ScriptedModel([json_turn(a) for a in answers])
    response = GoalPlanningWorkflow(model, today=TODAY).run(GoalsRequest.model_validate(body))
    model.assert_complete()
    return assert_valid_response(response.to_json()), model


def prompt_of(req: ModelRequest) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(req.turns[0].text)
    return data


def test_case1_new_plan_from_a_first_message() -> None:
    answer = new_plan_answer("Learn Kotlin", milestone("Basics", "Install the JDK", "Kotlin Koans"),
                             summary="Start with the basics.")
    out, model = run(request("I want to learn Kotlin.", step=None), answer)
    assert out["reply"] == f"{NEW_PLAN_REPLY} Start with the basics."
    assert out["action"]["type"] == "save_preview"
    assert out["action"]["payload"]["iteration"] == 1
    assert out["action"]["payload"]["goalPreview"] == {
        "goal": {"title": "Learn Kotlin", "description": "All about Learn Kotlin"},
        "milestones": [{"title": "Basics", "tasks": [{"title": "Install the JDK"}, {"title": "Kotlin Koans"}]}]}
    assert out["state"] == {"step": "plan_generated", "iteration": 1, "sessionActive": True}
    sent = model.requests[0]
    assert "milestoneChanges" not in sent.response_schema["properties"]  # type: ignore[index]
    assert prompt_of(sent)["request"] == "I want to learn Kotlin."
    assert prompt_of(sent)["today"] == "2025-11-01"


def test_case2_refinement_edits_the_plan_and_keeps_unrelated_milestones() -> None:
    answer = edit_answer(add(milestone("Mobile Design", "Design the phone layout"), after="M1"),
                         summary="Added a mobile design milestone after the design phase.")
    out, model = run(request("Can you add a milestone for mobile design?", plan=PORTFOLIO_PLAN), answer)
    assert out["reply"] == f"{UPDATED_REPLY} Added a mobile design milestone after the design phase."
    assert out["state"] == {"step": "plan_iteration", "iteration": 2, "sessionActive": True}
    preview = out["action"]["payload"]["goalPreview"]
    assert out["action"]["payload"]["iteration"] == 2
    assert [m["title"] for m in preview["milestones"]] == ["Design Phase", "Mobile Design", "Build Phase", "Launch"]
    # Untouched milestones come back exactly as sent: ids, dates and the backend's own fields.
    original = PORTFOLIO_PLAN["milestones"]
    assert [preview["milestones"][i] for i in (0, 2, 3)] == original
    assert preview["id"] == "gp_456" and preview["goal"] == PORTFOLIO_PLAN["goal"]
    # The model got the current plan (labelled) and the request, and the edit schema.
    sent = prompt_of(model.requests[0])
    assert sent["request"] == "Can you add a milestone for mobile design?"
    assert [(m["ref"], m["title"]) for m in sent["currentPlan"]["milestones"]] == [
        ("M1", "Design Phase"), ("M2", "Build Phase"), ("M3", "Launch")]
    assert "milestoneChanges" in model.requests[0].response_schema["properties"]  # type: ignore[index]


def test_moving_the_design_phase_keeps_unrelated_milestones_and_the_task_ids() -> None:
    plan = copy.deepcopy(PORTFOLIO_PLAN)
    plan["milestones"][0]["tasks"] = [{"id": "t_1", "title": "Sketch layouts", "done": True},
                                      {"id": "t_0", "title": "Pick fonts", "description": "Two at most"}]
    moved = milestone("Design Phase",
                      {"ref": "M1.T1", "title": "Sketch layouts", "start": "2025-11-10T09:00:00Z",
                       "end": "2025-11-10T10:00:00Z"},
                      {"ref": "M1.T2", "title": "Pick fonts", "dueDate": "2025-11-12"},
                      dueDate="2025-11-14")
    out, model = run(request("Can you move the design phase to next week?", plan=plan, iteration=3),
                     edit_answer(replace("M1", moved), summary="Moved the design phase to next week."))
    preview = out["action"]["payload"]["goalPreview"]
    # The edited milestone keeps its id, backend fields, and each task its id, fields and description.
    assert preview["milestones"][0] == {
        "id": "ms_1", "color": "purple", "title": "Design Phase", "dueDate": "2025-11-14",
        "tasks": [{"id": "t_1", "done": True, "title": "Sketch layouts", "start": "2025-11-10T09:00:00Z",
                   "end": "2025-11-10T10:00:00Z"},
                  {"id": "t_0", "title": "Pick fonts", "description": "Two at most", "dueDate": "2025-11-12"}]}
    # Unrelated milestones come back exactly as sent.
    assert preview["milestones"][1:] == PORTFOLIO_PLAN["milestones"][1:]
    assert preview["goal"] == PORTFOLIO_PLAN["goal"] and preview["id"] == "gp_456"
    assert out["state"] == {"step": "plan_iteration", "iteration": 4, "sessionActive": True}
    # The model saw every task labelled, so it can name the one it keeps.
    sent = prompt_of(model.requests[0])["currentPlan"]["milestones"]
    assert [[t["ref"] for t in m["tasks"]] for m in sent] == [["M1.T1", "M1.T2"], ["M2.T1", "M2.T2"], ["M3.T1"]]
    assert sent[0]["tasks"][0] == {"ref": "M1.T1", "id": "t_1", "title": "Sketch layouts", "done": True}


def test_a_task_the_model_gives_without_ref_keeps_its_id_by_title() -> None:
    moved = milestone("Design Phase", "sketch layouts ", "Choose colours", dueDate="2025-11-14")
    out, _ = run(request("Move the design phase to next week", plan=PORTFOLIO_PLAN),
                 edit_answer(replace("M1", moved)))
    tasks = out["action"]["payload"]["goalPreview"]["milestones"][0]["tasks"]
    assert tasks == [{"id": "t_1", "title": "sketch layouts "}, {"title": "Choose colours"}]


def test_remove_drops_only_its_target() -> None:
    out, _ = run(request("Drop the launch", plan=PORTFOLIO_PLAN), edit_answer(remove("M3")))
    assert out["action"]["payload"]["goalPreview"]["milestones"] == PORTFOLIO_PLAN["milestones"][:2]


def test_an_edited_goal_keeps_its_description_unless_the_model_changes_it() -> None:
    plan = copy.deepcopy(PORTFOLIO_PLAN)
    plan["goal"].update(id="g_9", emoji="\U0001f310")
    out, _ = run(request("Call it 'My Portfolio'", plan=plan),
                 edit_answer(goal={"title": "My Portfolio", "description": None, "targetDate": "2026-01-31"}))
    assert out["action"]["payload"]["goalPreview"]["goal"] == {
        "id": "g_9", "emoji": "\U0001f310", "title": "My Portfolio", "description": "A site that shows my work",
        "targetDate": "2026-01-31"}
    out, _ = run(request("Call it 'My Portfolio'", plan=plan), edit_answer(goal={"title": "My Portfolio"}))
    assert out["action"]["payload"]["goalPreview"]["goal"]["description"] == "A site that shows my work"
    out, _ = run(request("Describe it as a design showcase", plan=plan),
                 edit_answer(goal={"title": "Build Portfolio Website", "description": "A design showcase"}))
    assert out["action"]["payload"]["goalPreview"]["goal"]["description"] == "A design showcase"


def test_refinement_can_change_the_goal_and_add_at_the_start() -> None:
    answer = edit_answer(add(milestone("Research", "Look at five portfolios"), after="M0"),
                         goal={"title": "Build a Design Portfolio", "description": "Show design work"})
    out, _ = run(request("Make it a design portfolio and start with research", plan=PORTFOLIO_PLAN), answer)
    preview = out["action"]["payload"]["goalPreview"]
    assert preview["goal"] == {"title": "Build a Design Portfolio", "description": "Show design work"}
    assert [m["title"] for m in preview["milestones"]] == ["Research", "Design Phase", "Build Phase", "Launch"]


def test_case3_approval_finalises_without_calling_the_model() -> None:
    out, model = run(request("Looks good!", plan=PORTFOLIO_PLAN, iteration=2, step="plan_iteration"))
    assert model.requests == []
    assert out["reply"] == "I've created a goal for you: Build Portfolio Website \U0001f3af"
    assert out["action"] == {"type": "finalize_goal", "payload": {
        "goalPreviewId": "gp_456", "goal": PORTFOLIO_PLAN["goal"], "milestones": PORTFOLIO_PLAN["milestones"]}}
    assert out["state"] == {"step": "finalized", "iteration": 2, "sessionActive": False}


def test_a_plan_without_id_finalises_under_a_stable_generated_id() -> None:
    plan = {k: v for k, v in PORTFOLIO_PLAN.items() if k != "id"}
    first, _ = run(request("yes!", plan=plan))
    again, _ = run(request("yes!", plan=plan))
    other, _ = run(request("yes!", plan={**plan, "goal": {"title": "Another goal"}}))
    gp = first["action"]["payload"]["goalPreviewId"]
    assert gp.startswith("gp_") and len(gp) == 19
    assert again["action"]["payload"]["goalPreviewId"] == gp
    assert other["action"]["payload"]["goalPreviewId"] != gp


def test_case4_a_new_goal_after_finalisation_starts_at_iteration_1() -> None:
    answer = new_plan_answer("Learn Flutter", summary="")
    out, model = run(request("Now I want to start learning Flutter.", plan=PORTFOLIO_PLAN, step="finalized",
                             iteration=3, active=False), answer)
    assert out["reply"] == NEW_GOAL_REPLY
    assert out["action"]["payload"]["iteration"] == 1
    assert out["state"] == {"step": "plan_generated", "iteration": 1, "sessionActive": True}
    assert "currentPlan" not in prompt_of(model.requests[0])


def test_approval_after_finalisation_does_not_finalise_twice() -> None:
    out, model = run(request("looks good", plan=PORTFOLIO_PLAN, step="finalized", active=False),
                     new_plan_answer("Something new"))
    assert out["action"]["type"] == "save_preview"
    assert len(model.requests) == 1


def test_approval_without_a_plan_is_a_new_plan_request() -> None:
    out, model = run(request("Yes, go ahead", step=None), new_plan_answer("A goal"))
    assert out["action"]["type"] == "save_preview"
    assert out["state"] == {"step": "plan_generated", "iteration": 1, "sessionActive": True}
    assert "milestoneChanges" not in model.requests[0].response_schema["properties"]  # type: ignore[index]


def test_not_consent_refines() -> None:
    out, _ = run(request("go ahead but move the design phase", plan=PORTFOLIO_PLAN),
                 edit_answer(replace("M1", milestone("Design Phase", "Sketch layouts"))))
    assert out["action"]["type"] == "save_preview"


def test_one_repair_attempt_fixes_an_invalid_answer() -> None:
    good = new_plan_answer("Learn Kotlin")
    out, model = run(request("I want to learn Kotlin.", step=None), "Sure! Here is your plan: ...", good)
    assert out["action"]["type"] == "save_preview"
    repair = model.requests[1]
    assert [t.role for t in repair.turns] == ["user", "model", "user"]
    assert repair.turns[1].text == "Sure! Here is your plan: ..."
    assert "not valid JSON" in repair.turns[2].text


def test_schema_violations_are_named_in_the_repair_prompt() -> None:
    bad = {"summary": "x", "goal": {"title": ""}, "milestones": []}
    _, model = run(request("I want to learn Kotlin.", step=None), bad, new_plan_answer("Learn Kotlin"))
    text = model.requests[1].turns[2].text
    assert "goal.title" in text and "milestones" in text


def test_an_invalid_answer_twice_changes_nothing() -> None:
    body = request("Add a milestone for testing", plan=PORTFOLIO_PLAN, step="plan_iteration", iteration=2)
    before = copy.deepcopy(body)
    out, model = run(body, "{not json", edit_answer(replace("M9", milestone("Nope", "x"))))
    assert len(model.requests) == 2
    assert out["reply"] == UPDATE_FAILED_REPLY
    assert out["action"] == {"type": "none", "payload": {}}
    assert out["state"] == {"step": "plan_iteration", "iteration": 2, "sessionActive": True}
    assert body == before


def test_a_new_plan_that_stays_invalid_keeps_a_new_session_at_iteration_0() -> None:
    out, _ = run(request("I want to learn Kotlin.", step=None), "[]", "[]")
    assert out["reply"] == CREATE_FAILED_REPLY
    assert out["action"]["type"] == "none"
    assert out["state"] == {"step": "plan_generated", "iteration": 0, "sessionActive": True}


def test_an_unknown_ref_is_repaired() -> None:
    _, model = run(request("Remove the launch", plan=PORTFOLIO_PLAN), edit_answer(remove("M7")),
                   edit_answer(remove("M3")))
    assert "ref='M7' is not one of M1, M2, M3" in model.requests[1].turns[2].text


def test_no_task_is_scheduled_on_top_of_a_calendar_event() -> None:
    context = {"existingGoals": [], "calendarEvents": [MEETING]}
    clash = milestone("Basics", {"title": "Koans", "start": "2025-11-03T14:30:00Z", "end": "2025-11-03T15:30:00Z"})
    fine = milestone("Basics", {"title": "Koans", "start": "2025-11-03T15:00:00Z", "end": "2025-11-03T16:00:00Z"})
    out, model = run(request("I want to learn Kotlin.", step=None, context=context),
                     new_plan_answer("Learn Kotlin", clash), new_plan_answer("Learn Kotlin", fine))
    assert "overlaps the calendar event 'Work Meeting'" in model.requests[1].turns[2].text
    assert prompt_of(model.requests[0])["calendarEvents"] == [MEETING]
    task = out["action"]["payload"]["goalPreview"]["milestones"][0]["tasks"][0]
    assert task["start"] == "2025-11-03T15:00:00Z"


def test_a_plan_that_keeps_clashing_with_the_calendar_is_not_saved() -> None:
    context = {"existingGoals": [], "calendarEvents": [MEETING]}
    clash = milestone("Basics", {"title": "Koans", "start": "2025-11-03T13:30:00Z", "end": "2025-11-03T14:30:00Z"})
    out, _ = run(request("Add a practice milestone", plan=PORTFOLIO_PLAN, context=context),
                 edit_answer(add(clash)), edit_answer(add(clash)))
    assert out["action"]["type"] == "none"


def test_existing_events_in_untouched_milestones_do_not_block_an_edit() -> None:
    context = {"existingGoals": [], "calendarEvents": [MEETING]}
    plan = copy.deepcopy(PORTFOLIO_PLAN)
    plan["milestones"][2]["tasks"][0].update(start="2025-11-03T14:00:00Z", end="2025-11-03T14:30:00Z")
    out, _ = run(request("Add a testing milestone", plan=plan, context=context),
                 edit_answer(add(milestone("Testing", "Check links"))))
    assert out["action"]["type"] == "save_preview"


def test_a_duplicate_of_an_existing_goal_is_pointed_out() -> None:
    context = {"existingGoals": [{"id": "g_01", "title": "Learn Kotlin"}], "calendarEvents": []}
    out, model = run(request("I want to learn Kotlin for Android", step=None, context=context),
                     new_plan_answer("Learn Kotlin for Android", summary="Here we go."))
    assert "you already have a goal \u201cLearn Kotlin\u201d" in out["reply"]
    assert prompt_of(model.requests[0])["existingGoals"] == [{"id": "g_01", "title": "Learn Kotlin"}]


def test_the_model_can_flag_a_duplicate_the_words_do_not_show() -> None:
    context = {"existingGoals": [{"id": "g_07", "title": "Get fit"}], "calendarEvents": []}
    out, _ = run(request("I want to run a marathon", step=None, context=context),
                 new_plan_answer("Run a marathon", duplicate_of="g_07"))
    assert "\u201cGet fit\u201d" in out["reply"]
    unrelated, _ = run(request("I want to learn Flutter", step=None, context=context),
                       new_plan_answer("Learn Flutter", duplicate_of="g_unknown"))
    assert "already have" not in unrelated["reply"]


def test_model_failures_are_domain_errors_answering_502_or_503() -> None:
    body = GoalsRequest.model_validate(request("I want to learn Kotlin.", step=None))
    for err, status in ((ModelError("down", status=503, retryable=True), 503), (ModelError("blocked"), 502)):
        with pytest.raises(DomainError) as caught:
            run_goals(body, ScriptedModel([err]), Settings())
        assert http_status(caught.value)[0] == status


@pytest.mark.parametrize("empty", [None, {}])
def test_an_empty_plan_is_no_plan(empty: dict[str, Any] | None) -> None:
    body = request("looks good", step="plan_generated")
    body["state"]["proposed_plan"] = empty
    out, model = run(body, new_plan_answer("Something"))
    assert out["action"]["type"] == "save_preview" and len(model.requests) == 1


def test_the_offline_planner_removes_a_named_milestone() -> None:
    from shared.goals.offline import OfflinePlanner

    plan = GoalPlanningWorkflow(OfflinePlanner(), today=TODAY).run(
        GoalsRequest.model_validate(request("Remove the Build Phase milestone.", plan=PORTFOLIO_PLAN)))
    body = assert_valid_response(plan.to_json())
    titles = [m["title"] for m in body["action"]["payload"]["goalPreview"]["milestones"]]
    assert titles == ["Design Phase", "Launch"]


def _scheduled(start: str, end: str) -> dict[str, Any]:
    return milestone("Basics", {"title": "Koans", "start": start, "end": end})


@pytest.mark.parametrize(("start", "end"), [
    ("2025-11-01T15:00:00Z", "2025-11-01T16:00:00Z"),  # today
    ("2025-10-20T15:00:00Z", "2025-10-20T16:00:00Z"),  # the past
    ("2025-11-01T23:00:00-05:00", "2025-11-01T23:30:00-05:00"),  # 2 Nov in UTC, but written as today
    ("2025-11-01T20:00:00", "2025-11-01T21:00:00"),  # no offset: UTC
])
def test_a_task_scheduled_on_or_before_today_is_repaired(start: str, end: str) -> None:
    out, model = run(request("I want to learn Kotlin.", step=None),
                     new_plan_answer("Learn Kotlin", _scheduled(start, end)),
                     new_plan_answer("Learn Kotlin", _scheduled("2025-11-02T09:00:00Z", "2025-11-02T10:00:00Z")))
    assert "which is not after today (2025-11-01)" in model.requests[1].turns[2].text
    assert out["action"]["payload"]["goalPreview"]["milestones"][0]["tasks"][0]["start"] == "2025-11-02T09:00:00Z"


def test_the_day_of_a_task_is_its_date_as_written() -> None:
    # 1 Nov 19:30 UTC, but 2 Nov in the offset the model wrote: after the "today" it was given.
    tomorrow_there = _scheduled("2025-11-02T00:30:00+05:00", "2025-11-02T01:30:00+05:00")
    out, model = run(request("I want to learn Kotlin.", step=None), new_plan_answer("Learn Kotlin", tomorrow_there))
    assert out["action"]["type"] == "save_preview" and len(model.requests) == 1


def test_a_task_that_keeps_starting_today_is_not_saved() -> None:
    today = _scheduled("2025-11-01T18:00:00Z", "2025-11-01T19:00:00Z")
    out, _ = run(request("Add a practice milestone", plan=PORTFOLIO_PLAN, step="plan_iteration", iteration=2),
                 edit_answer(add(today)), edit_answer(add(today)))
    assert out["action"] == {"type": "none", "payload": {}}
    assert out["state"] == {"step": "plan_iteration", "iteration": 2, "sessionActive": True}


def test_a_past_slot_the_plan_already_had_does_not_block_an_edit_of_its_milestone() -> None:
    plan = copy.deepcopy(PORTFOLIO_PLAN)
    plan["milestones"][0]["tasks"][0].update(start="2025-10-30T09:00:00Z", end="2025-10-30T10:00:00Z")
    kept = {"ref": "M1.T1", "title": "Sketch layouts", "start": "2025-10-30T09:00:00Z", "end": "2025-10-30T10:00:00Z"}
    out, model = run(request("Rename the design phase to Design", plan=plan),
                     edit_answer(replace("M1", milestone("Design", kept))))
    assert out["action"]["type"] == "save_preview" and len(model.requests) == 1
    assert out["action"]["payload"]["goalPreview"]["milestones"][0]["tasks"][0]["id"] == "t_1"


# The spec's sentences, copied from seed 000 (section 7 and 9) character for character: a
# typographic apostrophe (U+2019) in the plan replies, an ASCII one in the finalisation reply.
SPEC_NEW_PLAN = "Here\u2019s a plan based on your message!"
SPEC_NEW_GOAL = "Here\u2019s a plan based on your new message!"
SPEC_UPDATED = "I\u2019ve updated your plan as requested."
SPEC_CREATED = "I've created a goal for you: {title} \U0001f3af"


def assert_opens_with(reply: str, sentence: str) -> None:
    """``sentence`` is the reply's exact first sentence: the whole reply, or followed by a space."""
    assert reply == sentence or reply.startswith(sentence + " "), reply


def test_the_replies_open_with_the_spec_sentences_exactly() -> None:
    assert (NEW_PLAN_REPLY, NEW_GOAL_REPLY, UPDATED_REPLY) == (SPEC_NEW_PLAN, SPEC_NEW_GOAL, SPEC_UPDATED)
    summary = "  Four steps. Start small!  "
    new, _ = run(request("I want to learn Kotlin.", step=None), new_plan_answer("Learn Kotlin", summary=summary))
    assert_opens_with(new["reply"], SPEC_NEW_PLAN)
    assert new["reply"] == f"{SPEC_NEW_PLAN} Four steps. Start small!"
    bare, _ = run(request("I want to learn Kotlin.", step=None), new_plan_answer("Learn Kotlin", summary=""))
    assert bare["reply"] == SPEC_NEW_PLAN
    updated, _ = run(request("Add testing", plan=PORTFOLIO_PLAN), edit_answer(add(milestone("Testing", "x")),
                                                                            summary="Added testing."))
    assert_opens_with(updated["reply"], SPEC_UPDATED)
    again, _ = run(request("Now I want to start learning Flutter.", plan=PORTFOLIO_PLAN, step="finalized",
                           active=False), new_plan_answer("Learn Flutter", summary="Widgets first."))
    assert again["reply"] == f"{SPEC_NEW_GOAL} Widgets first."
    created, _ = run(request("Looks good!", plan=PORTFOLIO_PLAN))
    assert created["reply"] == SPEC_CREATED.format(title="Build Portfolio Website")


MESSAGE_MARK = "msgsecret7c1e"
ANSWER_MARK = "answersecret3b9d"
EVENT_MARK = "eventsecret55f0"


@pytest.mark.parametrize("message", [f"Looks good, but {MESSAGE_MARK} the design phase",
                                     f"Looks good! {MESSAGE_MARK}", "Looks good!"])
def test_no_user_text_or_model_output_is_logged_at_info(caplog: pytest.LogCaptureFixture, message: str) -> None:
    context = {"existingGoals": [], "calendarEvents": [{**MEETING, "title": EVENT_MARK}]}
    clash = milestone(ANSWER_MARK, {"title": ANSWER_MARK, "start": "2025-11-03T14:30:00Z",
                                    "end": "2025-11-03T15:30:00Z"})
    caplog.set_level(logging.DEBUG)
    body = request(message, plan=PORTFOLIO_PLAN, context=context)
    answers = [] if message == "Looks good!" else [edit_answer(add(clash)), edit_answer(add(clash))]
    run(body, *answers)
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert any("routing" in line for line in loud), loud  # the decision is logged, as categories
    for mark in (MESSAGE_MARK, ANSWER_MARK, EVENT_MARK, "looks good"):
        assert not [line for line in loud if mark.casefold() in line.casefold()], loud
    # The details are still there for debugging (so this test would see them if they moved up).
    quiet = " ".join(r.getMessage() for r in caplog.records if r.levelno < logging.INFO)
    assert "looks good" in quiet
    if answers:
        assert ANSWER_MARK in quiet and EVENT_MARK in quiet
