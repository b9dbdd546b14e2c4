"""Checks before every action (seed 002 §6, Phase 2): nothing leaves the agent that the host did
not offer, that lacks a concrete reason, or that breaks single flight or the action budget; and no
question is asked twice in a row (issue 32: never re-ask without new information)."""

from __future__ import annotations

from dataclasses import dataclass

from hostagent.memory import AgentMemory
from hostagent.perception import PerceivedContext
from hostagent.plans import PlannedAction
from hostagent.schemas import params_problems

# Reasons that explain nothing: a tool.call needs a concrete one.
_VACUOUS = frozenset({"", "next", "next step", "continue", "proceed", "because", "n/a", "none", "todo", "action"})
MIN_REASON_CHARS = 8


@dataclass(frozen=True)
class SafetyPolicy:
    max_actions: int = 60
    max_repeats: int = 2
    """The same call that already succeeded this many times in a row on this stage is a loop."""

    def check(self, action: PlannedAction, context: PerceivedContext, memory: AgentMemory,
              *, in_flight: bool) -> list[str]:
        """Why ``action`` must not be sent (empty: it may)."""
        problems: list[str] = []
        reason = action.reason.strip()
        if in_flight:
            problems.append("another request is still waiting for its reply (single flight)")
        if action.type == "tool.call":
            if reason.lower().strip(".! ") in _VACUOUS or len(reason) < MIN_REASON_CHARS:
                problems.append(f"tool.call needs a concrete reason, got {action.reason!r}")
            if memory.actions_sent >= self.max_actions:
                problems.append(f"action budget of {self.max_actions} tool calls is used up")
            name = action.tool
            tool = context.tool(name) if name else None
            if tool is None:
                offered = ", ".join(t.name for t in context.toolSchema) or "none"
                problems.append(f"tool {name!r} is not in the current toolSchema (stage {context.stage}: {offered})")
            else:
                problems += [f"params {p}" for p in params_problems(tool, action.params)]
            tail = memory.episodic.tail(self.max_repeats)
            if len(tail) == self.max_repeats and all(
                    e.outcome == "success" and e.tool == name and e.params == action.params
                    and e.stage == context.stage for e in tail):
                problems.append(f"{name} with these params already succeeded {self.max_repeats} times in a row "
                                "here: repeating it is a loop")
        elif action.type == "agent.message":
            text = action.payload.get("text")
            if not isinstance(text, str) or not text.strip():
                problems.append("agent.message needs a non-empty text")
            if action.payload.get("kind") not in (None, "info", "question", "blocked"):
                problems.append(f"agent.message kind {action.payload.get('kind')!r} is not info, question or blocked")
            asked = memory.working.questions
            if action.payload.get("kind") == "question" and asked and asked[-1] == text:
                problems.append("the same question as the last one: ask about what the answer lacked instead")
        elif action.type == "session.end" and not reason:
            problems.append("session.end needs a reason")
        return problems
