"""The structured-output schemas and the application of an edit to a plan."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from shared.goals.contracts import GoalPreview
from shared.goals.drafts import DraftError, NewPlanDraft, PlanEdit, apply_edit, response_schema
from tests.goals.plans import PORTFOLIO_PLAN, add, edit_answer, milestone, new_plan_answer, remove, replace


def _properties(schema: dict[str, Any], *path: str) -> set[str]:
    node = schema
    for step in path:
        node = node["properties"][step] if step != "[]" else node["items"]
        if "anyOf" in node:
            node = next(n for n in node["anyOf"] if n.get("type") != "null")
    return set(node["properties"])


def test_the_schemas_are_self_contained_and_name_every_field() -> None:
    new = response_schema(NewPlanDraft)
    assert "$ref" not in json.dumps(new) and "$defs" not in new
    assert _properties(new) == {"summary", "duplicateOfGoalId", "goal", "milestones"}
    assert _properties(new, "goal") == {"title", "description", "targetDate"}
    assert _properties(new, "milestones", "[]") == {"title", "description", "dueDate", "tasks"}
    assert _properties(new, "milestones", "[]", "tasks", "[]") == {"title", "description", "dueDate", "start", "end"}
    edit = response_schema(PlanEdit)
    assert _properties(edit) == {"summary", "goal", "milestoneChanges"}
    assert _properties(edit, "milestoneChanges", "[]") == {"action", "ref", "after", "milestone"}
    assert _properties(edit, "milestoneChanges", "[]", "milestone") == {"title", "description", "dueDate", "tasks"}
    # An edit's tasks name the current task they continue (so it keeps its id); a new plan's do not.
    assert _properties(edit, "milestoneChanges", "[]", "milestone", "tasks", "[]") == {
        "ref", "title", "description", "dueDate", "start", "end"}


def test_the_schemas_accept_the_answers_the_planner_accepts() -> None:
    task = {"title": "Koans", "start": "2025-11-03T15:00:00Z", "end": "2025-11-03T16:00:00Z", "dueDate": "2025-11-04"}
    answer = new_plan_answer("Learn Kotlin", milestone("Basics", task))
    jsonschema.validate(answer, response_schema(NewPlanDraft), format_checker=jsonschema.FormatChecker())
    NewPlanDraft.model_validate(answer)
    edit = edit_answer(add(milestone("A", "a")), replace("M1", milestone("B")), remove("M2"))
    jsonschema.validate(edit, response_schema(PlanEdit), format_checker=jsonschema.FormatChecker())
    PlanEdit.model_validate(edit)


def test_untouched_milestones_are_the_same_objects() -> None:
    plan = GoalPreview.model_validate(PORTFOLIO_PLAN)
    updated, changed = apply_edit(plan, PlanEdit.model_validate(edit_answer(add(milestone("Extra", "x")))))
    assert all(a is b for a, b in zip(updated.milestones[:3], plan.milestones, strict=True))
    assert [m.title for m in changed] == ["Extra"]
    assert updated.goal is plan.goal


@pytest.mark.parametrize(("changes", "problem"), [
    ([replace("M4", milestone("X"))], "ref='M4' is not one of M1, M2, M3"),
    ([remove("M1"), remove("M1")], "M1 is changed twice"),
    ([add(milestone("X"), after="M9")], "after='M9'"),
    ([{"action": "add", "ref": None, "after": None, "milestone": None}], "add needs a milestone"),
    ([{"action": "replace", "ref": "M2", "milestone": None}], "replace needs the complete new milestone"),
    ([replace("M1", milestone("X", {"ref": "M1.T9", "title": "T"}))], "task ref='M1.T9' is not a task"),
    ([add(milestone("X", {"ref": "M2.T1", "title": "T"}))], "belongs to M2, which this edit keeps unchanged"),
    ([replace("M2", milestone("X", {"ref": "M2.T1", "title": "A"}, {"ref": "M2.T1", "title": "B"}))],
     "task ref='M2.T1' is used twice"),
])
def test_invalid_edits_are_described(changes: list[dict[str, Any]], problem: str) -> None:
    plan = GoalPreview.model_validate(PORTFOLIO_PLAN)
    with pytest.raises(DraftError) as caught:
        apply_edit(plan, PlanEdit.model_validate(edit_answer(*changes)))
    assert any(problem in p for p in caught.value.problems), caught.value.problems


def test_a_task_needs_both_times_in_order() -> None:
    bad = new_plan_answer("G", milestone("M", {"title": "T", "start": "2025-11-03T15:00:00Z"}))
    with pytest.raises(ValueError, match="start and end must be given together"):
        NewPlanDraft.model_validate(bad)
    backwards = new_plan_answer("G", milestone("M", {"title": "T", "start": "2025-11-03T15:00:00Z",
                                                     "end": "2025-11-03T14:00:00Z"}))
    with pytest.raises(ValueError, match="end must be after start"):
        NewPlanDraft.model_validate(backwards)


def test_tasks_of_a_removed_milestone_can_move_and_keep_their_ids() -> None:
    plan = GoalPreview.model_validate(PORTFOLIO_PLAN)
    split = edit_answer(
        replace("M2", milestone("Build Phase", {"ref": "M2.T1", "title": "Set up the static site"})),
        add(milestone("Content", {"ref": "M2.T2", "title": "Write pages"}, {"ref": "M3.T1", "title": "Buy a domain"},
                      "Proofread"), after="M2"),
        remove("M3"))
    updated, changed = apply_edit(plan, PlanEdit.model_validate(split))
    assert [m.title for m in updated.milestones] == ["Design Phase", "Build Phase", "Content"]
    assert [[t.id for t in m.tasks] for m in updated.milestones] == [["t_1"], ["t_2"], ["t_3", "t_4", None]]
    assert updated.milestones[1].id == "ms_2" and updated.milestones[2].id is None
    assert [m.title for m in changed] == ["Build Phase", "Content"]


def test_a_title_match_never_takes_a_task_another_task_names() -> None:
    plan = GoalPreview.model_validate(PORTFOLIO_PLAN)
    edit = edit_answer(replace("M2", milestone("Build Phase", "Write pages", {"ref": "M2.T2", "title": "Write copy"})))
    updated, _ = apply_edit(plan, PlanEdit.model_validate(edit))
    assert [(t.id, t.title) for t in updated.milestones[1].tasks] == [(None, "Write pages"), ("t_3", "Write copy")]
