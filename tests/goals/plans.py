"""Builders of model answers and plans for the goals tests."""

from __future__ import annotations

import json
from typing import Any

from shared.models.base import Part, Turn


def milestone(title: str, *tasks: str | dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"title": title, "tasks": [{"title": t} if isinstance(t, str) else t for t in tasks], **fields}


def new_plan_answer(title: str, *milestones: dict[str, Any], summary: str = "A focused plan.",
                    duplicate_of: str | None = None, description: str = "") -> dict[str, Any]:
    return {"summary": summary, "duplicateOfGoalId": duplicate_of,
            "goal": {"title": title, "description": description or f"All about {title}"},
            "milestones": list(milestones) or [milestone("Start", "First task")]}


def edit_answer(*changes: dict[str, Any], summary: str = "Updated.", goal: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    return {"summary": summary, "goal": goal, "milestoneChanges": list(changes)}


def add(ms: dict[str, Any], after: str | None = None) -> dict[str, Any]:
    return {"action": "add", "ref": None, "after": after, "milestone": ms}


def replace(ref: str, ms: dict[str, Any]) -> dict[str, Any]:
    return {"action": "replace", "ref": ref, "after": None, "milestone": ms}


def remove(ref: str) -> dict[str, Any]:
    return {"action": "remove", "ref": ref, "after": None, "milestone": None}


def json_turn(answer: dict[str, Any] | str) -> Turn:
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return Turn(role="model", parts=[Part(text=text)])


PORTFOLIO_PLAN: dict[str, Any] = {
    "id": "gp_456",
    "goal": {"title": "Build Portfolio Website", "description": "A site that shows my work"},
    "milestones": [
        {"id": "ms_1", "title": "Design Phase", "tasks": [{"id": "t_1", "title": "Sketch layouts"}],
         "color": "purple"},
        {"id": "ms_2", "title": "Build Phase", "dueDate": "2025-12-01",
         "tasks": [{"id": "t_2", "title": "Set up the static site"}, {"id": "t_3", "title": "Write pages"}]},
        {"id": "ms_3", "title": "Launch", "tasks": [{"id": "t_4", "title": "Buy a domain"}]},
    ],
}


def request(message: str, *, plan: dict[str, Any] | None = None, step: str | None = "plan_generated",
            iteration: int = 1, active: bool = True, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """A seed 000 section 4 request body; ``plan=None`` and ``step=None`` is a brand-new session."""
    body: dict[str, Any] = {"userId": "u_001", "sessionId": "sess_goal_001", "message": message,
                            "context": context or {"existingGoals": [], "calendarEvents": []}}
    if step is not None or plan is not None:
        state: dict[str, Any] = {"iteration": iteration, "sessionActive": active}
        if step is not None:
            state["step"] = step
        if plan is not None:
            state["proposed_plan"] = plan
        body["state"] = state
    return body
