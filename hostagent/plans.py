"""The planning data (seed 002 §4, §6): planned actions, navigation plans, outcomes. The planner
interface is in ``hostagent.planner`` (it needs memory and perception, which need these)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hostagent.errors import HostAgentError

ActionType = Literal["tool.call", "agent.message", "snapshot.get", "session.end"]


class PlannedAction(BaseModel):
    """One protocol action. ``payload``: ``{name, params}`` for ``tool.call``, ``{text, kind}`` for
    ``agent.message``, ``{reason}`` for ``session.end``, ``{}`` for ``snapshot.get``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ActionType
    reason: str
    payload: dict[str, Any] = Field(default_factory=dict)
    expectedStage: str | None = None
    """The stage a ``tool.call`` should lead to (None: not predicted, any stage is accepted)."""

    @property
    def tool(self) -> str | None:
        name = self.payload.get("name")
        return name if self.type == "tool.call" and isinstance(name, str) else None

    @property
    def params(self) -> dict[str, Any]:
        params = self.payload.get("params")
        return params if isinstance(params, dict) else {}


class NavigationPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    planId: str
    planner: str
    goal: str
    currentStage: str | None
    remainingSteps: list[str]
    nextAction: PlannedAction
    confidence: float = Field(ge=0.0, le=1.0)


class ActionOutcome(BaseModel):
    """What executing an action gave: ``replan`` says the plan must be rebuilt before acting again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    code: str | None = None
    replan: bool = False
    message: str | None = None

    @property
    def label(self) -> str:
        return "success" if self.ok else ("replan-required" if self.replan else "failed")


class PlannerError(HostAgentError):
    """The planner could not produce a usable plan (e.g. the model's answer stayed invalid)."""

    code = "PLANNER_FAILED"

