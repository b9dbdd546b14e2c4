"""What the model answers (structured output) and how an answer becomes a ``GoalPreview``.

Two answer shapes:

- ``NewPlanDraft``: a whole plan, for a new goal.
- ``PlanEdit``: a list of milestone changes against the current plan, whose milestones the model
  sees labelled ``M1``, ``M2``, ... and their tasks ``M1.T1``, ``M1.T2``, ... A refinement is
  *applied* to the current plan here, so every milestone the model did not name stays exactly as
  the backend sent it (ids and unknown fields included): the model cannot silently drop or rewrite
  unrelated milestones.

What an edited object keeps from its previous version (``_carry``): a replaced milestone keeps its
``id`` and backend fields; a task of an added or replaced milestone that names a task of a replaced
or removed milestone (``ref``, or failing that the same title within the replaced milestone) keeps
that task's ``id`` and backend fields; an edited goal keeps its ``id`` and backend fields. Each of
them also keeps its ``description`` when the model leaves it out (a description can be replaced,
not removed, by an edit). Dates and schedules are what the model answered.

``apply_edit`` and ``build_new_plan`` raise ``DraftError`` listing every problem; the planner
sends that text back to the model for its one repair attempt.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.formats import clean_json_schema
from shared.goals.contracts import Goal, GoalPreview, Milestone, Task, as_utc


class DraftError(ValueError):
    """The model's answer is well-formed JSON but not an acceptable plan; ``problems`` say why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class _Draft(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


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


class EditTaskDraft(TaskDraft):
    ref: str | None = Field(
        default=None,
        description="M<n>.T<k> of the current task this task continues (it keeps its id); null for a new task")


class EditMilestoneDraft(MilestoneDraft):
    tasks: list[EditTaskDraft] = Field(default_factory=list, max_length=50)  # type: ignore[assignment]


class MilestoneChange(_Draft):
    action: Literal["add", "replace", "remove"]
    ref: str | None = Field(default=None, description="M<n> of the milestone to replace or remove; null for add")
    after: str | None = Field(
        default=None, description="for add: insert after this M<n>; M0 = at the start; null = at the end")
    milestone: EditMilestoneDraft | None = Field(
        default=None, description="the complete new milestone (add, replace); null for remove")


class PlanEdit(_Draft):
    summary: str = Field(max_length=600, description="One or two sentences for the user about what changed")
    goal: GoalDraft | None = Field(default=None, description="the changed goal; null keeps the goal as it is")
    milestoneChanges: list[MilestoneChange] = Field(default_factory=list, max_length=30)


def response_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with every ``$ref`` inlined (the simplest form for structured output);
    pydantic's titles and defaults tell the model nothing."""
    return clean_json_schema(model.model_json_schema(), inline_refs=True, drop=frozenset({"title", "default"}))





def milestone_ref(index: int) -> str:
    """The label of the milestone at ``index`` (0-based) as the model sees it."""
    return f"M{index + 1}"


def task_ref(milestone_index: int, task_index: int) -> str:
    """The label of a task (both indexes 0-based) as the model sees it: ``M1.T1``."""
    return f"{milestone_ref(milestone_index)}.T{task_index + 1}"


def build_new_plan(draft: NewPlanDraft) -> GoalPreview:
    return GoalPreview(goal=_goal(draft.goal), milestones=[_milestone(m) for m in draft.milestones])


def apply_edit(plan: GoalPreview, edit: PlanEdit) -> tuple[GoalPreview, list[Milestone]]:
    """The plan with ``edit`` applied, and the milestones the edit added or replaced.

    Milestones the edit does not name are carried over as the very same objects.
    """
    problems: list[str] = []
    refs = {milestone_ref(i): i for i in range(len(plan.milestones))}
    # First pass: which milestones are replaced or removed (their tasks may live on in new ones).
    targets: dict[int, int] = {}  # change number -> index of the milestone it replaces or removes
    for n, change in enumerate(edit.milestoneChanges):
        where = f"milestoneChanges[{n}]"
        if change.action == "add":
            if change.milestone is None:
                problems.append(f"{where}: add needs a milestone")
            elif change.after not in (None, "", "M0") and change.after not in refs:
                problems.append(f"{where}: after={change.after!r} is not one of {_names(refs)} or M0")
            continue
        if change.ref not in refs:
            problems.append(f"{where}: ref={change.ref!r} is not one of {_names(refs)}")
        elif refs[change.ref] in targets.values():
            problems.append(f"{where}: {change.ref} is changed twice")
        elif change.action == "replace" and change.milestone is None:
            problems.append(f"{where}: replace needs the complete new milestone")
        else:
            targets[n] = refs[change.ref]
    if problems:
        raise DraftError(problems)

    pool = _TaskPool(plan, released=set(targets.values()), edit=edit)
    slots: list[list[Milestone]] = [[m] for m in plan.milestones]  # slot i: milestone i and what follows it
    head: list[Milestone] = []  # added before M1
    changed: list[Milestone] = []
    for n, change in enumerate(edit.milestoneChanges):
        where = f"milestoneChanges[{n}]"
        if change.action == "remove":
            slots[targets[n]][0] = _REMOVED
            continue
        assert change.milestone is not None  # checked in the first pass
        if change.action == "add":
            new = _milestone(change.milestone, pool, where)
            if change.after in (None, ""):
                (slots[-1] if slots else head).append(new)
            elif change.after == "M0":
                head.append(new)
            else:
                slots[refs[change.after]].append(new)
        else:
            index = targets[n]
            new = _milestone(change.milestone, pool, where, keep=plan.milestones[index], keep_index=index)
            slots[index][0] = new
        changed.append(new)
    if pool.problems:
        raise DraftError(pool.problems)
    milestones = [m for m in head + [m for slot in slots for m in slot] if m is not _REMOVED]
    goal = plan.goal if edit.goal is None else _goal(edit.goal, keep=plan.goal)
    updated = plan.model_copy(update={"goal": goal, "milestones": milestones})
    return updated, changed


