"""Hosts: what a kind of work makes of the loop's stops.

The loop's step decides (an outcome); the host of the unit acts on it: it commits the stop and
decides what it means (the chat host writes the assistant message, releases the thread and
builds the seed-001 result; a task host completes a task record). Hosts are registered by kind
(``RunRecord.host``) in a :class:`HostRegistry` at the edge, so a new kind of work adds a host
and touches neither the loop nor the durability layer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from shared.config import Settings
from shared.failures import FailureCode
from shared.loop import stops
from shared.loop.context import Budget, RunContext
from shared.loop.outcomes import (
    BudgetSpent,
    HostStep,
    NextStepFailed,
    NextStepFinalOutput,
    NextStepInterruption,
    NextStepYield,
    Settled,
    StopOutcome,
)
from shared.models.base import ToolDeclaration
from shared.tools.registry import Tool

__all__ = ["Budget", "Host", "HostRegistry"]


class Host:
    """Base host: pauses for approvals, fails with the failure's code, yields when told to.
    Subclasses say what a final output means (``finish``) and may add to any stop."""

    kind = "base"
    operation_type = "planner_stream"
    """What the unit's own model calls are for, in the usage ledger."""

    def budget(self, settings: Settings) -> Budget:
        """The budget of one invocation (default: AGENT_RUN_DEADLINE_S and the run's maxSteps)."""
        return Budget(deadline=time.monotonic() + settings.run_deadline_s)

    def budget_spent(self, ctx: RunContext, why: BudgetSpent) -> StopOutcome:
        """What happens when the invocation's budget is spent. Default: the unit fails (the chat
        run's semantics); long work returns ``NextStepYield`` and continues in a next invocation."""
        if why == "steps":
            return NextStepFailed(FailureCode.STEP_LIMIT,
                                  f"the run stopped after {ctx.max_steps} steps (AGENT_MAX_LOOP_STEPS)")
        return NextStepFailed(FailureCode.DEADLINE_EXCEEDED, "the run exceeded its time limit (AGENT_RUN_DEADLINE_S)")

    def resumed(self, ctx: RunContext) -> None:
        """Called first when an invocation takes the unit up again (before its ``status`` event):
        e.g. the chat host persists the events of the plan it waited on (default: nothing)."""

    def before_step(self, ctx: RunContext) -> StopOutcome | None:
        """Checked before every model call (after the budget): a stop the host wants now (the
        user cancelled, a deadline of its own passed), or None to go on."""
        return None

    def after_step(self, ctx: RunContext, outcome: Settled) -> HostStep | None:
        """A step of the host's own after the loop's step answered every call of the model turn
        (``NextStepRunAgain``, in a step or when a resumed turn was closed) or ended with a text
        (``NextStepFinalOutput``), before anything is committed: e.g. a plan's ReAct records and
        its reflection (a model call). The loop takes it like its own step (``steps.host_step``:
        errors become ``INTERNAL`` failures) and handles what it returns like any outcome;
        ``NextStepRunAgain`` commits and goes on. None (default): the loop's outcome stands."""
        return None

    def after_step_max_usd(self, ctx: RunContext) -> float:
        """The most the model calls of :meth:`after_step` may cost (USD), reserved with the step's
        own call by the money budgets' check (``loop/budget_pause.py``); default 0 (none)."""
        return 0.0

    def before_tool(self, ctx: RunContext, tool: str) -> None:
        """Called before a decided call runs (e.g. to tell the client a tool is executing)."""

    def declarations(self, ctx: RunContext) -> list[ToolDeclaration]:
        """The tools the model is offered (default: every tool of the registry and the host's
        virtual tools)."""
        return [*ctx.registry.declarations(), *(v.declaration() for v in self.virtual_tools(ctx).values())]

    def virtual_tools(self, ctx: RunContext) -> dict[str, Tool]:
        """Tools this host answers itself (``loop/virtual.py``; default: none)."""
        return {}

    def confirm_reason(self, ctx: RunContext, tool: str, args: dict[str, Any]) -> str | None:
        """Why a call the policy allows needs the user's confirmation all the same, whatever the
        trust level (e.g. it leaves the entity the unit is scoped to), or None."""
        return None

    def approval_subject(self, ctx: RunContext) -> tuple[str | None, str | None]:
        """What an approval this unit asks for belongs to besides the run: ``(sessionId, taskId)``
        (a plan's act), shown by the approvals inbox. None for a chat run."""
        return None, None

    def allows(self, ctx: RunContext, tool: str) -> bool:
        """Whether the unit may call ``tool`` (a call to another one fails like an unknown tool)."""
        return True

    def act(self, ctx: RunContext, outcome: StopOutcome) -> None:
        if isinstance(outcome, NextStepFinalOutput):
            self.finish(ctx, outcome.text)
        elif isinstance(outcome, NextStepInterruption):
            self.interrupt(ctx, outcome)
        elif isinstance(outcome, NextStepYield):
            self.yielded(ctx, outcome)
        else:
            self.fail(ctx, outcome.code, outcome.message)

    def finish(self, ctx: RunContext, text: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not say what a final output means")

    def interrupt(self, ctx: RunContext, outcome: NextStepInterruption) -> None:
        stops.pause(ctx, outcome)

    def fail(self, ctx: RunContext, code: FailureCode, message: str) -> None:
        stops.fail(ctx, code, message)

    def yielded(self, ctx: RunContext, outcome: NextStepYield) -> None:
        stops.park(ctx, outcome)


class HostRegistry:
    def __init__(self, *hosts: Host) -> None:
        self._hosts: dict[str, Host] = {}
        self._lazy: dict[str, Callable[[], Host]] = {}
        self._building = threading.Lock()
        self.fallback = Host()
        """Fails units whose host kind is not registered (a deploy that dropped a kind)."""
        for host in hosts:
            self.register(host)

    def register(self, host: Host) -> None:
        self._lazy.pop(host.kind, None)
        self._hosts[host.kind] = host

    def register_lazy(self, kind: str, make: Callable[[], Host]) -> None:
        """A host built (and its modules imported) when a unit of ``kind`` first needs it: a cold
        start whose first request serves another kind never loads it (issue 20)."""
        self._hosts.pop(kind, None)
        self._lazy[kind] = make

    def get(self, kind: str) -> Host | None:
        host = self._hosts.get(kind)
        if host is None and kind in self._lazy:  # the factory stays: a concurrent caller finds it too
            with self._building:  # one build per kind, even when requests arrive together
                host = self._hosts.get(kind)
                if host is None:
                    host = self._hosts[kind] = self._lazy[kind]()
        return host
