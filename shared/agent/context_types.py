"""Context types (seed 003 §4.1): what the user is doing, and what that means for the planner loop.

The request names it (``contextType``, default ``general``); its guidance is injected into the
system instruction; its profile picks the model and, with its operationType, labels every model
call of the run in the usage ledger. The registry is data: a deployment may add types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shared.config import Profile

ContextTypeName = Literal["project_create", "project", "task", "project_audit", "general", "global"]


@dataclass(frozen=True)
class ContextType:
    name: str
    intent: str
    behaviours: str
    profile: Profile
    operation_type: str = "planner_stream"

    def guidance(self, entity_id: str | None) -> str:
        scope = f"\nThe entity in scope is {entity_id}." if entity_id else ""
        return (f"[CONTEXT: {self.name}]\nWhat the user is doing: {self.intent}\n"
                f"Required behaviours: {self.behaviours}{scope}\n"
                "Decide by yourself whether to answer, call tools, or create a plan (agent_create_plan) "
                "for multi-step objectives.")


REGISTRY: dict[str, ContextType] = {t.name: t for t in (
    ContextType("project_create", "capture the needs, pick a template, instantiate a project",
                "leave the user with a created project: template discovery, optional template creation, "
                "project creation, then publishing its context document, in that order", "balanced"),
    ContextType("project", "operate inside an existing project",
                "the default scope is the given entity; avoid destructive actions without confirmation", "balanced"),
    ContextType("task", "inspect or update tasks", "prefer task-scoped tools; surface blockers", "speed"),
    ContextType("project_audit", "evaluate the health of an active project",
                "use the audit tools; create a plan for a deeper analysis when useful", "quality"),
    ContextType("general", "research or high-level assistance",
                "rely on the read tools; create a plan only when the request is multi-step", "balanced"),
    ContextType("global", "research or high-level assistance across everything the user has",
                "rely on the read tools; create a plan only when the request is multi-step", "balanced"),
)}


def context_type(name: str) -> ContextType:
    return REGISTRY[name]
