"""What the model answers (structured output) and how an answer becomes a ``GoalPreview``.

Two answer shapes:

- ``NewPlanDraft``: a whole plan, for a new goal.
- ``PlanEdit``: a list of milestone changes against the current plan, whose milestones the model
  sees labelled ``M1``, ``M2``, ... A refinement is *applied* to the current plan here, so every
  milestone the model did not name stays exactly as the backend sent it (ids and unknown fields
  included): the model cannot silently drop or rewrite unrelated milestones.

``apply_edit`` and ``build_new_plan`` raise ``DraftError`` listing every problem; the planner
sends that text back to the model for its one repair attempt.
"""

from __future__ import annotations

import copy
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.goals.contracts import Goal, GoalPreview, Milestone, as_utc


class DraftError(ValueError):
    """The model's answer is well-formed JSON but not an acceptable plan; ``problems`` say why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class _Draft(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TaskDraft(_Draft):
    title: str = Field(min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    dueDate: date | None = None
    start: datetime | None = Field(default=None, description="Scheduled start (ISO 8601 with offset)")
    end: datetime | None = Field(default=None, description="Scheduled end; required when start is set")

    @model_validator(mode="after")
    def _times(self) -> TaskDraft:
        if (self.start is None) != (self.end is None):
            raise ValueError("start and end must be given together")
        if self.start is not None and self.end is not None and as_utc(self.end) <= as_utc(self.start):
            raise ValueError("end must be after start")
        return self


class MilestoneDraft(_Draft):
    title: str = Field(min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    dueDate: date | None = None
    tasks: list[TaskDraft] = Field(default_factory=list, max_length=50)


class GoalDraft(_Draft):
    title: str = Field(min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    targetDate: date | None = None


class NewPlanDraft(_Draft):
    summary: str = Field(max_length=600, description="One or two sentences for the user about the plan")
    duplicateOfGoalId: str | None = Field(
        default=None, description="id of an existing goal this plan duplicates or overlaps, else null")
    goal: GoalDraft
    milestones: list[MilestoneDraft] = Field(min_length=1, max_length=30)


class MilestoneChange(_Draft):
    action: Literal["add", "replace", "remove"]
    ref: str | None = Field(default=None, description="M<n> of the milestone to replace or remove; null for add")
    after: str | None = Field(
        default=None, description="for add: insert after this M<n>; M0 = at the start; null = at the end")
    milestone: MilestoneDraft | None = Field(
        default=None, description="the complete new milestone (add, replace); null for remove")


class PlanEdit(_Draft):
    summary: str = Field(max_length=600, description="One or two sentences for the user about what changed")
    goal: GoalDraft | None = Field(default=None, description="the changed goal; null keeps the goal as it is")
    milestoneChanges: list[MilestoneChange] = Field(default_factory=list, max_length=30)


def response_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with every ``$ref`` inlined (the simplest form for structured output)."""
    schema = model.model_json_schema()
    defs: dict[str, Any] = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            return inline(copy.deepcopy(defs[ref.rsplit("/", 1)[-1]]))
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ANNOTATIONS:
                continue  # pydantic's titles and defaults tell the model nothing
            if key == "properties":
                out[key] = {name: inline(sub) for name, sub in value.items()}
            else:
                out[key] = inline(value)
        return out

    result: dict[str, Any] = inline(schema)
    return result


_ANNOTATIONS = frozenset({"title", "default"})


def milestone_ref(index: int) -> str:
    """The label of the milestone at ``index`` (0-based) as the model sees it."""
    return f"M{index + 1}"


def build_new_plan(draft: NewPlanDraft) -> GoalPreview:
    return GoalPreview(goal=_goal(draft.goal), milestones=[_milestone(m) for m in draft.milestones])


def apply_edit(plan: GoalPreview, edit: PlanEdit) -> tuple[GoalPreview, list[Milestone]]:
    """The plan with ``edit`` applied, and the milestones the edit added or replaced.

    Milestones the edit does not name are carried over as the very same objects.
    """
    problems: list[str] = []
    refs = {milestone_ref(i): i for i in range(len(plan.milestones))}
    slots: list[list[Milestone]] = [[m] for m in plan.milestones]  # slot i: milestone i and what follows it
    head: list[Milestone] = []  # added before M1
    touched: set[str] = set()
    changed: list[Milestone] = []
    for n, change in enumerate(edit.milestoneChanges):
        where = f"milestoneChanges[{n}]"
        if change.action == "add":
            if change.milestone is None:
                problems.append(f"{where}: add needs a milestone")
                continue
            new = _milestone(change.milestone)
            changed.append(new)
            if change.after in (None, ""):
                (slots[-1] if slots else head).append(new)
            elif change.after == "M0":
                head.append(new)
            elif change.after in refs:
                slots[refs[change.after]].append(new)
            else:
                problems.append(f"{where}: after={change.after!r} is not one of {_names(refs)} or M0")
            continue
        if change.ref not in refs:
            problems.append(f"{where}: ref={change.ref!r} is not one of {_names(refs)}")
            continue
        if change.ref in touched:
            problems.append(f"{where}: {change.ref} is changed twice")
            continue
        touched.add(change.ref)
        index = refs[change.ref]
        if change.action == "remove":
            slots[index][0] = _REMOVED
            continue
        if change.milestone is None:
            problems.append(f"{where}: replace needs the complete new milestone")
            continue
        new = _milestone(change.milestone, keep=plan.milestones[index])
        slots[index][0] = new
        changed.append(new)
    if problems:
        raise DraftError(problems)
    milestones = [m for m in head + [m for slot in slots for m in slot] if m is not _REMOVED]
    goal = plan.goal if edit.goal is None else _goal(edit.goal, keep=plan.goal)
    updated = plan.model_copy(update={"goal": goal, "milestones": milestones})
    return updated, changed


_REMOVED = Milestone(title="(removed)")


def _names(refs: dict[str, int]) -> str:
    return ", ".join(refs) or "(no milestones)"


def _goal(draft: GoalDraft, keep: Goal | None = None) -> Goal:
    """A ``Goal`` from the draft; ``keep``'s id and backend fields survive an edit."""
    base = _extras(keep)
    return Goal.model_validate({**base, **draft.model_dump(exclude_none=True)})


def _milestone(draft: MilestoneDraft, keep: Milestone | None = None) -> Milestone:
    base = _extras(keep)
    return Milestone.model_validate({**base, **draft.model_dump(exclude_none=True)})


def _extras(keep: Goal | Milestone | None) -> dict[str, Any]:
    """What an edited object keeps from its previous version: its id and the backend's own fields."""
    if keep is None:
        return {}
    out: dict[str, Any] = dict(keep.model_extra or {})
    if keep.id is not None:
        out["id"] = keep.id
    return out