_REMOVED = Milestone(title="(removed)")


class _TaskPool:
    """The current tasks an edit may continue: those of the milestones it replaces or removes.

    A task is claimed by its ref (``M1.T2``) or, within a replaced milestone, by the same title;
    each at most once, so no id appears twice in the edited plan.
    """

    def __init__(self, plan: GoalPreview, *, released: set[int], edit: PlanEdit) -> None:
        self._plan = plan
        self._released = released
        self._claimed: set[str] = set()
        self._named = {t.ref for c in edit.milestoneChanges if c.milestone for t in c.milestone.tasks if t.ref}
        self.problems: list[str] = []

    def claim(self, draft: EditTaskDraft, where: str, keep_index: int | None) -> Task | None:
        if draft.ref:
            found = self._find(draft.ref)
            if found is None:
                self.problems.append(f"{where}: task ref={draft.ref!r} is not a task of the current plan")
                return None
            m_index, task = found
            if m_index not in self._released:
                self.problems.append(
                    f"{where}: task ref={draft.ref!r} belongs to {milestone_ref(m_index)}, which this edit keeps "
                    "unchanged; give a copy ref null")
                return None
            if draft.ref in self._claimed:
                self.problems.append(f"{where}: task ref={draft.ref!r} is used twice")
                return None
            self._claimed.add(draft.ref)
            return task
        if keep_index is None:
            return None
        wanted = draft.title.strip().casefold()
        for t_index, task in enumerate(self._plan.milestones[keep_index].tasks):
            ref = task_ref(keep_index, t_index)
            if ref not in self._claimed and ref not in self._named and task.title.strip().casefold() == wanted:
                self._claimed.add(ref)
                return task
        return None

    def _find(self, ref: str) -> tuple[int, Task] | None:
        for m_index, milestone in enumerate(self._plan.milestones):
            for t_index, task in enumerate(milestone.tasks):
                if task_ref(m_index, t_index) == ref:
                    return m_index, task
        return None


def _names(refs: dict[str, int]) -> str:
    return ", ".join(refs) or "(no milestones)"


def _goal(draft: GoalDraft, keep: Goal | None = None) -> Goal:
    """A ``Goal`` from the draft; ``keep``'s id, backend fields and (if left out) description survive an edit."""
    return Goal.model_validate({**_carry(keep), **draft.model_dump(exclude_none=True)})


def _milestone(draft: MilestoneDraft, pool: _TaskPool | None = None, where: str = "",
               keep: Milestone | None = None, keep_index: int | None = None) -> Milestone:
    tasks: list[dict[str, Any]] = []
    for k, task in enumerate(draft.tasks):
        previous = None
        if pool is not None and isinstance(task, EditTaskDraft):
            previous = pool.claim(task, f"{where}.milestone.tasks[{k}]", keep_index)
        tasks.append({**_carry(previous), **task.model_dump(exclude_none=True, exclude={"ref"})})
    fields = draft.model_dump(exclude_none=True, exclude={"tasks"})
    return Milestone.model_validate({**_carry(keep), **fields, "tasks": tasks})


def _carry(keep: Goal | Milestone | Task | None) -> dict[str, Any]:
    """What an edited object keeps from its previous version: its id, the backend's own fields and
    its description (overridden when the model gives a new one)."""
    if keep is None:
        return {}
    out: dict[str, Any] = dict(keep.model_extra or {})
    if keep.id is not None:
        out["id"] = keep.id
    if keep.description is not None:
        out["description"] = keep.description
    return out
