"""Act: the ReAct records of one act (reason, action, observation), as events and triplet documents."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from shared.events.plan import ExecutorActEvent, ExecutorObserveEvent, ExecutorReasonEvent
from shared.loop.context import RunContext
from shared.state.plan_records import PlanTask, ReactStep
from shared.state.records import ActOutcome
from shared.state.sessions_repo import SessionsRepo

TASK_DONE = "task_done"
"""The action of a text answer without a tool call: it ends the task."""


@dataclass
class Act:
    tool: str
    outcome: ActOutcome
    args: dict[str, Any] | None = None
    preview: str = ""
    observation: dict[str, Any] = field(default_factory=dict)

    def action(self) -> dict[str, Any]:
        if self.args is None:
            return {"tool": self.tool}
        return {"tool": self.tool, "args": self.args, "preview": self.preview}

    def to_reflect(self) -> dict[str, Any]:
        """What the reflection is shown of the act."""
        return {"action": self.action(), "outcome": self.outcome, "observation": self.observation}


def preview(ctx: RunContext, name: str, args: dict[str, Any]) -> str:
    """The tool's one-line preview of a call (the tool's name when it has none)."""
    tool = ctx.registry.get(name)
    if tool is None:
        return name
    try:
        return tool.preview(tool.validate(args))
    except Exception:
        return name


def acts_of_last_turn(ctx: RunContext, outcomes: tuple[ActOutcome, ...]) -> list[Act]:
    """The acts of the last model turn, each with its answer (the turn after it) and its outcome
    (the loop's, in call order)."""
    model_turn, answers = ctx.turns[-2], ctx.turns[-1]
    acts: list[Act] = []
    for i, (call, answer) in enumerate(zip(model_turn.function_calls, answers.parts, strict=False)):
        response = answer.function_response.response if answer.function_response else {}
        args = dict(call.args)
        acts.append(Act(tool=call.name, outcome=outcomes[i] if i < len(outcomes) else "error", args=args,
                        preview=preview(ctx, call.name, args), observation=response))
    return acts


def task_done(text: str) -> Act:
    return Act(tool=TASK_DONE, outcome="done", observation={"text": text})


def record(ctx: RunContext, sessions: SessionsRepo, session_id: str, task: PlanTask, reason: str,
           acts: list[Act]) -> None:
    """Count the task's acts and queue their events and ``{reason, action, observation}`` triplets."""
    if reason:
        ctx.emit(ExecutorReasonEvent(planId=session_id, stepId=task.id, text=reason[:4000]))
    for act in acts:
        task.acts += 1
        if act.tool != TASK_DONE:
            ctx.emit(ExecutorActEvent(planId=session_id, stepId=task.id, toolName=act.tool, preview=act.preview))
            if act.outcome == "rejected":
                task.rejected_acts.append((act.preview or act.tool)[:200])
            ctx.emit(ExecutorObserveEvent(planId=session_id, stepId=task.id, toolName=act.tool,
                                          outcome=act.outcome, observation=bounded(act.observation)))
        ctx.write(sessions.react_write(session_id, ReactStep(
            n=task.acts, task_id=task.id, reason=reason, action=act.action(), observation=bounded(act.observation),
            outcome=act.outcome)))


def bounded(data: dict[str, Any], limit: int = 8000) -> dict[str, Any]:
    text = json.dumps(data, ensure_ascii=False, default=str)
    return data if len(text) <= limit else {"truncated": True, "partial": text[:limit]}
